"""A mail's bytes, kept apart from its row (schema 0016): inbound_raw and outbound_body.

A stored mail's row (inbound_mail) and a queued mail's (outbound_mail) are written again
at each claim, sent mark and finish; SQLite writes an updated row whole, so with the mail
in it (a report is some 40 KB) every status change wrote the mail again. Its bytes are a
row of their own, keyed by the mail's id, written once with it and deleted with it.

What handles a stored mail reads it with its bytes, in the statement that holds its claim
(pbem.runner.inbox): a ``HeldMail``. The rest read a mail's bytes when they need them:
``outbound_body`` by the mail's id, or joined in their own statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import RowMapping, bindparam, select
from sqlmodel import Session, col

from pbem.store.models import OutboundBody

__all__ = ["HeldMail", "outbound_body"]


@dataclass
class HeldMail:
    """A stored mail being handled: its row's columns, as read when its claim was held,
    and its bytes. No session tracks it: what its handling ends with (status, outcome,
    processed_at) is written by pbem.runner.inbox.finish."""

    id: int
    dedupe_key: str
    imap_key: str | None
    source: str
    envelope_from: str | None
    size: int
    truncated: bool
    received_at: datetime
    status: str
    outcome: str | None
    processed_at: datetime | None
    claimed_by: str | None
    claimed_at: datetime | None
    attempts: int
    lane: int | None
    pruned_at: datetime | None
    raw: bytes

    @classmethod
    def read(cls, found: RowMapping) -> HeldMail:
        """From a row of inbound_mail's columns and inbound_raw's raw (a column added to
        inbound_mail and not here fails here, at its first read)."""
        return cls(**found)


_OUTBOUND_BODY = select(col(OutboundBody.raw)).where(
    col(OutboundBody.mail_id) == bindparam("mail"))


def outbound_body(session: Session, mail_id: int | None) -> bytes:
    """The bytes of the queued mail ``mail_id``, as they are sent."""
    return bytes(session.connection().execute(_OUTBOUND_BODY, {"mail": mail_id}).scalar_one())
