"""A worker's tick: fetch, handle the stored mail under the referee lease, send.

One cycle of work, run alone (``pbem tick``) or by serve's jobs
(pbem.runner.server): the mail fetched from the [imap] folder, the stored mail handled
and the clock's work done under the referee lease (pbem.runner.referee), the outgoing
mail sent while it is handled (a Stream, or Inline for the .eml outbox) and drained
after it; the services' back-offs (kept for `pbem status`), and [retention]'s pruning.
Server (pbem.runner.server) wires the parts this class reads and serves its ticks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from pbem.config import Settings
from pbem.mail.senders import Senders
from pbem.outbox import (
    Budget,
    DrainReport,
    Inline,
    Stream,
    Workers,
    drain,
    others_due,
    release,
)
from pbem.runner.composer import Composer, Composing, finish_tick, make_left
from pbem.runner.fetching import Fetcher
from pbem.runner.referee import Referee
from pbem.runner.retention import prune_when_due
from pbem.services.drafts import Compose, Made
from pbem.services.failures import tell_made
from pbem.services.health import record_backoff
from pbem.services.progress import Marks, Progress, unmarked
from pbem.store.advisory_locks import lanes_apart
from pbem.store.backoff import Backoff
from pbem.store.claims import Lease, Waits
from pbem.store.db import check_schema
from pbem.store.work import Work

# its lines under the server's name, where operators find the ticks
log = logging.getLogger("pbem.runner.server")
KEPT_BACKOFFS = ("IMAP", "SMTP")  # back-offs written where `pbem status` reads them

UNAVAILABLE = "the mail server could not be reached or refused us"
RATE_LIMITED = "the mail server says we send too much: sending pauses"


@dataclass
class TickReport:
    fetched: int = 0
    processed: int = 0
    resolved: int = 0
    sent: int = 0
    deferred: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)   # services that were down this tick
    # where the tick's time went (wall seconds): fetching (IMAP, storing), handling (the
    # mail and the clock's work, with the mail sent meanwhile: send_while_handling), sending
    # (the rest of the outbox)
    seconds: dict[str, float] = field(default_factory=dict)
    waits: Waits = field(default_factory=Waits)   # what it waited for, and on whom

    @property
    def did_something(self) -> bool:
        return bool(self.fetched or self.processed or self.resolved or self.sent)

    def __str__(self) -> str:
        took = ""
        if self.seconds and self.did_something:
            took = (f"; took {sum(self.seconds.values()):.2f} s ("
                    + ", ".join(f"{phase} {secs:.2f}" for phase, secs in self.seconds.items())
                    + ")")
        return (f"fetched {self.fetched}, processed {self.processed}, turns resolved "
                f"{self.resolved}, sent {self.sent}, deferred {self.deferred}, failed {self.failed}"
                + (f"; unavailable: {', '.join(self.problems)}" if self.problems else "")
                + took + (f"; waited: {self.waits}" if self.waits.seconds else ""))


class Ticking:
    """A worker's ticks (tick), and its sending between them (send). Server
    (pbem.runner.server) sets these parts up."""

    settings: Settings
    engine: Engine
    referee: Referee
    clock: Callable[[], datetime]
    fetcher: Fetcher
    senders: Senders
    sending: Workers                      # the threads of each tick's Stream
    progress: Progress                    # serve's watchdog reads it
    composer: Composer | None             # a turn's reports made apart, or None
    _compose: Compose                     # how a draft's mails are made
    _drafts_left: bool                    # drafts a crash left, made at the first tick's end
    _lock: threading.Lock                 # one cycle at a time within this process
    _stop: threading.Event | None         # serve's, once it runs
    _last_report: TickReport | None
    _unreleased: list[int]                # claims kept for give_back
    _unreleased_lock: threading.Lock

    def _backoff(self, service: str) -> Backoff:
        backoffs: dict[str, Backoff] = self.__dict__.setdefault("_backoffs", {})
        if service not in backoffs:
            backoffs[service] = Backoff(service, on_change=self._keep_backoff
                                        if service in KEPT_BACKOFFS else None)
        return backoffs[service]

    def _keep_backoff(self, backoff: Backoff, why: str) -> None:
        """A mail server's back-off changed: kept in the database for `pbem status`."""
        record_backoff(self.engine, backoff.name, backoff.failures, backoff.retry_at, why,
                       self.clock())

    def fetch(self, *, move_later: bool = False, waits: Waits | None = None) -> int:
        """Store what waits in the mailbox (pbem.runner.fetching.Fetcher.fetch)."""
        return self.fetcher.fetch(move_later=move_later, waits=waits)

    def send(self) -> DrainReport:
        """Drain the outbox; an unreachable SMTP server is retried with back-off."""
        self.give_back()
        backoff = self._backoff("SMTP")
        if not backoff.ready(self.clock()):
            return DrainReport(unavailable=True)
        report = drain(self.engine, self.senders.open, self.clock,
                       on_failure=self.referee.undeliverable,
                       lease=timedelta(seconds=self.settings.claim_lease_seconds),
                       verp=self.settings.smtp is not None and self.settings.smtp.verp,
                       connections=self.settings.smtp.connections if self.settings.smtp else 1,
                       budget=self.budget(), on_short=self.referee.budget_short,
                       unreleased=self.keep_unreleased)
        if report.unavailable:
            backoff.failed(self.clock(), RATE_LIMITED if report.rate_limited else UNAVAILABLE)
        else:
            backoff.succeeded()
        return report

    def budget(self) -> Budget:
        """The send budget of [smtp] (none for the .eml outbox)."""
        smtp = self.settings.smtp
        return Budget(smtp.per_minute, smtp.per_day) if smtp is not None else Budget()

    def keep_unreleased(self, claims: list[int]) -> None:
        """Keep the claims a drain or stream could not give back, for give_back."""
        with self._unreleased_lock:
            self._unreleased += claims

    def give_back(self) -> None:
        """Give back the claims of outgoing mail that a drain or stream of this process
        left unsent and could not give back, the database gone (keep_unreleased): no
        thread holds them any more, so the next drain of any worker sends them, instead
        of waiting for their lease (claim_lease_seconds) to run out. Kept for the next
        send while the database is still gone."""
        with self._unreleased_lock:
            claims, self._unreleased = self._unreleased, []
        left = release(self.engine, claims)
        if left:
            with self._unreleased_lock:
                self._unreleased += left

    def open_stream(self) -> Stream | Inline | None:
        """A Stream for the tick's handling (its mail sent over SMTP as each transaction
        commits); for the .eml outbox an Inline (each transaction's files written by the
        tick's thread once it commits: a file waits for nothing); None: send_while_handling
        off, or the mail server backed off."""
        smtp = self.settings.smtp
        if not self.settings.send_while_handling \
                or not self._backoff("SMTP").ready(self.clock()):
            return None
        if smtp is None:
            return Inline(self.engine, self.senders.open, self.clock,
                          on_failure=self.referee.undeliverable,
                          unreleased=self.keep_unreleased)
        return Stream(self.engine, self.senders.open, self.clock,
                      on_failure=self.referee.undeliverable,
                      verp=smtp.verp, connections=smtp.connections, budget=self.budget(),
                      unreleased=self.keep_unreleased, workers=self.sending)

    def _draft_told(self, session: Work, made: Made) -> None:
        """A turn's reports could not be made, or were made without the turn's notes
        (pbem.services.drafts): the referee is told."""
        tell_made(session, self.referee.post, made)

    def send_after(self, streamed: DrainReport | None, others: bool) -> DrainReport:
        """The tick's sending after its handling: a drain (send), unless a stream sent
        all there was (``streamed``: what it did; ``others``: whether mail it did not hold
        was due when its last mails left). A stream that found the SMTP server
        unavailable backs it off: no second try now."""
        if streamed is None:
            return self.send()
        if streamed.unavailable:
            self._backoff("SMTP").failed(self.clock(), RATE_LIMITED if streamed.rate_limited
                                         else UNAVAILABLE)
            return DrainReport(unavailable=True)
        if others or streamed.failed or streamed.released:
            # a failed mail's notice to the referee, or mail an error left unsent, came
            # after the question: a drain
            return self.send()
        if streamed.sent:
            self._backoff("SMTP").succeeded()
        return DrainReport()

    def tick(self, marks: Marks = unmarked) -> TickReport:
        """One full cycle: fetch, process, resolve due turns, send; ``marks`` is told as
        each part begins and ends (pbem.services.progress.Marks: bench/tick_phases.py times
        them), and each is progress (loop_stalled).

        Processing and resolving run under the referee lease (in the database), so
        two processes never handle mail or resolve turns at the same time; a tick
        that cannot get it in time leaves the work to the holder. A database that is
        locked or unreachable ends the step it hit; the next tick catches up.
        """
        marked = self.progress.marking(marks)
        marked("tick>")
        try:
            report = self._tick(marked)
            self._last_report = report
            return report
        finally:
            marked("tick<")

    def _tick(self, marks: Marks) -> TickReport:
        with self._lock:
            report = TickReport()
            database = self._backoff("database")
            streamed: DrainReport | None = None   # what was sent while handling (open_stream)
            others = True                         # mail for a drain after the stream?
            started = time.perf_counter()
            try:
                check_schema(self.engine)   # SchemaError: a newer pbem upgraded it meanwhile
                # the fetched mail's move out of the folder runs on while it is handled
                marks("fetch>")
                report.fetched = self.fetch(move_later=True, waits=report.waits)
                marks("fetch<")
                report.seconds["fetching"] = time.perf_counter() - started
                lease = Lease(self.engine, "referee", self.clock,
                              seconds=self.settings.claim_lease_seconds)
                held = self.take_referee_lease(lease, report.waits)
                if held is not None:
                    stream = self.open_stream()
                    hand_off: Stream | Inline | Composing | None = stream
                    if self.composer is not None:
                        self.composer.begin()   # started once the tick has enough turns
                        hand_off = Composing(stream, self.composer, self._draft_told,
                                             from_turn=self.settings.composer_from_turn)
                    try:
                        report.processed = self.referee.process_pending(
                            keep_alive=lease.renew if held else None, hand_off=hand_off,
                            marks=marks, waits=report.waits)
                        marks("clock>")
                        # the clock's turns are drafted only for a composer at work
                        report.resolved = self.referee.resolve_due(
                            report.waits, step=self.progress.beat,
                            draft=self.composer is not None and self.composer.asked)
                        marks("clock<")
                        if self.composer is not None:
                            marks("compose>")
                            finish_tick(self.engine, self.composer, self.composer.compose,
                                        stream, self._draft_told)
                            marks("compose<")
                        elif self._drafts_left:
                            make_left(self.engine, self._compose, stream, self._draft_told)
                            self._drafts_left = False
                    finally:
                        if held:
                            lease.release()
                        if stream is not None:
                            try:   # asked while the stream's last mails are on their way
                                others = others_due(self.engine, self.clock())
                            finally:
                                marks("close>")
                                streamed = stream.close()
                                marks("close<")
            except OperationalError as exc:
                database.failed(self.clock(), exc.orig if exc.orig is not None else exc)
                report.problems.append("database")
            sending = time.perf_counter()
            report.seconds["handling"] = sending - started - report.seconds.get("fetching", 0.0)
            try:
                sent = self.send_after(streamed, others)
            except OperationalError as exc:
                database.failed(self.clock(), exc.orig if exc.orig is not None else exc)
                report.problems.append("database")
                sent = DrainReport()
            streamed = streamed or DrainReport()
            report.sent = streamed.sent + sent.sent
            report.deferred = streamed.deferred + sent.deferred
            report.failed = streamed.failed + sent.failed
            if sent.unavailable:
                report.problems.append("SMTP")
            report.seconds["sending"] = time.perf_counter() - sending
            self.fetcher.settle()
            if self._backoff("IMAP").failures:
                report.problems.insert(0, "IMAP")
            if self._stop is None:   # a tick alone (cron); serve prunes in a job of its own
                self.prune()
            return report

    def prune(self) -> None:
        """[retention], once a day (pbem.runner.retention): after a one-shot tick, or in serve's
        hourly job, beside the ticks (a first pruning of years of mail may take minutes);
        a failure is logged and the rest goes on."""
        keep = self.settings.retention
        try:
            pruned = prune_when_due(self.engine, self.clock(), inbound_days=keep.inbound_days,
                                    outbox_days=keep.outbox_days,
                                    outbox=self.settings.outbox_dir)
        except OperationalError as exc:   # an outage: the tick has said so; the next tries
            log.warning("pruning old mail waits for the database: %s", exc.orig or exc)
            return
        except Exception:   # noqa: BLE001 - its turn comes again tomorrow
            log.exception("pruning old mail failed; it is tried again in a day")
            return
        if pruned:
            log.info("retention: %s", pruned)

    def take_referee_lease(self, lease: Lease, waits: Waits) -> bool | None:
        """May this tick handle mail: True under the referee lease (SQLite: one writer,
        waited for up to lock_wait_seconds), False without it (PostgreSQL: workers handle
        different games side by side, each mail under its game's claim; the lease is a
        referee command's from the shell, then left to it), None: left to its holder.
        What it waited for, and on whom, is told to ``waits``."""
        if lanes_apart(self.engine):
            holder = lease.other_holder()
            if holder is None:
                return False
            waits.add("left the mail to the referee lease", 0.0, holder)
        else:
            waiting = time.perf_counter()
            got = lease.acquire(wait=self.settings.lock_wait_seconds)
            waited = time.perf_counter() - waiting
            if not got or waited >= 0.01:
                waits.add("the referee lease", waited, lease.refused_by)
            if got:
                return True
            holder = lease.refused_by
        log.info("another process (%s) is handling mail; left to it", holder)
        return None
