"""Composition of outgoing mail: headers, MIME structure, serialization.

Everything a player typed (a name, a game title, a subject) may end up in a
header.  No header value written here can carry a line break or any other
control character: they are replaced by spaces, so nothing typed can add a
header or a recipient.  Non-ASCII names and subjects are RFC 2047 encoded by
the standard library on serialization.

One trap of the standard library (seen on Python 3.11): a header value set
on an EmailMessage is *parsed*, and RFC 2047 encoded words in it are
decoded, so a typed ``=?utf-8?q?=0D=0ABcc:_x@y?=`` would turn into a real
line break and a Bcc header when the message is serialized.  Every value is
therefore also defused: the sequence "=?" that opens an encoded word is
written "= ?".  As a last guard, the serialized header block is checked to
hold exactly the headers that were set.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime

from pbem.mail.addresses import checked_address

__all__ = ["MAX_REFERENCES", "build_mail", "clean_header_value", "make_message_id"]

#: References keeps only the most recent message ids of a thread.
MAX_REFERENCES = 20

# Every C0/C1 control, DEL, and the Unicode line and paragraph separators
# (str.splitlines() treats all of them as line breaks).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# A header field name (RFC 5322 ftext): printable ASCII but ":".
_FIELD_NAME = re.compile(r"[!-9;-~]+")
# One message id: "<left@right>" with no white space, brackets or controls.
_MSG_ID = re.compile(r"<[^<>\s\x00-\x1f\x7f]+>")
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

    Every control character (CR, LF, NUL, DEL, C1, U+2028/U+2029) becomes a
    space, and "=?" (which would open an RFC 2047 encoded word that the
    email library decodes) becomes "= ?".
    """
    return _CONTROL.sub(" ", str(value)).replace("=?", "= ?")


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


def _address(addr: str, display_name: str | None = None) -> Address:
    """A checked Address; raises ValueError for anything but one plain addr-spec (the
    rule of pbem.mail.addresses, the same one the reader applies to a sender)."""
    spec = checked_address(addr)
    name = " ".join(clean_header_value(display_name).split()) if display_name else ""
    try:
        return Address(display_name=name, addr_spec=spec)
    except (ValueError, IndexError) as exc:  # the library's own check
        raise ValueError(f"not a plain mail address: {addr!r}") from exc


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
    """Build one mail and return it serialized (policy SMTP: CRLF line ends).

    The body is text/plain, or multipart/alternative (text, then HTML) when
    ``html`` is given; with ``attachments`` ((filename, mime type, data))
    it is wrapped in multipart/mixed.  All text is utf-8, sent as
    quoted-printable so that no body line is too long for SMTP.

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
    msg = EmailMessage(policy=SMTP)
    msg["From"] = _address(from_addr, from_name)
    msg["To"] = [_address(a) for a in to_addrs]
    msg["Subject"] = " ".join(clean_header_value(subject).split())
    when = date or datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    msg["Date"] = format_datetime(when)
    ids = _msg_ids([message_id])
    if not ids:
        raise ValueError(f"not a valid Message-ID: {message_id!r}")
    msg["Message-ID"] = ids[0]
    if in_reply_to:
        parent = _msg_ids([in_reply_to])
        if parent:
            msg["In-Reply-To"] = parent[0]
    refs = _msg_ids(references)[-MAX_REFERENCES:]
    if refs:
        msg["References"] = " ".join(refs)
    if auto_submitted:
        msg["Auto-Submitted"] = clean_header_value(auto_submitted).strip()
    if loop_header is not None:
        name, value = loop_header
        msg[_field_name(name)] = clean_header_value(value).strip()
    for name, value in extra_headers.items():
        msg[_field_name(name)] = clean_header_value(value).strip()

    msg.set_content(text, subtype="plain", charset="utf-8", cte="quoted-printable")
    if html is not None:
        msg.add_alternative(html, subtype="html", charset="utf-8", cte="quoted-printable")
    for filename, mime_type, data in attachments:
        maintype, _, subtype = mime_type.partition("/")
        if not maintype or not subtype:
            raise ValueError(f"not a MIME type: {mime_type!r}")
        msg.add_attachment(
            bytes(data),
            maintype=maintype,
            subtype=subtype,
            filename=" ".join(clean_header_value(filename).split()) or "attachment",
        )
    raw = msg.as_bytes(policy=SMTP)
    _check_header_block(raw, [k.lower() for k in msg])
    return raw


def _check_header_block(raw: bytes, expected: list[str]) -> None:
    """Refuse to return a mail whose top-level header block is not exactly ``expected``."""
    head = raw.split(b"\r\n\r\n", 1)[0]
    names = [
        line.split(b":", 1)[0].decode("ascii", "replace").lower()
        for line in head.split(b"\r\n")
        if line and line[:1] not in (b" ", b"\t")
    ]
    if sorted(names) != sorted(expected) or not head.isascii():
        raise ValueError("the composed mail has unexpected headers; refusing to send it")
