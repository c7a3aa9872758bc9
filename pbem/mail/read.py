"""Turn raw inbound mail bytes into what the referee reads.

:func:`read_message` never raises: whatever bytes it gets (broken MIME, undecodable bytes,
unknown charsets, forged or missing headers, pathological nesting) it returns an
:class:`InboundMessage`, with ``readable=False`` and a ``problem`` when no text could be
extracted.

Its work is bounded for any bytes: the structure is found by :mod:`pbem.mail.mime` and
:mod:`pbem.mail.headers` under fixed caps (fields, parts, depth, and the size, parameters
and encoded words of each header it interprets), and the text read is capped too
(:mod:`pbem.mail.body`, which chooses and decodes the text part).  What is over a
cap, per header:

- From (or a From the address rule of :mod:`pbem.mail.addresses` refuses): no sender;
  the referee ignores the mail and logs why (``sender_problem``), nobody is answered;
- Subject, Date, Message-ID, In-Reply-To, References, Reply-To: dropped;
- Content-Type, Content-Disposition, Content-Transfer-Encoding: of the mail itself, the
  mail is not read (its sender is told why); of a part, that part is not read;
- Auto-Submitted: the mail counts as automatic;
- the mail's header block (more than 1,000 fields or 256 KB): the mail is not read.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

from pbem.mail.body import Body, extract_body, part_param
from pbem.mail.headers import HeaderBlock, MailHeaders, read_mail_headers
from pbem.mail.mime import Part, parse_structure
from pbem.mail.newtext import new_text
from pbem.mail.text import BodyLine
from pbem.text.wording import Said, _, joined

__all__ = ["BodyLine", "InboundMessage", "read_message"]

MAX_TEXT_LINES = 300  # lines of new text the referee reads in one mail (more: refused unread)
MAX_LINE_CHARS = 5000  # a longer line is cut (SAY cuts its text shorter, with a note)


@dataclass(frozen=True)
class InboundMessage:
    message_id: str | None  # with angle brackets, as in the header, stripped of whitespace
    from_addr: str | None  # lowercased bare address from From:, None if absent/unusable
    from_name: str
    reply_to: str | None  # lowercased bare address from Reply-To:, None if absent/unusable
    subject: str  # decoded (RFC 2047), single line
    in_reply_to: str | None  # first message id in In-Reply-To:, with angle brackets
    references: list[str]  # message ids, in order
    date: datetime | None  # always timezone-aware (UTC assumed when the header says -0000)
    automatic: str | None  # None for a human mail, else the reason
    lines: list[BodyLine]  # the NEW text of the mail only, non-blank, original line numbers
    readable: bool  # False when no text could be extracted at all
    # why not readable / what was dropped, in plain words for a reply (said in its reader's
    # language)
    problem: Said | None
    # the mail's own header block as read once (pbem.mail.headers), for whoever reads a
    # field the referee does not (pbem.mail.senderauth: Authentication-Results)
    headers: MailHeaders = field(repr=False)
    # The full extracted body text; ``lines`` number its ``splitlines()`` from 1.
    text: str = field(default="", repr=False)
    # Why from_addr is None (no From, several senders, an address that cannot be used ...).
    sender_problem: str | None = None
    # What the reading left out of the new text, as a confirmation names it
    # (pbem.mail.newtext: "the quoted text below your text", "the signature").
    ignored: tuple[Said, ...] = ()


# ---------------------------------------------------------------------------------------------
# small total helpers
# ---------------------------------------------------------------------------------------------


def _local_part(addr: str) -> str:
    addr = addr.strip().strip("<>").strip()
    return addr.rsplit("@", 1)[0].strip().strip('"').lower()


# ---------------------------------------------------------------------------------------------
# automatic mail
# ---------------------------------------------------------------------------------------------


def _automatic(
    top: Part,
    mail: MailHeaders,
    own_addresses: Collection[str],
    loop_value: str | None,
    envelope_from: str | None,
) -> str | None:
    # our own loop marker: one of our mails came back
    if mail.loop_marks and (loop_value is None or loop_value.strip() in mail.loop_marks):
        return "loop"
    own: set[str] = set()
    try:
        own = {a.strip().lower() for a in own_addresses if isinstance(a, str)}
    except Exception:
        pass
    from_addr = mail.sender.address
    if from_addr is not None and from_addr in own:
        return "own address"
    if envelope_from and envelope_from.strip().strip("<>").strip().lower() in own:
        return "own address"
    ctype = top.content_type()
    if ctype == "multipart/report":
        report_type = (part_param(top, "report-type") or "").strip().lower()
        if report_type == "disposition-notification":
            return "read receipt"
        if report_type in ("delivery-status", ""):
            return "bounce"
        return "report"
    if ctype == "message/delivery-status":
        return "bounce"
    daemons = ("mailer-daemon", "postmaster")
    if mail.sender.local_part in daemons:
        return "mailer-daemon"
    if envelope_from is not None:
        if envelope_from.strip().strip("<>").strip() == "":
            return "null sender"
        if _local_part(envelope_from) in daemons:
            return "mailer-daemon"
    return mail.automatic


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------


def _as_bytes(raw: object) -> bytes:
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, (bytearray, memoryview)):
        return bytes(raw)
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogateescape")
    return b""


def _fallback(problem: Said) -> InboundMessage:
    return InboundMessage(
        message_id=None,
        from_addr=None,
        from_name="",
        reply_to=None,
        subject="",
        in_reply_to=None,
        references=[],
        date=None,
        automatic=None,
        lines=[],
        readable=False,
        problem=problem,
        headers=read_mail_headers(HeaderBlock((), 0, None)),
        sender_problem="the mail could not be read",
    )


def read_message(
    raw: bytes,
    *,
    own_addresses: Collection[str] = (),
    loop_header: str = "X-Pbem-Loop",
    loop_value: str | None = None,
    envelope_from: str | None = None,
) -> InboundMessage:
    """Parse raw RFC 5322 bytes into an :class:`InboundMessage`.  Never raises."""
    try:
        return _read(raw, own_addresses, loop_header, loop_value, envelope_from)
    except Exception:  # pragma: no cover - belt and braces
        return _fallback(_("the mail could not be read"))


def _read(
    raw: bytes,
    own_addresses: Collection[str],
    loop_header: str,
    loop_value: str | None,
    envelope_from: str | None,
) -> InboundMessage:
    data = _as_bytes(raw)
    top = parse_structure(data)
    mail = read_mail_headers(top.head, loop_header)

    unread = top.over_cap
    if unread is not None:
        body = Body("", False, [_("{why}, so the mail was not read", why=unread)])
    else:
        try:
            body = extract_body(top)
        except Exception:
            body = Body("", False, [_("the mail's text could not be extracted")])
    automatic = _automatic(top, mail, own_addresses, loop_value, envelope_from)
    found = new_text(body.text) if body.readable else None
    problem = _("{notes}.", notes=joined(body.notes, "; ")).capitalized() if body.notes \
        else None

    return InboundMessage(
        message_id=mail.message_id,
        from_addr=mail.sender.address,
        from_name=mail.from_name,
        reply_to=mail.reply_to,
        subject=mail.subject,
        in_reply_to=mail.in_reply_to,
        references=list(mail.references),
        date=mail.date,
        automatic=automatic,
        lines=found.lines if found else [],
        readable=body.readable,
        problem=problem,
        headers=mail,
        text=body.text,
        sender_problem=mail.sender.problem,
        ignored=found.ignored if found else (),
    )
