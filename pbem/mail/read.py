"""Turn raw inbound mail bytes into what the referee reads.

:func:`read_message` never raises: whatever bytes it gets (broken MIME, undecodable bytes,
unknown charsets, forged or missing headers, pathological nesting) it returns an
:class:`InboundMessage`, with ``readable=False`` and a ``problem`` when no text could be
extracted.

Its work is bounded for any bytes: the structure is found by :mod:`pbem.mail.mime` and
:mod:`pbem.mail.headers` under fixed caps (fields, parts, depth, and the size, parameters
and encoded words of each header it interprets), and the text read is capped too
(:data:`MAX_TEXT_BYTES`, :data:`MAX_HTML_BYTES`, :data:`MAX_BODY_LINES`).  What is over a
cap, per header:

- From (or a From the address rule of :mod:`pbem.mail.addresses` refuses): no sender;
  the referee ignores the mail and logs why (``sender_problem``), nobody is answered;
- Subject, Date, Message-ID, In-Reply-To, References, Reply-To: dropped;
- Content-Type, Content-Disposition, Content-Transfer-Encoding: of the mail itself, the
  mail is not read (its sender is told why); of a part, that part is not read;
- Auto-Submitted: the mail counts as automatic;
- the mail's header block (more than 1,000 fields or 256 KB): the mail is not read.

Over 400 lines because MIME has that many ways to be broken: each case is a few lines
here, and splitting them apart would scatter one reader.
"""

from __future__ import annotations

import codecs
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import collapse_rfc2231_value

from pbem.mail.headers import HeaderBlock, MailHeaders, as_text, one_line, read_mail_headers
from pbem.mail.mime import MAX_PARTS, Part, parse_structure
from pbem.mail.newtext import new_text
from pbem.mail.text import BodyLine, html_to_text, unflow
from pbem.text.wording import Message, Said, _, _n, joined

__all__ = ["BodyLine", "InboundMessage", "read_message"]

MAX_PROBLEM_NAMES = 5
MAX_TEXT_LINES = 300  # lines of new text the referee reads in one mail (more: refused unread)
MAX_LINE_CHARS = 5000  # a longer line is cut (SAY cuts its text shorter, with a note)
MAX_TEXT_BYTES = 1_000_000  # a text part longer than this is not read (the mail is refused)
MAX_HTML_BYTES = 200_000  # the same for an HTML part (rendering HTML costs more)
MAX_BODY_LINES = 20_000  # lines of text, quotes included, looked at for new text


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


def _param(part: Part, name: str, header: str = "content-type") -> str | None:
    value = part.param(name, header)
    if value is None:
        return None
    try:
        if isinstance(value, tuple):
            value = collapse_rfc2231_value(value)
        return as_text(str(value))
    except Exception:
        return None


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
        report_type = (_param(top, "report-type") or "").strip().lower()
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
# body
# ---------------------------------------------------------------------------------------------


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        info = codecs.lookup(name.strip().strip('"').strip())
    except Exception:
        return None
    if not getattr(info, "_is_text_encoding", True):
        return None
    return info.name


@dataclass
class _Decoded:
    text: str
    note: Message | None = None


def _decode_bytes(data: bytes, charset: str | None) -> _Decoded:
    declared = _codec(charset)
    for name in (declared, "utf-8"):
        if name is None:
            continue
        try:
            return _Decoded(data.decode(name))
        except Exception:
            continue
    if declared is not None and declared not in ("ascii",):
        try:
            return _Decoded(
                data.decode(declared, "replace"),
                _("some characters could not be decoded and were replaced"),
            )
        except Exception:
            pass
    note = None
    if charset and declared is None:
        note = _("the mail declared an unknown character set ({charset}); it was read as "
                 "Latin-1", charset=one_line(charset)[:40])
    return _Decoded(data.decode("latin-1", "replace"), note)


def _payload_bytes(part: Part, decoded: dict[Part, bytes] | None = None) -> bytes:
    """The part's body decoded (its raw bytes if that fails); ``decoded``: the bodies
    decoded already (the body chosen is asked for twice)."""
    if decoded is not None and part in decoded:
        return decoded[part]
    try:
        data = part.payload_bytes()
    except Exception:
        data = part.raw_body()
    if decoded is not None:
        decoded[part] = data
    return data


def _disposition(part: Part) -> str:
    try:
        return (part.content().get_content_disposition() or "").lower()
    except Exception:
        return ""


def _filename(part: Part) -> str | None:
    try:
        name = part.content().get_filename()
    except Exception:
        return None
    return as_text(str(name)) if name else None


def _describe(part: Part) -> Said:
    ctype = part.content_type()
    name = _filename(part)
    return f"{one_line(name)[:60]} ({ctype})" if name else ctype


# Parts not worth mentioning when skipped: signatures and encryption control parts.
_SILENT_TYPES = frozenset(
    {
        "application/pgp-signature",
        "application/pkcs7-signature",
        "application/x-pkcs7-signature",
        "application/pgp-encrypted",
    }
)
_ENCRYPTED_TYPES = frozenset(
    {"multipart/encrypted", "application/pkcs7-mime", "application/x-pkcs7-mime"}
)


def _note_ignored(part: Part, ignored: list[Said]) -> None:
    """Remember a skipped part for the problem text, unless it is an inline resource of
    an HTML body (a ``Content-ID`` image such as a signature logo)."""
    if part.over_cap is not None:
        ignored.append(_("a part whose header could not be read"))
        return
    ctype = part.content_type()
    if part.head.has("Content-ID") and ctype.startswith("image/"):
        return
    if ctype in _SILENT_TYPES:
        return
    ignored.append(_describe(part))


@dataclass
class _Body:
    text: str
    readable: bool
    notes: list[Said]


def _too_long(data: bytes, html: bool) -> Message | None:
    cap = MAX_HTML_BYTES if html else MAX_TEXT_BYTES
    if len(data) <= cap:
        return None
    if html:
        return _("the HTML text of the mail is {size} bytes long; at most {cap} are read",
                 size=format(len(data), ","), cap=format(cap, ","))
    return _("the text of the mail is {size} bytes long; at most {cap} are read",
             size=format(len(data), ","), cap=format(cap, ","))


def _extract_body(top: Part) -> _Body:
    notes: list[Said] = []
    plain: Part | None = None
    plain_empty: Part | None = None
    html: Part | None = None
    named_texts: list[Part] = []  # inline text/plain parts with a file name
    ignored: list[Said] = []
    broken: Part | None = None
    too_deep = False
    encrypted = False
    # the text/plain bodies decoded, each once: no more bytes than the mail's own
    bodies: dict[Part, bytes] = {}
    seen = 0
    # pre-order walk without recursion (the tree is MAX_DEPTH deep at most)
    stack: list[Part] = [top]
    while stack:
        part = stack.pop()
        seen += 1
        if seen > MAX_PARTS:
            notes.append(_("the mail had more than {most} parts; the rest were ignored",
                           most=MAX_PARTS))
            break
        if part is not top and part.over_cap is not None:
            _note_ignored(part, ignored)
            continue
        ctype = part.content_type()
        maintype = ctype.split("/", 1)[0]
        if ctype in _ENCRYPTED_TYPES:
            encrypted = True
        if maintype == "multipart":
            if part.too_deep:
                too_deep = True
                continue
            if not part.children:
                if broken is None:
                    broken = part
                continue
            stack.extend(reversed(part.children))
            continue
        if part is not top and _disposition(part) == "attachment":
            _note_ignored(part, ignored)
            continue
        named = part is not top and _filename(part) is not None
        if ctype == "text/plain":
            nonempty = bool(_payload_bytes(part, bodies).strip())
            if named:
                named_texts.append(part)
            elif plain is None and nonempty:
                plain = part
            elif plain_empty is None and not nonempty:
                plain_empty = part
            continue
        if ctype == "text/html" and not named:
            if html is None:
                html = part
            continue
        if not named and (
            maintype == "text"
            or ctype in ("message/delivery-status", "message/disposition-notification")
        ):
            continue
        _note_ignored(part, ignored)

    chosen = plain or html
    if chosen is None:
        for candidate in named_texts:
            if _payload_bytes(candidate, bodies).strip():
                chosen = candidate
                break
    chosen = chosen or plain_empty
    for candidate in named_texts:
        if candidate is not chosen:
            _note_ignored(candidate, ignored)

    if too_deep:
        notes.append(_("parts nested too deeply were ignored"))

    text = ""
    unread: Message | None = None
    if chosen is not None:
        data = _payload_bytes(chosen, bodies)
        is_html = chosen.content_type() == "text/html"
        unread = _too_long(data, is_html)
        if unread is None:
            decoded = _decode_bytes(data, _param(chosen, "charset"))
            if decoded.note:
                notes.append(decoded.note)
            text = decoded.text
            if is_html:
                text = html_to_text(text, stop_at_header_div=True)
            elif (_param(chosen, "format") or "").strip().lower() == "flowed":
                text = unflow(text, delsp=(_param(chosen, "delsp") or "").strip().lower() == "yes")
    elif broken is not None:
        data = _payload_bytes(broken)
        unread = _too_long(data, False)
        if unread is None:
            text = _decode_bytes(data, _param(broken, "charset")).text
            notes.append(_("the mail's MIME structure was broken, so it was read as plain "
                           "text"))

    text = as_text(text).lstrip("\ufeff")
    lines = text.splitlines()
    if len(lines) > MAX_BODY_LINES:
        unread = _("the text of the mail has {lines} lines; at most {most} are read",
                   lines=format(len(lines), ","), most=format(MAX_BODY_LINES, ","))
    text = "" if unread else "\n".join(lines)
    readable = bool(text.strip())

    if ignored:
        shown: Said = joined(ignored[:MAX_PROBLEM_NAMES], ", ")
        more = len(ignored) - MAX_PROBLEM_NAMES
        if more > 0:
            shown = _("{shown} and {more} more", shown=shown, more=more)
        notes.append(_n("{n} attachment was ignored: {shown}",
                        "{n} attachments were ignored: {shown}", len(ignored), shown=shown))
    if not readable:
        reason: Said
        if unread is not None:
            reason = unread
        elif chosen is None and broken is None:
            if encrypted:
                reason = _("the mail is encrypted, and encrypted mail cannot be read here")
            elif ignored:
                reason = _("the mail has no text part, only attachments, so there is nothing "
                           "to read")
            else:
                reason = _("the mail has no text part, so there is nothing to read")
        else:
            reason = _("the mail's text is empty")
        notes.insert(0, reason)
    return _Body(text, readable, notes)


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
        body = _Body("", False, [_("{why}, so the mail was not read", why=unread)])
    else:
        try:
            body = _extract_body(top)
        except Exception:
            body = _Body("", False, [_("the mail's text could not be extracted")])
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
