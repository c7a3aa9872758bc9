"""The outbox table as the senders see it: which mail is due, claims on it, marks of
what a hand-off did, and claims given back. Each function runs its own short
transaction (the claims are pbem.claims.claim_many's: only one process gets a row)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, bindparam, update
from sqlalchemy import select as select_columns  # sqlmodel's select takes at most 4
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from pbem.claims import aware, claim_many, claim_stale, me
from pbem.mail.bounces import verp_address
from pbem.mail.smtp_out import SendResult
from pbem.models import OutboundMail

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 12                     # a deferred mail is given up after this many tries
GIVE_UP_AFTER = timedelta(days=2)     # ... and this long (MTAs wait days, so do we)
CLAIM_LEASE = timedelta(minutes=5)
DUE_CHUNK = 2000                      # due rows read at once: memory stays flat


def backoff(attempts: int) -> timedelta:
    """1, 2, 4 ... minutes, at most an hour between tries."""
    return timedelta(minutes=min(60, 2 ** max(0, attempts - 1)))


@dataclass
class DrainReport:
    sent: int = 0
    deferred: int = 0
    failed: int = 0
    unavailable: bool = False   # the mail server could not be reached: try again later
    released: int = 0           # claimed and left unsent (an error): for the next drain


@dataclass(frozen=True)
class Undelivered:
    """Why the outbox gave up on a mail (told to ``on_failure``): what the server said, and
    which recipients its server refused (at RCPT or DATA, for good or until we gave up):
    those are bounces, heard as a DSN of the mail is (pbem.services.bounces)."""

    why: str
    refused: dict[str, str] = field(default_factory=dict)   # rcpt -> the server's reply

    def __str__(self) -> str:
        return self.why


#: told of each mail the outbox gives up on, in the transaction that marks it failed
OnFailure = Callable[[Session, OutboundMail, Undelivered], Any]


@dataclass(frozen=True)
class Claimed:
    """A mail claimed for sending: what the hand-off needs."""

    id: int
    mail_from: str      # the envelope sender
    rcpts: list[str]
    raw: bytes

    @classmethod
    def of(cls, row: Any, verp: bool) -> Claimed:
        """What sending ``row`` needs (an OutboundMail, or a row of its id, message_id,
        mail_from, bounce_token, rcpts_json and raw)."""
        return cls(row.id, envelope_sender(row, verp), json.loads(row.rcpts_json), row.raw)


def envelope_sender(row: Any, verp: bool) -> str:
    """The MAIL FROM of a mail (an OutboundMail, or a row with its mail_from, bounce_token
    and message_id): the server's address, or with VERP its +b.<token> form."""
    if verp and row.bounce_token:
        try:
            return verp_address(row.mail_from, row.bounce_token)
        except ValueError:
            log.warning("mail %s: no VERP address for %s", row.message_id, row.mail_from)
    return str(row.mail_from)


def pending_due(when: datetime) -> tuple[Any, Any]:
    """Where a drain looks: pending mail due by ``when``."""
    return OutboundMail.status == "pending", col(OutboundMail.next_attempt_at) <= when


def others_due(engine: Engine, when: datetime) -> bool:
    """Is any pending mail due by ``when`` that this process does not hold (what a drain
    would look at, but for the mail a Stream of ours is sending)? Asked while a Stream's
    last mails are on their way, so the tick's drain after it can be skipped when there
    is none."""
    with Session(engine) as session:
        return session.execute(
            select(OutboundMail.id)
            .where(*pending_due(when),
                   col(OutboundMail.claimed_by).is_(None) | (col(OutboundMail.claimed_by) != me()))
            .limit(1)).first() is not None


def due(engine: Engine, when: datetime, lease: timedelta, after: int,
         limit: int) -> tuple[list[tuple[int, str | None]], int, int]:
    """Up to ``limit`` pending mails due by ``when`` with ids after ``after``: (those free
    to claim, with their claimer seen; how many were looked at; the last id looked at)."""
    with Session(engine) as session:
        rows = session.exec(
            select(OutboundMail.id, OutboundMail.claimed_by, OutboundMail.claimed_at)
            .where(*pending_due(when), col(OutboundMail.id) > after)
            .order_by(col(OutboundMail.id)).limit(limit)).all()
    free = [(row_id, owner) for row_id, owner, at in rows
            if row_id is not None and claim_stale(owner, at, when, lease)]
    return free, len(rows), (rows[-1][0] or 0) if rows else after


def claim_page(engine: Engine, due: list[tuple[int, str | None]], when: datetime,
                verp: bool) -> list[Claimed]:
    """Claim the free or stale rows of ``due`` in one transaction (pbem.claims.claim_many:
    only one process gets each) and read what sending them needs."""
    with Session(engine) as session:
        got = claim_many(session, OutboundMail, due, when, status="pending")
        rows = session.execute(select_columns(*(col(c) for c in (
            OutboundMail.id, OutboundMail.message_id, OutboundMail.mail_from,
            OutboundMail.bounce_token, OutboundMail.rcpts_json, OutboundMail.raw)))
            .where(col(OutboundMail.id).in_(got))
            .order_by(col(OutboundMail.id))).all() if got else []
        claimed = [Claimed.of(row, verp) for row in rows]
        session.commit()
    return claimed


# built once: one statement a mail sent
_MARK_SENT = update(OutboundMail).where(
    col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
    col(OutboundMail.claimed_by) == bindparam("me"), col(OutboundMail.status) == "pending",
).values(status="sent", sent_at=bindparam("when"), attempts=col(OutboundMail.attempts) + 1,
         claimed_by=None, claimed_at=None)


def mark_sent(engine: Engine, row_ids: list[int], when: datetime) -> set[int]:
    """Mark mails we hold the claim of sent, in one transaction; the ids so marked (one
    whose claim is no longer ours is left to Connections._mark)."""
    def mark(ids: list[int]) -> int:
        return int(conn.execute(_MARK_SENT, {"ids": ids, "me": me(), "when": when}).rowcount)

    with engine.connect() as conn:
        if mark(row_ids) == len(row_ids):
            conn.commit()
            return set(row_ids)
        conn.rollback()     # not all ours any more (rare): one by one
        marked = {row_id for row_id in row_ids if mark([row_id]) == 1}
        conn.commit()
        return marked


def release(engine: Engine, row_ids: list[int]) -> list[int]:
    """Give up our claim on mail we did not send (still pending): free for the next drain.
    The ids it could not give back (the database unavailable): no thread of this process
    holds them any more, so it gives them back once it can (pbem.server.Server.give_back)
    rather than leave them to run out with their lease."""
    if not row_ids:
        return []
    try:
        with Session(engine) as session:
            session.execute(update(OutboundMail).where(
                col(OutboundMail.id).in_(row_ids), col(OutboundMail.claimed_by) == me(),
                col(OutboundMail.status) == "pending").values(claimed_by=None, claimed_at=None))
            session.commit()
    except OperationalError as exc:   # given back once the database is back
        log.warning("could not release the claims of %d unsent mails: %s", len(row_ids), exc)
        return list(row_ids)
    return []


def record(session: Session, row: OutboundMail, result: SendResult, when: datetime,
            report: DrainReport, on_failure: OnFailure | None) -> None:
    if result.unavailable and not result.accepted and not result.permanent:
        # the service is down, not this mail: no try is counted, the server backs off
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.temporary.items())
        report.deferred += 1
        log.info("mail %s not sent, the mail server is unavailable: %s", row.message_id,
                 row.last_error)
        session.add(row)
        return
    row.attempts += 1
    if result.permanent and not result.temporary:
        row.status = "failed"
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.permanent.items())
        report.failed += 1
        log.warning("mail %s refused for good: %s", row.message_id, row.last_error)
        if on_failure is not None:
            on_failure(session, row, Undelivered(row.last_error, {
                rcpt: text for rcpt, text in result.refused.items() if rcpt in result.permanent}))
    elif result.temporary:
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.temporary.items())
        if row.attempts >= MAX_ATTEMPTS and when - aware(row.created_at) >= GIVE_UP_AFTER:
            row.status = "failed"
            report.failed += 1
            log.warning("mail %s given up after %d tries: %s", row.message_id, row.attempts,
                        row.last_error)
            if on_failure is not None:   # refused for now until now: refused for good
                on_failure(session, row, Undelivered(
                    f"gave up after {row.attempts} tries: {row.last_error}",
                    {rcpt: text for rcpt, text in result.refused.items()
                     if rcpt in result.temporary}))
        else:
            row.next_attempt_at = when + backoff(row.attempts)
            report.deferred += 1
            log.info("mail %s deferred: %s", row.message_id, row.last_error)
    else:
        row.status = "sent"
        row.sent_at = when
        report.sent += 1
    session.add(row)
