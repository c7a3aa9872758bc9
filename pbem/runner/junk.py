"""A disk quota for mail from unknown senders that reaches the listener (pbem.mail.listener).

Strangers may write to pbem (a first JOIN comes from one), but anyone can also send
it megabytes of junk a second, and every mail is kept (pbem.runner.storing). So the listener's
mail from an address pbem does not know is stored with source ``smtp-unknown`` and
counted: over the day's quota more such mail is refused (452, the sender may try
again tomorrow); over the total quota the oldest junk already handled is cut to its
header first (the row stays, for the record and for de-duplication), and only when
that is not enough is the mail refused.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta

from sqlalchemy import Engine, func, update
from sqlmodel import Session, col, select

from pbem.store.models import InboundMail, InboundRaw

__all__ = ["JUNK_SOURCE", "JunkOverQuota", "JunkTally", "admit_junk", "header_of", "junk_bytes",
           "prune_junk"]

JUNK_SOURCE = "smtp-unknown"
_HANDLED = ("done", "failed", "quarantined")
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_HEADER_CAP = 64 * 1024


class JunkOverQuota(Exception):
    """The reply for the sender: no room for more mail from unknown senders."""


def junk_bytes(engine: Engine, since: datetime | None = None) -> int:
    """Bytes kept of mail from unknown senders (received since ``since``, when given)."""
    query = select(func.coalesce(func.sum(func.length(col(InboundRaw.raw))), 0)).where(
        InboundMail.source == JUNK_SOURCE, col(InboundRaw.mail_id) == col(InboundMail.id))
    if since is not None:
        query = query.where(InboundMail.received_at >= since)
    with Session(engine) as session:
        return int(session.exec(query).one())


def header_of(raw: bytes) -> bytes:
    """The header block of a mail (at most 64 KiB of it), the blank line after it."""
    end = _HEADER_END.search(raw, 0, _HEADER_CAP)
    return (raw[:end.start()] if end else raw[:_HEADER_CAP]).rstrip(b"\r\n") + b"\r\n\r\n"


def prune_junk(engine: Engine, keep_bytes: int) -> int:
    """Cut the oldest handled junk to its header until at most keep_bytes are kept;
    returns the bytes freed."""
    freed = 0
    over = junk_bytes(engine) - keep_bytes
    with Session(engine) as session:
        while over > 0:
            rows = session.exec(select(InboundMail.id, InboundRaw.raw).where(
                col(InboundRaw.mail_id) == col(InboundMail.id),
                InboundMail.source == JUNK_SOURCE, col(InboundMail.status).in_(_HANDLED),
                col(InboundMail.truncated).is_(False)).order_by(
                col(InboundMail.received_at), col(InboundMail.id)).limit(20)).all()
            if not rows:
                break
            for row_id, raw in rows:
                header = header_of(raw)
                session.execute(update(InboundRaw).where(col(InboundRaw.mail_id) == row_id)
                                .values(raw=header))
                session.execute(update(InboundMail).where(col(InboundMail.id) == row_id)
                                .values(truncated=True))
                over -= len(raw) - len(header)
                freed += len(raw) - len(header)
                if over <= 0:
                    break
            session.commit()
    return freed


def admit_junk(engine: Engine, size: int, now: datetime, *, per_day: int,
               total: int) -> None:
    """Raises JunkOverQuota unless a mail of ``size`` bytes from an unknown sender fits."""
    if junk_bytes(engine, now - timedelta(days=1)) + size > per_day:
        raise JunkOverQuota("452 4.3.1 Too much mail from unknown senders today, "
                            "try again tomorrow")
    if junk_bytes(engine) + size > total:
        prune_junk(engine, total - size)
        if junk_bytes(engine) + size > total:
            raise JunkOverQuota("452 4.3.1 No room for mail from unknown senders now, "
                                "try again later")


class JunkTally:
    """admit_junk without a sum over the table for every mail: the sums are read from
    the database at most every ``refresh`` and counted up in between (mail stored by
    another process meanwhile is missed until then, so a quota may be overrun by that
    much). One for each listener; its stores run in several threads."""

    def __init__(self, engine: Engine, *, per_day: int, total: int,
                 refresh: timedelta = timedelta(seconds=30)) -> None:
        self.engine, self.per_day, self.total, self.refresh = engine, per_day, total, refresh
        self._lock = threading.Lock()
        self._read_at: datetime | None = None
        self._day = self._all = 0

    def admit(self, size: int, now: datetime) -> None:
        """Raises JunkOverQuota unless a mail of size bytes fits; counts it if it does."""
        with self._lock:
            if self._read_at is None or not now - self.refresh < self._read_at <= now:
                self._day = junk_bytes(self.engine, now - timedelta(days=1))
                self._all = junk_bytes(self.engine)
                self._read_at = now
            if self._day + size > self.per_day or self._all + size > self.total:
                admit_junk(self.engine, size, now, per_day=self.per_day, total=self.total)
                self._read_at = None          # pruned (or not): read the sums anew
            self._day += size
            self._all += size
