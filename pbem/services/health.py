"""How the server is doing, read from the database: the figures of `pbem status`, the web's
``/healthz`` and ``/metrics`` (docs/monitoring.md).

Everything here is read in one read-only transaction (``pbem.store.engines.reading``), so any
process that can read the database sees the same figures: `pbem web` runs apart from
`pbem serve` and still knows when its last tick was (``clock.last_tick``, written by
every tick's clock work), how much mail waits, how many mails failed, who holds the
leases, and how the mail servers are backed off (``record_backoff``: serve writes a
service's back-off when it changes). Nothing is counted in memory only, so no figure
goes back to zero when a process restarts.

The server is unwell (``Status.problems``) when its last tick is older than
``late_tick_seconds``, or when mail has waited longer than ``stuck_mail_seconds``: a
stored mail not handled, or an outgoing mail due and not sent.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import Engine, func
from sqlalchemy import select as select_columns
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col

from pbem.config import Settings
from pbem.store.claims import aware, me
from pbem.store.engines import reading
from pbem.store.models import AuditEntry, Game, InboundMail, OutboundMail, ServerState
from pbem.text.wording import Message, _, _n

log = logging.getLogger(__name__)

LAST_TICK = "clock.last_tick"        # pbem.services.clock writes it at every tick
BACKOFF_PREFIX = "backoff:"          # + IMAP or SMTP: record_backoff
LEASE_PREFIX = "lease:"              # pbem.store.claims.Lease
GAME_FAILED = "failure"              # the audit action of a game's failed clock work
RECENT_MAILS = 500                   # handling times are of the last so many mails handled
QUANTILES = (0.5, 0.9, 0.99, 1.0)


@dataclass(frozen=True)
class BackoffState:
    """A mail server serve backs off: how often it failed in a row, when it is tried
    again, why, and which process saw it (``at``: when it was written)."""

    service: str
    failures: int
    retry_at: datetime | None
    why: str
    by: str
    at: datetime | None


@dataclass(frozen=True)
class LeaseState:
    name: str
    owner: str | None
    until: datetime | None


class InboxJSON(TypedDict):
    waiting: int
    oldest: str | None


class OutboxJSON(TypedDict):
    waiting: int
    due: int
    oldest: str | None
    overdue_since: str | None


class BackoffJSON(TypedDict):
    service: str
    failures: int
    retry_at: str | None
    why: str
    by: str
    at: str | None


class LeaseJSON(TypedDict):
    name: str
    owner: str | None
    until: str | None


class StatusJSON(TypedDict):
    """pbem.status/1: `pbem status --json` and /healthz (times ISO 8601, ages in seconds)."""

    format: str
    healthy: bool
    problems: list[str]
    now: str | None
    last_tick: str | None
    last_tick_age_seconds: float | None
    late_after_seconds: float
    stuck_after_seconds: float
    inbox: InboxJSON
    outbox: OutboxJSON
    mails_in: dict[str, int]
    mails_out: dict[str, int]
    games: dict[str, int]
    errors: dict[str, int]
    handling_seconds: dict[str, float | None]
    backoffs: list[BackoffJSON]
    leases: list[LeaseJSON]


@dataclass
class Status:
    """The figures of one look at the database, at ``now``."""

    now: datetime
    late_after: float                      # seconds: a last tick older is late
    stuck_after: float                     # seconds: mail waiting longer is stuck
    last_tick: datetime | None = None
    inbox: int = 0                         # stored mail not handled yet
    inbox_oldest: datetime | None = None   # when the oldest of it came
    outbox: int = 0                        # outgoing mail not sent yet
    outbox_due: int = 0                    # ... of it due now
    outbox_oldest: datetime | None = None  # when the oldest unsent mail was queued
    overdue_since: datetime | None = None  # when the longest due unsent mail fell due
    mails_in: dict[str, int] = field(default_factory=dict)    # stored mail by status
    mails_out: dict[str, int] = field(default_factory=dict)   # outgoing mail by status
    games: dict[str, int] = field(default_factory=dict)       # games by status
    game_failures: int = 0                 # failed clock work or commands, told
    handling: list[float] = field(default_factory=list)       # seconds, the recent mails
    backoffs: list[BackoffState] = field(default_factory=list)
    leases: list[LeaseState] = field(default_factory=list)

    # --- what follows from the figures ----------------------------------------------

    def age(self, when: datetime | None) -> float | None:
        return None if when is None else max(0.0, (self.now - aware(when)).total_seconds())

    @property
    def tick_age(self) -> float | None:
        return self.age(self.last_tick)

    @property
    def errors(self) -> dict[str, int]:
        """What failed, by kind: counts that only grow (until old mail is deleted)."""
        return {"mail-failed": self.mails_in.get("failed", 0),
                "mail-set-aside": self.mails_in.get("quarantined", 0),
                "mail-undeliverable": self.mails_out.get("failed", 0),
                "game-failed": self.game_failures}

    def quantile(self, q: float) -> float | None:
        """The handling time (received to handled, seconds) that a share ``q`` of the
        recent mails took at most; None without any."""
        if not self.handling:
            return None
        ordered = sorted(self.handling)
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    @property
    def problems(self) -> list[Message]:
        """Why the server is unwell; none: it is well."""
        found = []
        tick_age = self.tick_age
        if tick_age is None:
            found.append(_("no tick has run yet: is pbem serve running?"))
        elif tick_age > self.late_after:
            found.append(_("the last tick was {seconds} seconds ago (late after {limit}): is "
                           "pbem serve running, and not stuck?", seconds=round(tick_age),
                           limit=round(self.late_after)))
        waiting = self.age(self.inbox_oldest)
        if waiting is not None and waiting > self.stuck_after:
            found.append(_n("{n} stored mail waits to be handled, for {seconds} seconds",
                            "{n} stored mails wait to be handled, the oldest for {seconds} "
                            "seconds", self.inbox, seconds=round(waiting)))
        overdue = self.age(self.overdue_since)
        if overdue is not None and overdue > self.stuck_after:
            found.append(_n("{n} outgoing mail is due and not sent, for {seconds} seconds: is "
                            "the mail server reachable?",
                            "{n} outgoing mails are due and not sent, the longest for {seconds} "
                            "seconds: is the mail server reachable?", self.outbox_due,
                            seconds=round(overdue)))
        return found

    @property
    def healthy(self) -> bool:
        return not self.problems

    def as_json(self) -> StatusJSON:
        """The figures for `pbem status --json` and ``/healthz`` (format pbem.status/1)."""
        def when(value: datetime | None) -> str | None:
            return None if value is None else aware(value).isoformat()

        return {
            "format": "pbem.status/1", "healthy": self.healthy,
            "problems": [str(p) for p in self.problems], "now": when(self.now),
            "last_tick": when(self.last_tick), "last_tick_age_seconds": self.tick_age,
            "late_after_seconds": self.late_after, "stuck_after_seconds": self.stuck_after,
            "inbox": {"waiting": self.inbox, "oldest": when(self.inbox_oldest)},
            "outbox": {"waiting": self.outbox, "due": self.outbox_due,
                       "oldest": when(self.outbox_oldest),
                       "overdue_since": when(self.overdue_since)},
            "mails_in": self.mails_in, "mails_out": self.mails_out, "games": self.games,
            "errors": self.errors,
            "handling_seconds": {str(q): self.quantile(q) for q in QUANTILES},
            "backoffs": [{"service": b.service, "failures": b.failures,
                          "retry_at": when(b.retry_at), "why": b.why, "by": b.by,
                          "at": when(b.at)} for b in self.backoffs],
            "leases": [{"name": lease.name, "owner": lease.owner, "until": when(lease.until)}
                       for lease in self.leases],
        }

    def lines(self) -> list[str]:
        """The figures as `pbem status` prints them."""
        def ago(when: datetime | None) -> str:
            seconds = self.age(when)
            return "none" if seconds is None else f"{when_text(when)} ({seconds:.0f} s ago)"

        out = [f"health: {'ok' if self.healthy else 'FAILING'}"]
        out += [f"  problem: {p}" for p in self.problems]
        out.append(f"last tick: {ago(self.last_tick)}")
        out.append(f"inbox: {self.inbox} waiting; oldest {ago(self.inbox_oldest)}")
        out.append(f"outbox: {self.outbox} waiting, {self.outbox_due} due; oldest "
                   f"{ago(self.outbox_oldest)}; due since {ago(self.overdue_since)}")
        out.append("games: " + (", ".join(f"{n} {s}" for s, n in sorted(self.games.items()))
                                or "none"))
        out.append("errors: " + ", ".join(f"{k} {n}" for k, n in self.errors.items()))
        if self.handling:
            out.append(f"handling (the last {len(self.handling)} mails): " + ", ".join(
                f"{'max' if q == 1.0 else f'p{round(q * 100)}'} {self.quantile(q):.2f} s"
                for q in QUANTILES))
        for b in self.backoffs:
            out.append(f"back-off {b.service}: " + (
                "none" if not b.failures else
                f"{b.failures} failures in a row, next try {when_text(b.retry_at)}: {b.why}")
                + f" (by {b.by})")
        for lease in self.leases:
            out.append(f"lease {lease.name}: " + (
                f"held by {lease.owner} until {when_text(lease.until)}" if lease.owner
                else "free"))
        return out


def when_text(when: datetime | None) -> str:
    return "-" if when is None else f"{aware(when):%Y-%m-%d %H:%M:%S} UTC"


def _counts(session: Session, column: Any) -> dict[str, int]:
    return {str(key): int(n) for key, n in session.execute(
        select_columns(column, func.count()).group_by(column))}


def _when(value: str | None) -> datetime | None:
    return aware(datetime.fromisoformat(value)) if value else None


def read_status(engine: Engine, now: datetime, *, late_after: float,
                stuck_after: float) -> Status:
    """The figures at ``now``, read in one read-only transaction."""
    status = Status(now=now, late_after=late_after, stuck_after=stuck_after)
    with Session(reading(engine)) as session:
        status.mails_in = _counts(session, col(InboundMail.status))
        status.mails_out = _counts(session, col(OutboundMail.status))
        status.games = _counts(session, col(Game.status))
        status.inbox = status.mails_in.get("new", 0)
        status.outbox = status.mails_out.get("pending", 0)
        status.inbox_oldest = session.execute(select_columns(
            func.min(InboundMail.received_at)).where(col(InboundMail.status) == "new")).scalar()
        pending = col(OutboundMail.status) == "pending"
        status.outbox_oldest = session.execute(select_columns(
            func.min(OutboundMail.created_at)).where(pending)).scalar()
        due, since = session.execute(select_columns(
            func.count(), func.min(OutboundMail.next_attempt_at)).where(
            pending, col(OutboundMail.next_attempt_at) <= now)).one()
        status.outbox_due, status.overdue_since = int(due), since
        status.game_failures = int(session.execute(select_columns(func.count()).where(
            col(AuditEntry.action) == GAME_FAILED)).scalar() or 0)
        # the newest handled mails by id (the primary key: no scan of the table)
        recent = session.execute(select_columns(
            col(InboundMail.received_at), col(InboundMail.processed_at))
            .where(col(InboundMail.status) != "new", col(InboundMail.processed_at).is_not(None))
            .order_by(col(InboundMail.id).desc()).limit(RECENT_MAILS)).all()
        status.handling = [max(0.0, (aware(done) - aware(came)).total_seconds())
                           for came, done in recent]
        for key, value in session.execute(select_columns(
                col(ServerState.key), col(ServerState.value)).where(
                (col(ServerState.key) == LAST_TICK)
                | col(ServerState.key).startswith(BACKOFF_PREFIX)
                | col(ServerState.key).startswith(LEASE_PREFIX)).order_by(col(ServerState.key))):
            if key == LAST_TICK:
                status.last_tick = _when(value)
                continue
            data = json.loads(value)
            if key.startswith(BACKOFF_PREFIX):
                status.backoffs.append(BackoffState(
                    key.removeprefix(BACKOFF_PREFIX), int(data.get("failures", 0)),
                    _when(data.get("retry_at")), str(data.get("why", "")),
                    str(data.get("by", "")), _when(data.get("at"))))
            else:
                status.leases.append(LeaseState(key.removeprefix(LEASE_PREFIX),
                                                data.get("owner"), _when(data.get("until"))))
    return status


def server_status(engine: Engine, settings: Settings, now: datetime) -> Status:
    """read_status with the limits of the settings ([server] late_tick_seconds and
    stuck_mail_seconds)."""
    return read_status(engine, now, late_after=settings.tick_late_after,
                       stuck_after=settings.stuck_mail_seconds)


def record_backoff(engine: Engine, service: str, failures: int, retry_at: datetime | None,
                   why: str, now: datetime) -> None:
    """Keep a service's back-off where `pbem status` and the web read it (serve calls it
    when the back-off changes: a failure, or the first success after failures). A
    database that cannot take it now is let be: the next change writes it."""
    value = json.dumps({"failures": failures,
                        "retry_at": retry_at.isoformat() if retry_at else None,
                        "why": why[:500], "by": me(), "at": now.isoformat()})
    try:
        with Session(engine) as session:
            row = session.get(ServerState, BACKOFF_PREFIX + service)
            if row is None:
                row = ServerState(key=BACKOFF_PREFIX + service, value=value)
            row.value = value
            session.add(row)
            session.commit()
    except SQLAlchemyError as exc:
        log.debug("the back-off of %s was not recorded: %s", service, exc)
