"""The outbox table as the senders see it: which mail is due, claims on it, marks of
what a hand-off did, and claims given back. Each function runs its own short
transaction (the claims are pbem.store.claims.claim_many's: only one process gets a row)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, case, func, update
from sqlalchemy import select as select_columns  # sqlmodel's select takes at most 4
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from pbem.mail.bounces import verp_address
from pbem.mail.smtp_out import SendResult
from pbem.store.claims import aware, claim_many, claim_stale, me
from pbem.store.driver import Hot, unindexed
from pbem.store.engines import reading
from pbem.store.models import OutboundBody, OutboundMail
from pbem.store.work import Work

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 12                     # a deferred mail is given up after this many tries
GIVE_UP_AFTER = timedelta(days=2)     # ... and this long (MTAs wait days, so do we)
CLAIM_LEASE = timedelta(minutes=5)
DUE_CHUNK = 2000                      # due rows read at once: memory stays flat


BUDGET_NOTICE = "budget"              # the kind of the referee's notice of a short budget
# the kinds of mail that can wait when the send budget is short: reminders, table talk
# relayed, a watcher's copy. Answers, confirmations, reports and notices go before them,
# and the referee's notice of the short budget before all.
LATER_KINDS = ("reminder", "talk", "watch")
URGENCY = case((col(OutboundMail.kind) == BUDGET_NOTICE, 0),
               (col(OutboundMail.kind).in_(LATER_KINDS), 2), else_=1)
SHORT_MINUTES = 30                    # due mail that takes longer than this is told


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
    rate_limited: bool = False  # the server said we send too much (also unavailable)
    held: int = 0               # due mail left for later by the send budget


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
OnFailure = Callable[[Work, OutboundMail, Undelivered], Any]


@dataclass(frozen=True)
class Budget:
    """The send budget ([smtp] per_minute, per_day; 0: no limit)."""

    per_minute: int = 0
    per_day: int = 0

    @property
    def limited(self) -> bool:
        return self.per_minute > 0 or self.per_day > 0


NO_BUDGET = Budget()


@dataclass(frozen=True)
class Shortfall:
    """Due mail the send budget will take longer to send than it should (told once a day)."""

    due: int                  # pending mail due now
    left_today: int | None    # what the day's budget has left (None: no daily limit)
    minutes: int              # at the per-minute rate, how long the due mail takes
    budget: Budget


#: told of a short send budget, in a transaction of its own (the referee's notice)
OnShort = Callable[[Work, Shortfall], Any]


def _sent_since(session: Session, since: datetime) -> int:
    return int(session.execute(select_columns(func.count()).select_from(OutboundMail).where(
        col(OutboundMail.status) == "sent", col(OutboundMail.sent_at) > since)).scalar_one())


def budget_left(engine: Engine, budget: Budget, when: datetime,
                lease: timedelta = CLAIM_LEASE) -> int | None:
    """How many mails the budget lets go now (None: no limit): each limit less the mail
    sent in the last minute / day and the mail any worker holds a live claim on (in
    flight), read from the outbox table, so all workers share one budget."""
    if not budget.limited:
        return None
    with Session(reading(engine)) as session:   # only reads: no writer's turn taken
        in_flight = int(session.execute(select_columns(func.count()).select_from(OutboundMail)
                        .where(col(OutboundMail.status) == "pending",
                               col(OutboundMail.claimed_by).is_not(None),
                               col(OutboundMail.claimed_at) > when - lease)).scalar_one())
        left = [limit - _sent_since(session, when - span) - in_flight
                for limit, span in ((budget.per_minute, timedelta(minutes=1)),
                                    (budget.per_day, timedelta(days=1))) if limit > 0]
    return max(0, min(left))


def due_count(engine: Engine, when: datetime) -> int:
    """How many pending mails are due by ``when``."""
    with Session(engine) as session:
        return int(session.execute(select_columns(func.count()).select_from(OutboundMail)
                   .where(*pending_due(when))).scalar_one())


def shortfall(engine: Engine, budget: Budget, when: datetime) -> Shortfall | None:
    """The due mail, when the budget will take too long for it: more than the day's budget
    has left, or more than SHORT_MINUTES at the per-minute rate. None when it will not, or
    when the referee was told so in the last day (a notice of kind BUDGET_NOTICE)."""
    if not budget.limited:
        return None
    due_now = due_count(engine, when)
    with Session(engine) as session:
        left_today = (max(0, budget.per_day - _sent_since(session, when - timedelta(days=1)))
                      if budget.per_day else None)
        minutes = -(-due_now // budget.per_minute) if budget.per_minute else 0
        if not (left_today is not None and due_now > left_today or minutes > SHORT_MINUTES):
            return None
        told = session.execute(select_columns(col(OutboundMail.id)).where(
            col(OutboundMail.kind) == BUDGET_NOTICE,
            col(OutboundMail.created_at) > when - timedelta(days=1)).limit(1)).first()
    return None if told is not None else Shortfall(due_now, left_today, minutes, budget)


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
    is none. It only reads (``reading``): on SQLite it takes no writer's turn, so it
    neither waits for those mails' marks nor keeps them waiting."""
    with Session(reading(engine)) as session:
        return session.execute(
            select(OutboundMail.id)
            .where(*pending_due(when),
                   col(OutboundMail.claimed_by).is_(None) | (col(OutboundMail.claimed_by) != me()))
            .limit(1)).first() is not None


#: where a read of due mail left off: (urgency, id) of the last row read
Cursor = tuple[int, int]
START: Cursor = (-1, 0)


def due(engine: Engine, when: datetime, lease: timedelta, after: Cursor,
        limit: int) -> tuple[list[tuple[int, str | None]], int, Cursor]:
    """Up to ``limit`` pending mails due by ``when`` after ``after``, the most urgent
    first (URGENCY: answers and reports before reminders and table talk), then the
    oldest: (those free to claim, with their claimer seen; how many were looked at; where
    the read left off)."""
    rank, last = after
    with Session(engine) as session:
        rows = session.execute(
            select_columns(URGENCY.label("urgency"), col(OutboundMail.id),
                           col(OutboundMail.claimed_by), col(OutboundMail.claimed_at))
            .where(*pending_due(when),
                   (URGENCY > rank) | ((URGENCY == rank) & (col(OutboundMail.id) > last)))
            .order_by(URGENCY, col(OutboundMail.id)).limit(limit)).all()
    free = [(row_id, owner) for _, row_id, owner, at in rows
            if row_id is not None and claim_stale(owner, at, when, lease)]
    return free, len(rows), (int(rows[-1][0]), int(rows[-1][1])) if rows else after


def claim_page(engine: Engine, due: list[tuple[int, str | None]], when: datetime,
                verp: bool) -> list[Claimed]:
    """Claim the free or stale rows of ``due`` in one transaction (pbem.store.claims.claim_many:
    only one process gets each) and read what sending them needs."""
    with Session(engine) as session:
        got = claim_many(session, OutboundMail, due, when, status="pending")
        rows = session.execute(select_columns(*(col(c) for c in (
            OutboundMail.id, OutboundMail.message_id, OutboundMail.mail_from,
            OutboundMail.bounce_token, OutboundMail.rcpts_json, OutboundBody.raw)))
            .where(col(OutboundMail.id).in_(got), col(OutboundBody.mail_id) == col(OutboundMail.id))
            .order_by(URGENCY, col(OutboundMail.id))).all() if got else []
        claimed = [Claimed.of(row, verp) for row in rows]
        session.commit()
    return claimed


# built once: one statement a mail sent (the ids marked: those whose claim was still ours)
_MARK_SENT = update(OutboundMail).where(
    col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
    col(OutboundMail.claimed_by) == bindparam("me"),
    unindexed(col(OutboundMail.status)) == "pending",
).values(status="sent", sent_at=bindparam("when"), attempts=col(OutboundMail.attempts) + 1,
         claimed_by=None, claimed_at=None).returning(col(OutboundMail.id))


def marking(engine: Engine) -> Connection:
    """The connection a drain's or a stream's marks are written on, held for all of them
    (a checkout a mark costs the pool's ping on PostgreSQL). A mark is one statement, so
    on PostgreSQL it runs as its own transaction (AUTOCOMMIT): one round trip, no BEGIN
    and COMMIT; SQLite's BEGIN is its writer turn (pbem.store.db), kept."""
    conn = engine.connect()
    if engine.dialect.name == "postgresql":
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
    return conn


def mark_sent(conn: Connection, row_ids: list[int], when: datetime) -> set[int]:
    """Mark mails we hold the claim of sent, in one statement, committed (``conn``: from
    ``marking``); the ids so marked (one whose claim is no longer ours is left to
    Connections._mark)."""
    try:
        marked = {row_id for row_id in conn.execute(_MARK_SENT, {
            "ids": row_ids, "me": me(), "when": when}).scalars() if row_id is not None}
        conn.commit()
    except BaseException:
        conn.rollback()   # the connection stays usable for the next mark (or reconnects)
        raise
    return marked


_MARKED = col(OutboundMail.id).in_(bindparam("marks", expanding=True))
_NOW = bindparam("now", type_=OutboundMail.__table__.c.sent_at.type)  # type: ignore[attr-defined]
# built once: the mail a handling transaction queued claimed (pending, unclaimed: what it
# did not take back) and the mail written before it marked sent (still claimed by us),
# in one statement, the transaction's last (pbem.outbox.Inline)
_CLAIM_AND_MARK = Hot(update(OutboundMail).where(
    # found by the ids of both (the OR below alone finds none), "pending" by no index
    col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
    unindexed(col(OutboundMail.status)) == "pending",
    (col(OutboundMail.id).in_(bindparam("claims", expanding=True))
     & col(OutboundMail.claimed_by).is_(None))
    | (_MARKED & (col(OutboundMail.claimed_by) == bindparam("me"))),
).values(
    status=case((_MARKED, "sent"), else_=col(OutboundMail.status)),
    sent_at=case((_MARKED, _NOW), else_=col(OutboundMail.sent_at)),
    attempts=case((_MARKED, col(OutboundMail.attempts) + 1), else_=col(OutboundMail.attempts)),
    claimed_by=case((_MARKED, None), else_=bindparam("me")),
    claimed_at=case((_MARKED, None), else_=_NOW),
).returning(col(OutboundMail.id), col(OutboundMail.status)), lists=["ids", "claims", "marks"])


def claim_and_mark(conn: Connection, claims: list[int], marks: list[int],
                   now: datetime) -> tuple[set[int], set[int]]:
    """In the caller's transaction, one statement: claim ``claims`` (queued in it: those
    still there, pending and unclaimed) and mark ``marks`` (handed off before it, claimed
    by us) sent; (the ids claimed, the ids marked). A mark commits with the transaction;
    one whose claim is no longer ours is not marked (Connections.mark_late)."""
    claimed: set[int] = set()
    marked: set[int] = set()
    for row in _CLAIM_AND_MARK(conn, {
            "ids": claims + marks, "claims": claims, "marks": marks, "me": me(),
            "now": now}).mappings():
        row_id, status = row["id"], row["status"]
        if row_id is not None:
            (marked if status == "sent" else claimed).add(row_id)
    return claimed, marked


def release(engine: Engine, row_ids: list[int]) -> list[int]:
    """Give up our claim on mail we did not send (still pending): free for the next drain.
    The ids it could not give back (the database unavailable): no thread of this process
    holds them any more, so it gives them back once it can (pbem.runner.server.Server.give_back)
    rather than leave them to run out with their lease."""
    if not row_ids:
        return []
    try:
        with Session(engine) as session:
            session.execute(update(OutboundMail).where(
                col(OutboundMail.id).in_(row_ids), col(OutboundMail.claimed_by) == me(),
                unindexed(col(OutboundMail.status)) == "pending",
            ).values(claimed_by=None, claimed_at=None))
            session.commit()
    except OperationalError as exc:   # given back once the database is back
        log.warning("could not release the claims of %d unsent mails: %s", len(row_ids), exc)
        return list(row_ids)
    return []


def record(session: Work, row: OutboundMail, result: SendResult, when: datetime,
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
