"""The text of a mail's body: which MIME part is read, how it is decoded, and what is said
of the parts left out (pbem.mail.read builds the inbound mail around it).

The text read is capped (:data:`MAX_TEXT_BYTES`, :data:`MAX_HTML_BYTES`,
:data:`MAX_BODY_LINES`); the structure is found by :mod:`pbem.mail.mime` under its own caps.
A part over a cap, one that cannot be decoded, a broken structure: each case is a few lines
here, and ends in a note for the reply, never in an exception.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from email.utils import collapse_rfc2231_value

from pbem.mail.headers import as_text, one_line
from pbem.mail.mime import MAX_PARTS, Part
from pbem.mail.text import html_to_text, unflow
from pbem.text.wording import Message, Said, _, _n, joined

MAX_PROBLEM_NAMES = 5
MAX_TEXT_BYTES = 1_000_000  # a text part longer than this is not read (the mail is refused)
MAX_HTML_BYTES = 200_000  # the same for an HTML part (rendering HTML costs more)
MAX_BODY_LINES = 20_000  # lines of text, quotes included, looked at for new text


def part_param(part: Part, name: str, header: str = "content-type") -> str | None:
    """A parameter of a part's header (``charset``, ``format``, ``report-type`` ...) as
    text, RFC 2231 values joined; None if absent or unreadable."""
    value = part.param(name, header)
    if value is None:
        return None
    try:
        if isinstance(value, tuple):
            value = collapse_rfc2231_value(value)
        return as_text(str(value))
    except Exception:
        return None


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
class Body:
    """The text read from a mail's body, whether any was, and what is to be said of it."""

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


def extract_body(top: Part) -> Body:
    """The text of the mail whose MIME tree is ``top``: its text part chosen (plain before
    HTML, then a named text part), decoded and capped; the parts left out named."""
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
            decoded = _decode_bytes(data, part_param(chosen, "charset"))
            if decoded.note:
                notes.append(decoded.note)
            text = decoded.text
            if is_html:
                text = html_to_text(text, stop_at_header_div=True)
            elif (part_param(chosen, "format") or "").strip().lower() == "flowed":
                text = unflow(text, delsp=(part_param(chosen, "delsp") or "").strip().lower() == "yes")
    elif broken is not None:
        data = _payload_bytes(broken)
        unread = _too_long(data, False)
        if unread is None:
            text = _decode_bytes(data, part_param(broken, "charset")).text
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
    return Body(text, readable, notes)
