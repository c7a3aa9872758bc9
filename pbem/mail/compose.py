"""Composition of outgoing mail: headers, MIME structure, serialization.

Everything a player typed (a name, a game title, a subject) may end up in a
header.  No header value written here can carry a line break or any other
control character: they are replaced by spaces, so nothing typed can add a
header or a recipient.  Non-ASCII names and subjects are RFC 2047 encoded.

The mail is written as bytes directly (pbem.mail.mimeout), not through
``email.message.EmailMessage``, which costs about ten times as much.  What a
reader sees is the same (tests/mail/test_compose_bytes.py parses both back).  Every
value is still defused as it was for the standard library, which decodes RFC
2047 encoded words in a value set on a message (a typed
``=?utf-8?q?=0D=0ABcc:_x@y?=`` could have become a real line break): the
sequence "=?" that opens an encoded word is written "= ?", so no reader decodes
typed text into anything.  As a last guard, the header block is checked to hold
exactly the headers that were set.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.utils import format_datetime

from pbem.mail.addresses import checked_address
from pbem.mail.headers import as_text
from pbem.mail.mimeout import (
    address_field,
    base64_body,
    boundary,
    field,
    filename_param,
    qp_body,
    unstructured,
)

__all__ = ["MAX_REFERENCES", "build_mail", "clean_header_value", "make_message_id"]

#: References keeps only the most recent message ids of a thread.
MAX_REFERENCES = 20

# Every C0/C1 control, DEL, and the Unicode line and paragraph separators
# (str.splitlines() treats all of them as line breaks).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# A header field name (RFC 5322 ftext): printable ASCII but ":".
_FIELD_NAME = re.compile(r"[!-9;-~]+")
# One message id: "<left@right>" of printable ASCII, no white space or brackets (an id
# with other characters cannot stand in a header of ours: it is left out).
_MSG_ID = re.compile(r"<[!-;=?-~]+>")
# What may stand in the left part of a generated message id (dot-atom text
# without "?", so that no "=?" can open an encoded word).
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9!#$%&'*+/=^_`{|}~.-]")
_DOMAIN_UNSAFE = re.compile(r"[^A-Za-z0-9.-]")

# Headers build_mail writes itself; extra_headers may not set them.
_RESERVED = {
    "from",
    "sender",
    "reply-to",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "message-id",
    "in-reply-to",
    "references",
    "auto-submitted",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
    "content-disposition",
    "return-path",
}


def clean_header_value(value: object) -> str:
    """``value`` as a header-safe string.

    Raw bytes become text by the one rule (pbem.mail.headers.as_text), every control
    character (CR, LF, NUL, DEL, C1, U+2028/U+2029) becomes a space, and "=?" (which would open an RFC 2047 encoded word that the
    email library decodes) becomes "= ?".
    """
    return _CONTROL.sub(" ", as_text(str(value))).replace("=?", "= ?")


def make_message_id(domain: str, kind: str, token: str | None = None) -> str:
    """A Message-ID ``<pbem.{kind}.{token}@{domain}>``.

    Without ``token`` a random 128-bit hex token is used.  A stable token
    (for example an outbox row id) gives a resent mail the same id.
    Characters that may not stand in a message id are replaced by "-".
    """
    tok = secrets.token_hex(16) if token is None else token
    left = _ID_UNSAFE.sub("-", f"pbem.{kind}.{tok}")
    right = _DOMAIN_UNSAFE.sub("-", domain.strip()) or "localhost"
    return f"<{left}@{right}>"


def _field_name(name: str) -> str:
    if not _FIELD_NAME.fullmatch(name):
        raise ValueError(f"not a valid header name: {name!r}")
    if name.lower() in _RESERVED:
        raise ValueError(f"header {name!r} is set by build_mail itself")
    return name


def _address(addr: str, display_name: str | None = None) -> tuple[str, str]:
    """(display name, addr-spec); raises ValueError for anything but one plain addr-spec
    (the rule of pbem.mail.addresses, the same one the reader applies to a sender)."""
    spec = checked_address(addr)
    name = " ".join(clean_header_value(display_name).split()) if display_name else ""
    return name, spec


def _msg_ids(ids: Sequence[str]) -> list[str]:
    """The well-formed message ids of ``ids``, deduplicated, first occurrence kept."""
    out: list[str] = []
    for raw in ids:
        mid = clean_header_value(raw).strip()
        if not mid.startswith("<"):
            mid = f"<{mid}>"
        if _MSG_ID.fullmatch(mid) and "=?" not in mid and mid not in out:
            out.append(mid)
    return out


def build_mail(
    *,
    from_addr: str,
    to_addrs: list[str],
    subject: str,
    text: str,
    html: str | None = None,
    attachments: Sequence[tuple[str, str, bytes]] = (),
    message_id: str,
    in_reply_to: str | None = None,
    references: Sequence[str] = (),
    auto_submitted: str | None = "auto-generated",
    loop_header: tuple[str, str] | None = None,
    extra_headers: Mapping[str, str] = {},
    date: datetime | None = None,
    from_name: str | None = None,
) -> bytes:
    """Build one mail and return its bytes (CRLF line ends, ASCII, lines of at most
    78 characters but for a header word longer than that).

    The body is text/plain, or multipart/alternative (text, then HTML) when
    ``html`` is given; with ``attachments`` ((filename, mime type, data))
    it is wrapped in multipart/mixed.  All text is utf-8, sent as
    quoted-printable so that no body line is too long for SMTP; its line
    breaks become CRLF and it ends with one.

    Header safety: control characters (CR, LF, ...) in the subject, the
    sender's name and every header value become spaces.  Addresses must be
    plain ``local@domain``; anything else raises ValueError.  ``In-Reply-To``
    and ``References`` keep only well-formed message ids; ``References`` is
    the given ids, deduplicated in order, capped at the last 20.
    ``extra_headers`` and ``loop_header`` may not set a header that this
    function writes itself (From, To, Subject, ...).
    """
    if not to_addrs:
        raise ValueError("a mail needs at least one recipient")
    ids = _msg_ids([message_id])
    if not ids:
        raise ValueError(f"not a valid Message-ID: {message_id!r}")
    when = date or datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    head = [
        address_field("From", [_address(from_addr, from_name)]),
        address_field("To", [_address(a) for a in to_addrs]),
        unstructured("Subject", " ".join(clean_header_value(subject).split())),
        f"Date: {format_datetime(when)}\r\n",
        f"Message-ID: {ids[0]}\r\n",
    ]
    names = ["from", "to", "subject", "date", "message-id"]
    parent = _msg_ids([in_reply_to]) if in_reply_to else []
    if parent:
        head.append(f"In-Reply-To: {parent[0]}\r\n")
        names.append("in-reply-to")
    refs = _msg_ids(references)[-MAX_REFERENCES:]
    if refs:
        head.append(field("References", refs))
        names.append("references")
    extra = [(_field_name(name), value) for name, value in
             ([loop_header] if loop_header is not None else []) + list(extra_headers.items())]
    if auto_submitted:
        extra.insert(0, ("Auto-Submitted", auto_submitted))
    for name, value in extra:
        head.append(unstructured(name, clean_header_value(value).strip()))
        names.append(name.lower())
    head.append("MIME-Version: 1.0\r\n")
    names += ["mime-version", "content-type"]

    content = _text_part("plain", text)
    if html is not None:
        content = _multipart("alternative", [content, _text_part("html", html)])
    if attachments:
        content = _multipart("mixed", [content, *map(_attachment, attachments)])
    part_head, body = content
    if "Content-Transfer-Encoding" in part_head:
        names.append("content-transfer-encoding")
    raw = "".join(head).encode("ascii") + part_head.encode("ascii") + b"\r\n" + body
    _check_header_block(raw, names)
    return raw


_Part = tuple[str, bytes]   # (header lines, body)
_MIME_TOKEN = re.compile(r"[A-Za-z0-9!#$&^_.+-]+")


def _text_part(subtype: str, text: str) -> _Part:
    return (f'Content-Type: text/{subtype}; charset="utf-8"\r\n'
            "Content-Transfer-Encoding: quoted-printable\r\n", qp_body(text))


def _multipart(subtype: str, parts: list[_Part]) -> _Part:
    mark = boundary()
    delimiter = f"--{mark}\r\n".encode("ascii")
    chunks: list[bytes] = []
    for head, body in parts:
        chunks += [delimiter, head.encode("ascii"), b"\r\n", body, b"\r\n"]
    chunks.append(f"--{mark}--\r\n".encode("ascii"))
    return field("Content-Type", [f"multipart/{subtype};", f'boundary="{mark}"']), b"".join(chunks)


def _attachment(attachment: tuple[str, str, bytes]) -> _Part:
    filename, mime_type, data = attachment
    maintype, _, subtype = mime_type.partition("/")
    if not _MIME_TOKEN.fullmatch(maintype) or not _MIME_TOKEN.fullmatch(subtype):
        raise ValueError(f"not a MIME type: {mime_type!r}")
    name = " ".join(clean_header_value(filename).split()) or "attachment"
    # a text attachment of ours (the rules) is UTF-8: without the charset a client reads
    # it as ASCII or Latin-1, and every star, dash and Czech letter comes out garbled
    charset = '; charset="utf-8"' if maintype == "text" else ""
    head = (f"Content-Type: {maintype}/{subtype}{charset}\r\n"
            "Content-Transfer-Encoding: base64\r\n"
            + field("Content-Disposition", ["attachment;", *filename_param(name)]))
    return head, base64_body(bytes(data))


def _check_header_block(raw: bytes, expected: list[str]) -> None:
    """Refuse to return a mail whose top-level header block is not exactly ``expected``."""
    end = raw.find(b"\r\n\r\n")
    head = raw if end < 0 else raw[:end]    # no copy of the body (split made one)
    names = [
        line.split(b":", 1)[0].decode("ascii", "replace").lower()
        for line in head.split(b"\r\n")
        if line and line[:1] not in (b" ", b"\t")
    ]
    if sorted(names) != sorted(expected) or not head.isascii():
        raise ValueError("the composed mail has unexpected headers; refusing to send it")
