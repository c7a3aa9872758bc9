"""Turn raw inbound mail bytes into what the referee reads.

:func:`read_message` never raises: whatever bytes it gets (broken MIME, undecodable bytes,
unknown charsets, forged or missing headers, pathological nesting) it returns an
:class:`InboundMessage`, with ``readable=False`` and a ``problem`` when no text could be
extracted.

Over 400 lines because MIME has that many ways to be broken: each case is a few lines
here, and splitting them apart would scatter one parser.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.header import decode_header, make_header
from email.message import Message
from email.parser import BytesParser
from email.utils import collapse_rfc2231_value, getaddresses, parseaddr, parsedate_to_datetime

from pbem.mail.text import BodyLine, html_to_text, new_text_lines, unflow

__all__ = ["BodyLine", "InboundMessage", "read_message"]

MAX_DEPTH = 12  # MIME nesting levels walked below the top-level message
MAX_PARTS = 500  # MIME parts looked at, in all
MAX_PROBLEM_NAMES = 5
MAX_TEXT_LINES = 300  # lines of new text the referee reads in one mail (more: refused unread)
MAX_LINE_CHARS = 5000  # a longer line is cut (SAY cuts its text shorter, with a note)


@dataclass(frozen=True)
class InboundMessage:
    message_id: str | None  # with angle brackets, as in the header, stripped of whitespace
    from_addr: str | None  # lowercased bare address from From:, None if absent/unparseable
    from_name: str
    reply_to: str | None  # lowercased bare address from Reply-To:, None if absent/unparseable
    subject: str  # decoded (RFC 2047), single line
    in_reply_to: str | None  # first message id in In-Reply-To:, with angle brackets
    references: list[str]  # message ids, in order
    date: datetime | None  # always timezone-aware (UTC assumed when the header says -0000)
    automatic: str | None  # None for a human mail, else the reason
    lines: list[BodyLine]  # the NEW text of the mail only, non-blank, original line numbers
    readable: bool  # False when no text could be extracted at all
    problem: str | None  # why not readable / what was dropped, in plain words for a reply
    # The full extracted body text; ``lines`` number its ``splitlines()`` from 1.
    text: str = field(default="", repr=False)


# ---------------------------------------------------------------------------------------------
# small total helpers
# ---------------------------------------------------------------------------------------------


def _clean(s: str) -> str:
    """Make a string safe to store: turn surrogate-escaped raw bytes back into text."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    try:
        raw = s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace").decode("utf-8", "replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def _one_line(s: str) -> str:
    return " ".join(_clean(s).split())


def _raw_header(msg: Message, name: str) -> str | None:
    lname = name.lower()
    try:
        for k, v in msg.raw_items():
            if isinstance(k, str) and k.lower() == lname:
                return v if isinstance(v, str) else str(v)
    except Exception:
        pass
    return None


def _header(msg: Message, name: str) -> str | None:
    """The decoded value of the first ``name`` header, or None.  Total."""
    try:
        value = msg.get(name)
        if value is None:
            return None
        return _clean(str(value))
    except Exception:
        pass
    raw = _raw_header(msg, name)
    if raw is None:
        return None
    try:
        return _clean(str(make_header(decode_header(raw))))
    except Exception:
        return _clean(raw)


def _header_count(msg: Message, name: str) -> int:
    lname = name.lower()
    try:
        return sum(1 for k, _ in msg.raw_items() if isinstance(k, str) and k.lower() == lname)
    except Exception:
        return 0


def _has_header(msg: Message, name: str) -> bool:
    return _raw_header(msg, name) is not None


def _addresses(msg: Message, name: str) -> list[tuple[str, str]]:
    """(display name, addr_spec) pairs of an address header.  Total."""
    try:
        value = msg.get(name)
        if value is not None:
            addrs = getattr(value, "addresses", None)
            if addrs:
                return [(str(a.display_name or ""), str(a.addr_spec or "")) for a in addrs]
    except Exception:
        pass
    raw = _raw_header(msg, name)
    if raw is None:
        return []
    try:
        pairs = getaddresses([raw])
        if pairs:
            return [(n, a) for n, a in pairs]
    except Exception:
        pass
    try:
        return [parseaddr(raw)]
    except Exception:
        return []


_ADDR_OK = re.compile(r"^[^\s@<>()\[\],;:\"]+@[^\s@<>()\[\],;:\"]+$")


def _bare_address(addr: str) -> str | None:
    addr = _clean(addr).strip().lower()
    if addr.startswith("<") and addr.endswith(">"):
        addr = addr[1:-1].strip()
    # RFC 5321: a path holds at most 254 characters (longer ones would not fit an index)
    return addr if len(addr) <= 254 and _ADDR_OK.match(addr) else None


def _local_part(addr: str) -> str:
    addr = addr.strip().strip("<>").strip()
    return addr.rsplit("@", 1)[0].strip().strip('"').lower()


_MSGID = re.compile(r"<[^<>]+>")


def _msg_ids(value: str | None) -> list[str]:
    if not value:
        return []
    squeezed = "".join(_clean(value).split())
    ids = _MSGID.findall(squeezed)
    if ids:
        return ids
    # brackets forgotten by a broken client: keep bare tokens that look like ids
    return [f"<{tok.strip('<>')}>" for tok in _clean(value).split() if "@" in tok.strip("<>")]


def _message_id(msg: Message) -> str | None:
    raw = _raw_header(msg, "Message-ID")
    if raw is None:
        return None
    squeezed = "".join(_clean(raw).split())
    m = _MSGID.search(squeezed)
    if m:
        return m.group(0)
    return squeezed or None


def _date(msg: Message) -> datetime | None:
    result: datetime | None = None
    try:
        value = msg.get("Date")
        dt = getattr(value, "datetime", None) if value is not None else None
        if isinstance(dt, datetime):
            result = dt
    except Exception:
        pass
    if result is None:
        raw = _raw_header(msg, "Date")
        if raw:
            try:
                result = parsedate_to_datetime(_clean(raw).strip())
            except Exception:
                result = None
    if result is not None and result.tzinfo is None:
        try:
            result = result.replace(tzinfo=UTC)
        except Exception:
            return None
    return result


# ---------------------------------------------------------------------------------------------
# automatic mail
# ---------------------------------------------------------------------------------------------


def _content_type(part: Message) -> str:
    try:
        return str(part.get_content_type()).lower()
    except Exception:
        return "text/plain"


def _param(part: Message, name: str) -> str | None:
    try:
        value = part.get_param(name)
        if value is None:
            return None
        if isinstance(value, tuple):
            value = collapse_rfc2231_value(value)
        return _clean(str(value))
    except Exception:
        return None


def _automatic(
    msg: Message,
    from_addr: str | None,
    raw_from_local: str,
    own_addresses: Collection[str],
    loop_header: str,
    loop_value: str | None,
    envelope_from: str | None,
) -> str | None:
    # our own loop marker: one of our mails came back
    try:
        if loop_header:
            values: list[str] = []
            lname = loop_header.lower()
            for k, v in msg.raw_items():
                if isinstance(k, str) and k.lower() == lname:
                    values.append(" ".join(_clean(str(v)).split()))
            if values and (loop_value is None or loop_value.strip() in values):
                return "loop"
    except Exception:
        pass
    own: set[str] = set()
    try:
        own = {a.strip().lower() for a in own_addresses if isinstance(a, str)}
    except Exception:
        pass
    if from_addr is not None and from_addr in own:
        return "own address"
    if envelope_from and envelope_from.strip().strip("<>").strip().lower() in own:
        return "own address"
    ctype = _content_type(msg)
    if ctype == "multipart/report":
        report_type = (_param(msg, "report-type") or "").strip().lower()
        if report_type == "disposition-notification":
            return "read receipt"
        if report_type in ("delivery-status", ""):
            return "bounce"
        return "report"
    if ctype == "message/delivery-status":
        return "bounce"
    daemons = ("mailer-daemon", "postmaster")
    if raw_from_local in daemons:
        return "mailer-daemon"
    if envelope_from is not None:
        if envelope_from.strip().strip("<>").strip() == "":
            return "null sender"
        if _local_part(envelope_from) in daemons:
            return "mailer-daemon"
    return_path = _raw_header(msg, "Return-Path")
    if return_path is not None and "".join(_clean(return_path).split()) in ("<>", ""):
        return "null sender"
    auto = _header(msg, "Auto-Submitted")
    if auto is not None:
        token = auto.split(";", 1)[0].strip().lower()
        if token != "no":
            return "auto-submitted"
    if _has_header(msg, "X-Autoreply") or _has_header(msg, "X-Autorespond"):
        return "autoreply"
    precedence = _header(msg, "Precedence")
    if precedence is not None:
        token = precedence.strip().lower()
        if token in ("bulk", "list", "junk"):
            return f"precedence: {token}"
    if _has_header(msg, "List-Id") or _has_header(msg, "List-Unsubscribe"):
        return "list"
    return None


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
    note: str | None = None


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
                "some characters could not be decoded and were replaced",
            )
        except Exception:
            pass
    note = None
    if charset and declared is None:
        note = (
            f"the mail declared an unknown character set ({_one_line(charset)[:40]}); "
            "it was read as Latin-1"
        )
    return _Decoded(data.decode("latin-1", "replace"), note)


def _payload_bytes(part: Message) -> bytes:
    try:
        data = part.get_payload(decode=True)
    except Exception:
        data = None
    if isinstance(data, bytes):
        return data
    try:
        payload = part.get_payload()
        if isinstance(payload, str):
            return payload.encode("utf-8", "surrogateescape")
    except Exception:
        pass
    return b""


def _disposition(part: Message) -> str:
    try:
        return (part.get_content_disposition() or "").lower()
    except Exception:
        return ""


def _has_filename(part: Message) -> bool:
    try:
        return bool(part.get_filename())
    except Exception:
        return False


def _describe(part: Message) -> str:
    ctype = _content_type(part)
    try:
        name = part.get_filename()
    except Exception:
        name = None
    return f"{_one_line(name)[:60]} ({ctype})" if name else ctype


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


def _note_ignored(part: Message, ignored: list[str]) -> None:
    """Remember a skipped part for the problem text, unless it is an inline resource of
    an HTML body (a ``Content-ID`` image such as a signature logo)."""
    ctype = _content_type(part)
    if _raw_header(part, "Content-ID") is not None and ctype.startswith("image/"):
        return
    if ctype in _SILENT_TYPES:
        return
    ignored.append(_describe(part))


def _children(part: Message) -> list[Message]:
    try:
        if not part.is_multipart():
            return []
        payload = part.get_payload()
    except Exception:
        return []
    if isinstance(payload, list):
        return [p for p in payload if isinstance(p, Message)]
    return []


@dataclass
class _Body:
    text: str
    readable: bool
    notes: list[str]


def _extract_body(msg: Message) -> _Body:
    notes: list[str] = []
    plain: Message | None = None
    plain_empty: Message | None = None
    html: Message | None = None
    named_texts: list[Message] = []  # inline text/plain parts with a file name
    ignored: list[str] = []
    broken: Message | None = None
    too_deep = False
    encrypted = False
    seen = 0
    # pre-order walk without recursion, depth-capped
    stack: list[tuple[Message, int]] = [(msg, 0)]
    while stack:
        part, depth = stack.pop()
        seen += 1
        if seen > MAX_PARTS:
            notes.append(f"the mail had more than {MAX_PARTS} parts; the rest were ignored")
            break
        ctype = _content_type(part)
        maintype = ctype.split("/", 1)[0]
        if ctype in _ENCRYPTED_TYPES:
            encrypted = True
        if maintype == "multipart":
            kids = _children(part)
            if not kids:
                if broken is None:
                    broken = part
                continue
            if depth >= MAX_DEPTH:
                too_deep = True
                continue
            stack.extend((k, depth + 1) for k in reversed(kids))
            continue
        if part is not msg and _disposition(part) == "attachment":
            _note_ignored(part, ignored)
            continue
        named = part is not msg and _has_filename(part)
        if ctype == "text/plain":
            nonempty = bool(_payload_bytes(part).strip())
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
            if _payload_bytes(candidate).strip():
                chosen = candidate
                break
    chosen = chosen or plain_empty
    for candidate in named_texts:
        if candidate is not chosen:
            _note_ignored(candidate, ignored)

    if too_deep:
        notes.append("parts nested too deeply were ignored")

    text = ""
    if chosen is not None:
        data = _payload_bytes(chosen)
        decoded = _decode_bytes(data, _param(chosen, "charset"))
        if decoded.note:
            notes.append(decoded.note)
        text = decoded.text
        if _content_type(chosen) == "text/html":
            text = html_to_text(text)
        elif (_param(chosen, "format") or "").strip().lower() == "flowed":
            text = unflow(text, delsp=(_param(chosen, "delsp") or "").strip().lower() == "yes")
    elif broken is not None:
        decoded = _decode_bytes(_payload_bytes(broken), _param(broken, "charset"))
        text = decoded.text
        notes.append("the mail's MIME structure was broken, so it was read as plain text")

    text = _clean(text).lstrip("\ufeff")
    text = "\n".join(text.splitlines())
    readable = bool(text.strip())

    if ignored:
        shown = ", ".join(ignored[:MAX_PROBLEM_NAMES])
        more = len(ignored) - MAX_PROBLEM_NAMES
        if more > 0:
            shown += f" and {more} more"
        word = "attachment was" if len(ignored) == 1 else "attachments were"
        notes.append(f"{len(ignored)} {word} ignored: {shown}")
    if not readable:
        if chosen is None and broken is None:
            if encrypted:
                reason = "the mail is encrypted, and encrypted mail cannot be read here"
            elif ignored:
                reason = "the mail has no text part, only attachments, so there is nothing to read"
            else:
                reason = "the mail has no text part, so there is nothing to read"
        else:
            reason = "the mail's text is empty"
        notes.insert(0, reason)
    return _Body(text, readable, notes)


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------


def _parse(raw: bytes) -> tuple[Message | None, str | None]:
    parser = BytesParser(policy=policy.default)
    try:
        return parser.parsebytes(raw), None
    except Exception:
        pass
    try:
        return parser.parsebytes(raw, headersonly=True), "the mail's structure could not be parsed"
    except Exception:
        return None, "the mail could not be parsed at all"


def _as_bytes(raw: object) -> bytes:
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, (bytearray, memoryview)):
        return bytes(raw)
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogateescape")
    return b""


def _fallback(problem: str) -> InboundMessage:
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
        return _fallback("the mail could not be read")


def _read(
    raw: bytes,
    own_addresses: Collection[str],
    loop_header: str,
    loop_value: str | None,
    envelope_from: str | None,
) -> InboundMessage:
    msg, parse_problem = _parse(_as_bytes(raw))
    if msg is None:
        return _fallback(parse_problem or "the mail could not be read")

    from_pairs = _addresses(msg, "From")
    from_name = ""
    from_addr: str | None = None
    raw_from_local = ""
    if from_pairs:
        name, addr = from_pairs[0]
        from_name = _one_line(name or "")
        from_addr = _bare_address(addr or "")
        raw_from_local = _local_part(_clean(addr or ""))
    if len(from_pairs) > 1 or _header_count(msg, "From") > 1:
        # several senders, or a From the parsers read as several (a forged encoded word):
        # there is no telling whom to answer, so nobody is answered and nothing is done
        from_addr = None
    reply_pairs = _addresses(msg, "Reply-To")
    reply_to = _bare_address(reply_pairs[0][1] or "") if reply_pairs else None

    subject = _one_line(_header(msg, "Subject") or "")
    in_reply = _msg_ids(_raw_header(msg, "In-Reply-To"))
    references = _msg_ids(_raw_header(msg, "References"))

    automatic = _automatic(
        msg, from_addr, raw_from_local, own_addresses, loop_header, loop_value, envelope_from
    )

    if parse_problem is not None:
        body = _Body("", False, [parse_problem])
    else:
        try:
            body = _extract_body(msg)
        except Exception:
            body = _Body("", False, ["the mail's text could not be extracted"])
    lines = new_text_lines(body.text) if body.readable else []
    problem = "; ".join(body.notes) if body.notes else None
    if problem:
        problem = problem[0].upper() + problem[1:] + "."

    return InboundMessage(
        message_id=_message_id(msg),
        from_addr=from_addr,
        from_name=from_name,
        reply_to=reply_to,
        subject=subject,
        in_reply_to=in_reply[0] if in_reply else None,
        references=references,
        date=_date(msg),
        automatic=automatic,
        lines=lines,
        readable=body.readable,
        problem=problem,
        text=body.text,
    )
