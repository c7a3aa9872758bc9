"""Header blocks cut into fields within fixed bounds, before anything interprets them.

The standard library's header parsers are super-linear on some shapes: a From of
20,000 dots, a Content-Type of 8,000 parameters or a From of 10,000 encoded words
cost seconds and gigabytes, and its feed parser costs time and memory per line.
So a header block is cut into fields here, one regular expression per field (the
folded lines of a field are matched in C), under these bounds:

- a header block: at most ``max_fields`` fields and ``max_bytes`` bytes (the
  caller's caps: the mail's own block is larger than a MIME part's); past them
  the block is cut short and says why, and the caller does not read that mail or
  part;
- a field that is interpreted (:data:`FIELD_CAPS`): at most so many characters,
  parameters and encoded words.  A field over its cap is kept by name, with the
  reason and without its value, and each reader decides what that means: no
  sender, no subject, a part not read (see :mod:`pbem.mail.read`).

Fields nobody interprets (Received, DKIM-Signature, X-...) are kept as they came,
within the block's caps.

Bytes are data until proven text: a field's value keeps raw 8-bit bytes as they came
(surrogate-escaped, so that a MIME boundary still matches its bytes), and every value
that goes on to the database, a log line, an outgoing header or a page goes through
the one rule of :func:`as_text` first (:meth:`HeaderBlock.text`), which leaves no
surrogate in it.

A mail's own header block is then read once, by :func:`read_mail_headers`, into one
typed value (:class:`MailHeaders`: its sender, subject, ids, date and the marks of
automatic mail), which the reader (:mod:`pbem.mail.read`) and the rest read: what a
header means is decided here, in one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.header import decode_header, make_header
from email.utils import parsedate_to_datetime

from pbem.mail.addresses import Sender, parse_sender

__all__ = ["FIELD_CAPS", "MAIL_HEADER_BYTES", "MAIL_HEADER_FIELDS", "Cap", "Field",
           "HeaderBlock", "MailHeaders", "as_text", "decode_words", "one_line",
           "read_header_block", "read_mail_header", "read_mail_headers"]

MAIL_HEADER_BYTES = 262_144  # a mail's own header block (a part's is smaller: pbem.mail.mime)
MAIL_HEADER_FIELDS = 1_000


@dataclass(frozen=True)
class Cap:
    """The most of one header field that is interpreted."""

    chars: int
    parameters: int | None = None  # ";"-separated parameters (Content-Type ...)
    encoded_words: int | None = None  # RFC 2047 "=?...?=" words


_CONTENT = Cap(4_000, parameters=40, encoded_words=20)
_ADDRESS = Cap(2_000, encoded_words=50)
_TOKEN = Cap(1_000)

#: The fields the reader interprets, by lowercased name, and their caps.  Sized far
#: above what mail clients write (a From of 2,000 characters, a long RFC 2231 file
#: name in 40 pieces), far below where parsing them costs anything noticeable.
FIELD_CAPS: dict[str, Cap] = {
    "from": _ADDRESS,
    "reply-to": _ADDRESS,
    "subject": Cap(2_000, encoded_words=50),
    "date": Cap(200),
    "message-id": _TOKEN,
    "in-reply-to": Cap(2_000),
    "references": Cap(65_536),
    "content-type": _CONTENT,
    "content-disposition": _CONTENT,
    "content-transfer-encoding": Cap(200),
    "auto-submitted": _TOKEN,
    "precedence": _TOKEN,
    "return-path": _TOKEN,
}


@dataclass(frozen=True)
class Field:
    name: str  # as written
    value: str  # first line without its leading blanks, folded lines as they came; raw
    # bytes beyond ASCII are surrogate-escaped.  "" when over its cap.
    over: str | None = None  # why the field is over its cap (in words for a reply)


@dataclass(frozen=True)
class HeaderBlock:
    fields: tuple[Field, ...]
    body_start: int  # where the body begins, an index into the bytes the block was read from
    cut: str | None  # why the block was cut short (the body then is not to be read)

    def all(self, name: str) -> list[Field]:
        lname = name.lower()
        return [f for f in self.fields if f.name.lower() == lname]

    def first(self, name: str) -> Field | None:
        found = self.all(name)
        return found[0] if found else None

    def value(self, name: str) -> str | None:
        """The first ``name`` field's raw value; None when absent or over its cap."""
        found = self.first(name)
        return found.value if found is not None and found.over is None else None

    def text(self, name: str) -> str | None:
        """The first ``name`` field's value as text (:func:`as_text`); None as ``value``."""
        found = self.value(name)
        return as_text(found) if found is not None else None

    def has(self, name: str) -> bool:
        return self.first(name) is not None


def as_text(value: str) -> str:
    """The one rule for raw header bytes: ``value`` with its surrogate-escaped raw bytes
    read as UTF-8 when they are UTF-8, else as Windows-1252 (what a client that sends raw
    8-bit bytes most likely meant), and any other surrogate replaced (U+FFFD). What it
    returns encodes as UTF-8: it can go to the database, a log or a mail."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:   # a surrogate that is no escaped byte (a decoder made it)
        return value.encode("utf-8", "replace").decode("utf-8", "replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def field_problem(name: str, value: bytes) -> str | None:
    """Why a field is over its cap (:data:`FIELD_CAPS`), or None."""
    cap = FIELD_CAPS.get(name.lower())
    if cap is None:
        return None
    if cap.parameters is not None:
        count = value.count(b";")
        if count > cap.parameters:
            return (f"the {name} header has {count:,} parameters; at most {cap.parameters} "
                    f"are read")
    if cap.encoded_words is not None:
        count = value.count(b"=?")
        if count > cap.encoded_words:
            return (f"the {name} header has {count:,} encoded words; at most "
                    f"{cap.encoded_words} are read")
    if len(value) > cap.chars:
        return f"the {name} header is {len(value):,} characters long; at most {cap.chars:,} are read"
    return None


# One field: a name, a colon, the value with its folded lines (possessive: linear time).
_FIELD = re.compile(rb"([!-9;-~]*):([^\r\n]*+(?:(?:\r\n|\r|\n)[ \t][^\r\n]*+)*+)"
                    rb"(?:\r\n|\r|\n|\Z)")
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def read_header_block(data: bytes, start: int, end: int, *, max_bytes: int,
                      max_fields: int) -> HeaderBlock:
    """The header block of ``data[start:end]`` (a mail or a MIME part), within caps.

    As the standard library reads it: the block ends at an empty line (dropped) or
    at the first line that is neither a field nor a folded line (kept, as the first
    line of the body); a leading folded line, a field without a name and an mbox
    ``From `` line are skipped.
    """
    limit = min(end, start + max_bytes)
    fields: list[Field] = []
    pos, seen = start, 0
    while pos < limit:
        seen += 1
        if seen > max_fields:
            return HeaderBlock(tuple(fields), pos,
                               f"the header has more than {max_fields:,} fields; at most "
                               f"{max_fields:,} are read")
        brk = _LINE_BREAK.match(data, pos, limit)
        if brk is not None:  # the empty line between header and body
            return HeaderBlock(tuple(fields), brk.end(), None)
        first = data[pos:pos + 1]
        matched = None if first in (b" ", b"\t") else _FIELD.match(data, pos, limit)
        if matched is None:
            if first in (b" ", b"\t") or data.startswith(b"From ", pos):
                pos = _next_line(data, pos, limit)
                continue
            return HeaderBlock(tuple(fields), pos, None)  # the body begins without a blank line
        pos = matched.end()
        name = matched.group(1).decode("ascii")
        if not name:
            continue
        raw = matched.group(2)
        over = field_problem(name, raw)
        value = "" if over else raw.decode("ascii", "surrogateescape").lstrip(" \t")
        fields.append(Field(name, value, over))
    if limit < end:
        return HeaderBlock(tuple(fields), limit,
                           f"the header is larger than {max_bytes:,} bytes; at most "
                           f"{max_bytes:,} are read")
    return HeaderBlock(tuple(fields), end, None)


def read_mail_header(raw: bytes) -> HeaderBlock:
    """The header block of a whole mail, within MAIL_HEADER_BYTES and MAIL_HEADER_FIELDS."""
    return read_header_block(raw, 0, len(raw), max_bytes=MAIL_HEADER_BYTES,
                             max_fields=MAIL_HEADER_FIELDS)


def _next_line(data: bytes, pos: int, limit: int) -> int:
    brk = _LINE_BREAK.search(data, pos, limit)
    return brk.end() if brk is not None else limit


def decode_words(value: str) -> str:
    """``value`` with its RFC 2047 encoded words decoded (as far as they decode).

    Callers pass values within their field's cap, so the work is bounded.
    """
    try:
        return str(make_header(decode_header(value)))
    except Exception:  # noqa: BLE001 - total: a value that does not decode stays as it came
        return value


def one_line(value: str) -> str:
    """``value`` as text (:func:`as_text`) on one line, its runs of blanks one space."""
    return " ".join(as_text(value).split())


# ---------------------------------------------------------------------------------------------
# a mail's own headers, read once
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MailHeaders:
    """What a mail's own header block says, read once (:func:`read_mail_headers`).

    Every text is text by the one rule (:func:`as_text`); a field over its cap counts
    as absent (Auto-Submitted: as automatic), as the module says.
    """

    block: HeaderBlock
    message_id: str | None  # with angle brackets, stripped of whitespace
    sender: Sender  # the one sender From names (pbem.mail.addresses), or why none
    from_name: str  # the sender's display name, decoded (RFC 2047), on one line
    reply_to: str | None  # lowercased bare address from Reply-To:, None if absent/unusable
    subject: str  # decoded (RFC 2047), on one line
    in_reply_to: str | None  # the first message id in In-Reply-To:, with angle brackets
    references: tuple[str, ...]  # message ids, in order
    date: datetime | None  # always timezone-aware (UTC assumed when the header says -0000)
    loop_marks: tuple[str, ...]  # the values of the loop header asked for, on one line
    # why the headers alone (Return-Path, Auto-Submitted, Precedence, List-*) call the
    # mail automatic, else None
    automatic: str | None


def read_mail_headers(block: HeaderBlock, loop_header: str = "") -> MailHeaders:
    """The mail's own header ``block`` read into :class:`MailHeaders`; ``loop_header`` is
    the header that marks the server's own mail (its values are kept as ``loop_marks``)."""
    in_reply = _msg_ids(block.value("In-Reply-To"))
    message_id = _message_id(block.value("Message-ID"))
    subject = one_line(_decoded(block.value("Subject") or ""))
    references = tuple(_msg_ids(block.value("References")))
    date = _date(block.value("Date"))
    loop_marks = tuple(one_line(f.value) for f in block.all(loop_header)) if loop_header else ()
    automatic = _marked_automatic(block)
    reply_to = block.value("Reply-To")
    # the addresses last, each by the rule of pbem.mail.addresses
    sender = _sender(block.all("From"))
    return MailHeaders(
        block=block, message_id=message_id, sender=sender,
        from_name=one_line(_decoded(sender.display_name)),
        reply_to=parse_sender(reply_to).address if reply_to is not None else None,
        subject=subject, in_reply_to=in_reply[0] if in_reply else None,
        references=references, date=date, loop_marks=loop_marks, automatic=automatic)


def _sender(froms: list[Field]) -> Sender:
    """The one sender the From fields name, by the rule of pbem.mail.addresses."""
    if not froms:
        return parse_sender(None)
    if froms[0].over is not None:
        return Sender(None, "", "", froms[0].over)
    found = parse_sender(froms[0].value)
    if len(froms) > 1:
        # several From headers: there is no telling whom to answer, so nobody is answered
        return Sender(None, found.display_name, found.local_part,
                      "the mail has several From headers")
    return found


def _decoded(value: str) -> str:
    """A header value (within its cap) as text, RFC 2047 words decoded."""
    return as_text(decode_words(as_text(value)))


_MSGID = re.compile(r"<[^<>]+>")


def _msg_ids(value: str | None) -> list[str]:
    if not value:
        return []
    squeezed = "".join(as_text(value).split())
    ids = _MSGID.findall(squeezed)
    if ids:
        return ids
    # brackets forgotten by a broken client: keep bare tokens that look like ids
    return [f"<{tok.strip('<>')}>" for tok in as_text(value).split() if "@" in tok.strip("<>")]


def _message_id(value: str | None) -> str | None:
    if value is None:
        return None
    squeezed = "".join(as_text(value).split())
    found = _MSGID.search(squeezed)
    if found:
        return found.group(0)
    return squeezed or None


def _date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        result = parsedate_to_datetime(one_line(value))
    except Exception:  # noqa: BLE001 - total: a date that does not parse is no date
        return None
    if result.tzinfo is None:
        result = result.replace(tzinfo=UTC)
    return result


def _marked_automatic(block: HeaderBlock) -> str | None:
    """Why the header fields alone call the mail automatic (RFC 3834 and common usage)."""
    return_path = block.value("Return-Path")
    if return_path is not None and "".join(as_text(return_path).split()) in ("<>", ""):
        return "null sender"
    auto = block.first("Auto-Submitted")
    if auto is not None:
        # a value too long to read is no "no"
        token = one_line(auto.value).split(";", 1)[0].strip().lower()
        if auto.over is not None or token != "no":
            return "auto-submitted"
    if block.has("X-Autoreply") or block.has("X-Autorespond"):
        return "autoreply"
    precedence = block.value("Precedence")
    if precedence is not None:
        token = one_line(precedence).strip().lower()
        if token in ("bulk", "list", "junk"):
            return f"precedence: {token}"
    if block.has("List-Id") or block.has("List-Unsubscribe"):
        return "list"
    return None
