"""A Stream: the mail of each handling transaction sent as soon as it commits, while
the tick handles the next mail (the hand-off of a pbem.store.work.Work)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from functools import partial

from sqlalchemy import Engine, bindparam, update
from sqlmodel import col

from pbem.outbox import table
from pbem.outbox.connections import ByAddress, Connections, Sender
from pbem.outbox.draining import PAGE
from pbem.outbox.table import NO_BUDGET, Budget, Claimed, DrainReport, OnFailure, budget_left
from pbem.outbox.workers import Job, Workers
from pbem.store.claims import me
from pbem.store.driver import unindexed
from pbem.store.models import OutboundMail
from pbem.store.work import Queued, Work

log = logging.getLogger(__name__)


# a Stream's transaction claims the mail it queued, at its end (pending, unclaimed: what
# it did not take back)
_CLAIM_QUEUED = update(OutboundMail).where(
    col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
    unindexed(col(OutboundMail.status)) == "pending", col(OutboundMail.claimed_by).is_(None),
).values(claimed_by=bindparam("me"), claimed_at=bindparam("now")).returning(col(OutboundMail.id))


def claim_queued(work: Work, rows: list[Queued], now: datetime, verp: bool) -> list[Claimed]:
    """Claim ``rows``, queued in ``work``'s transaction, in it (its last statement before
    the commit): those still there, pending and unclaimed."""
    work.flush()   # a row deleted or cancelled through the ORM is not claimed
    claimed = set(work.connection().execute(_CLAIM_QUEUED, {
        "ids": [row.id for row in rows], "me": me(), "now": now}).scalars())
    return [Claimed.of(row, verp) for row in rows if row.id in claimed]


class Stream:
    """Mail sent while the tick still handles mail.

    A handling transaction (a pbem.store.work.Work) claims the mail it queued for this process
    as it ends (``claim``: no claim transaction of its own, no read of the
    outbox); once it commits, ``feed`` hands that mail to the connections, which send it at
    once, in queue order to each address (ByAddress), each marked sent right after its
    hand-off as a drain's is. So a turn's answers leave while the next orders are
    handled. ``close`` waits for what was fed and releases what was left unsent (an
    outage, an error: the next drain sends it).

    A crash after the commit and before the hand-off leaves the mail claimed by a dead
    process: the next drain takes it over at once (pbem.store.claims.claim_stale), as it
    does a drain's claimed page.
    """

    def __init__(self, engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
                 now: Callable[[], datetime], *,
                 on_failure: OnFailure | None = None,
                 verp: bool = False, connections: int = 1, backlog: int = 4 * PAGE,
                 budget: Budget = NO_BUDGET,
                 unreleased: Callable[[list[int]], object] | None = None,
                 workers: Workers | None = None) -> None:
        if connections < 1 or backlog < 1:
            raise ValueError("connections and backlog must be >= 1")
        self.engine, self.verp = engine, verp
        # mails fed and not taken yet, at most: a handling faster than the connections (a
        # big turn) leaves the rest to the drain, a page at a time, and memory stays flat
        # (about 60 KB a report: some 12 MB)
        self.backlog = backlog
        self._behind = False
        # what the send budget lets this stream send (None: no limit); past it, the mail
        # is the drain's, which sends it as the budget allows
        self._allowed = budget_left(engine, budget, now())
        self._run = Connections(engine, open_sender, now, on_failure, connections, unreleased)
        self._schedule = ByAddress([], more=True)
        # the connections' threads: the server's, kept from tick to tick; a stream given
        # none has threads of its own, ended at its close. Daemons (pbem.outbox.workers): a
        # stream never closed must not keep the process from exiting; its claims run out
        self._own_workers = workers is None
        self._workers = Workers("pbem-stream") if workers is None else workers
        self._jobs: list[Job] = []
        self._addresses: set[tuple[str, ...]] = set()
        self._unsent: set[int] = set()       # fed and not handed off yet
        self._errors: list[BaseException] = []

    def claim(self, work: Work) -> list[Claimed]:
        """Claim what ``work`` queued and still holds for the stream, last thing before
        its commit; fed after it. Until then the transaction's mail is unclaimed, as any
        queued mail: what the transaction took back is not claimed (a row deleted, a
        savepoint rolled back: START drops a welcome not sent yet; a report cancelled):
        the claim takes only rows still there, pending and unclaimed. SQLite may give the
        id of a row rolled back to a row queued after it: the later one is the row."""
        rows = list({row.id: row for row in work.queued}.values())
        work.queued.clear()
        if not rows:
            return []
        if self._allowed is not None:
            if len(rows) > self._allowed:
                self._behind = True
            else:
                self._allowed -= len(rows)
        if self._behind or self._schedule.waiting >= self.backlog:
            # the connections are behind: this and all later mail is the tick's drain's
            # at its end (so what is queued later to an address never leaves first)
            self._behind = True
            return []
        return claim_queued(work, rows, self._run.now(), self.verp)

    def feed(self, rows: list[Claimed]) -> None:
        """Send ``rows`` (committed, claimed by us) as soon as a connection is free."""
        if not rows:
            return
        self._unsent.update(row.id for row in rows)
        self._schedule.add(rows)
        if len(self._jobs) == len(self._run.senders):
            return
        # a connection for each address with mail, up to the limit: more would wait
        self._addresses.update(tuple(row.rcpts) for row in rows)
        while len(self._jobs) < min(len(self._run.senders), len(self._addresses)):
            slot = len(self._jobs)
            self._jobs.append(self._workers.run(partial(
                self._run.work, self._schedule, slot, self._unsent.discard, self._errors)))

    def close(self) -> DrainReport:
        """Wait until what was fed is sent; release the rest; what happened. An error
        of a connection is logged (the mail it held is released: the next drain)."""
        self._schedule.close()
        try:
            for job in self._jobs:
                job.wait()
        finally:
            if self._own_workers:
                self._workers.close()
            if self._unsent:
                self._run.release(sorted(self._unsent))
                self._run.report.released += len(self._unsent)
            self._run.close()
        for exc in self._errors:
            log.error("sending while handling failed; the drain will send the rest",
                      exc_info=exc)
        return self._run.report


class Inline:
    """The mail of each handling transaction handed off by the tick's own thread as soon
    as the transaction commits: the ``.eml`` outbox, where a hand-off is a file written and
    waits for nothing, so a thread of its own would only take turns with the handling
    (a Stream's was measured 1.4 times slower there).

    Its claim is the handling transaction's last statement, as a Stream's: the row is
    written once with it, where a drain at the tick's end claims it again (SQLite writes
    the whole row, some 60 KB for a report, at each change), and reads it back. The mail
    written after a transaction's commit is marked sent by the next one, in that same
    statement (pbem.outbox.table.claim_and_mark: no transaction, no commit of its own),
    and by one statement and commit at the tick's end (``close``): a crash repeats at most
    the mails of one transaction (its answers and a turn's reports), each with its
    Message-ID. A hand-off that fails (an error, the folder gone) stops it: that mail and
    all later is released for the drain at the tick's end, so what is queued later to an
    address never leaves first.
    """

    def __init__(self, engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
                 now: Callable[[], datetime], *, on_failure: OnFailure | None = None,
                 verp: bool = False,
                 unreleased: Callable[[list[int]], object] | None = None) -> None:
        self.verp = verp
        self._run = Connections(engine, open_sender, now, on_failure, 1, unreleased,
                                defer_marks=True)
        self._stopped = False
        # the marks put in a transaction not known to have committed yet (its feed tells)
        self._riding: list[Claimed] = []
        self._marked: set[int] = set()

    def claim(self, work: Work) -> list[Claimed]:
        """Claim what ``work`` queued, last thing before its commit (Stream.claim), and
        mark the mail written since the last commit sent, in the same statement."""
        rows = list({row.id: row for row in work.queued}.values())
        work.queued.clear()
        if self._stopped:
            rows = []
        self._riding += self._run.unmarked
        self._run.unmarked.clear()
        if not rows and not self._riding:
            return []
        work.flush()   # a row deleted or cancelled through the ORM is not claimed
        claimed, self._marked = table.claim_and_mark(
            work.connection(), [row.id for row in rows], [row.id for row in self._riding],
            self._run.now())
        return [Claimed.of(row, self.verp) for row in rows if row.id in claimed]

    def feed(self, rows: list[Claimed]) -> None:
        """The transaction that claimed ``rows`` committed (its marks with it): hand
        ``rows`` off now, in queue order; what is left unsent is released
        (Connections.send)."""
        riding, self._riding = self._riding, []
        self._run.marked_late(riding, self._marked)
        if not rows:
            return
        report = self._run.report
        before = report.sent + report.deferred + report.failed
        try:
            self._run.send(rows)
        except Exception:   # noqa: BLE001 - logged; the drain sends the rest
            log.exception("writing mail while handling failed; the drain will send the rest")
            self._stopped = True
        if report.unavailable:
            self._stopped = True
        report.released += len(rows) - (report.sent + report.deferred + report.failed - before)

    def close(self) -> DrainReport:
        """Mark what was written and not marked yet (one statement, one commit); what
        happened (nothing is left in flight: each feed ended its hand-offs)."""
        try:
            unmarked, self._riding = self._riding + self._run.unmarked, []
            self._run.unmarked.clear()
            self._run.mark_unmarked(unmarked)
        finally:
            self._run.close()
        return self._run.report
