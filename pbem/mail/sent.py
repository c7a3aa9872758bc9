"""The text of a mail we sent, as a reply that quotes it may show it: its text part, then
its HTML part rendered (only when asked for: rendering costs more)."""

from __future__ import annotations

from collections.abc import Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage

from pbem.mail.text import html_to_text

__all__ = ["sent_texts"]


def sent_texts(raw: bytes) -> Iterator[str]:
    """The texts of our mail ``raw`` (we wrote it: well formed), text part first. A part
    that cannot be read is left out."""
    try:
        msg = message_from_bytes(raw, policy=policy.default)
    except Exception:
        return
    if not isinstance(msg, EmailMessage):
        return
    for subtype in ("plain", "html"):
        try:
            part = msg.get_body((subtype,))
            content = part.get_content() if part is not None else None
        except Exception:
            continue
        if isinstance(content, str) and content.strip():
            yield html_to_text(content) if subtype == "html" else content
