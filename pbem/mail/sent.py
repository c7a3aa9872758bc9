"""The text of a mail we sent, as a reply that quotes it may show it: its text part, then
its HTML part rendered (only when asked for: rendering costs more)."""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message

from pbem.mail.text import html_to_text

__all__ = ["sent_texts"]


# our text part (the first) begins within this many bytes, and a quote is found by its
# first words: the rest of the mail (HTML, report.json) is parsed only for the HTML part
TEXT_HEAD_BYTES = 12_000


def sent_texts(raw: bytes) -> Iterator[str]:
    """The texts of our mail ``raw`` (we wrote it: well formed), text part first. A part
    that cannot be read is left out. Read with the compat32 parser, the text part from
    the mail's head alone: this runs once for every reply, and parsing all of a report
    with the default policy cost a third of handling the reply (bench/scale.py)."""
    full = _parsed(raw) if len(raw) <= TEXT_HEAD_BYTES else None
    plain = _composed_text(raw) if full is None else None
    if plain is None:
        plain = _content(full or _parsed(raw[:TEXT_HEAD_BYTES]), "plain")   # cut short: enough
    if plain is None and full is None:
        full = _parsed(raw)
        plain = _content(full, "plain")
    if plain:
        yield plain
    html = _content(full or _parsed(raw), "html")
    if html:
        yield html_to_text(html)


# the text part as pbem.mail.compose writes it (a mail of ours: found without parsing)
_COMPOSED_TEXT = re.compile(rb'Content-Type: text/plain; charset="utf-8"\r\n'
                            rb"Content-Transfer-Encoding: quoted-printable\r\n\r\n")


def _composed_text(raw: bytes) -> str | None:
    """The start of our text part, read straight from the bytes compose wrote (the MIME
    parser is the fallback); None if the mail is not laid out so."""
    found = _COMPOSED_TEXT.search(raw, 0, TEXT_HEAD_BYTES)
    if found is None:
        return None
    end = raw.find(b"\r\n--", found.end(), found.end() + TEXT_HEAD_BYTES)
    body = raw[found.end():end if end != -1 else found.end() + TEXT_HEAD_BYTES]
    text = binascii.a2b_qp(body).decode("utf-8", "replace")
    return text if text.strip() else None


def _parsed(raw: bytes) -> Message | None:
    try:
        return message_from_bytes(raw)
    except Exception:
        return None


def _content(msg: Message | None, subtype: str) -> str | None:
    """The decoded text of msg's text/<subtype> part; None if it has none or it is empty."""
    part = _body_part(msg, subtype) if msg is not None else None
    if part is None:
        return None
    try:
        payload = part.get_payload(decode=True)
        content = (payload.decode(part.get_content_charset() or "utf-8", "replace")
                   if isinstance(payload, bytes) else None)
    except (LookupError, ValueError):
        return None
    return content if content and content.strip() else None


def _body_part(msg: Message, subtype: str) -> Message | None:
    """The first text/<subtype> part that is not an attachment (our mails have one)."""
    for part in msg.walk():
        if part.get_content_type() != f"text/{subtype}":
            continue
        if "attachment" in str(part.get("Content-Disposition", "")).lower():
            continue
        return part
    return None
