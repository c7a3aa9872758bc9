"""The imperative shell: wires the edges (IMAP, SMTP listener, SMTP out, clock) to the referee.

The shell: it may import every layer below (pbem.runner.fetching, pbem.runner.referee, pbem.outbox,
the mail edges ...); nothing below imports it. ``utc_now`` is the clock source.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parseaddr
from functools import partial

from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from pbem.config import ConfigError, Settings
from pbem.kinds import kind_template_dirs
from pbem.mail.dkim import DkimError, DkimSigner, load_signer
from pbem.mail.headers import read_mail_header
from pbem.mail.listener import ListenPolicy, MailListener, MailRefused
from pbem.mail.senderauth import aligned_domain
from pbem.mail.senders import Senders, SmtpAccount
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
from pbem.render.reports import Renderer, TemplateProblem
from pbem.runner.composer import Composer, Composing, cores, finish_tick, make_left
from pbem.runner.fetching import Fetcher, oauth_login
from pbem.runner.junk import JUNK_SOURCE, JunkOverQuota, JunkTally
from pbem.runner.notify import notify, watchdog_seconds
from pbem.runner.referee import Referee
from pbem.runner.retention import prune_when_due
from pbem.services.drafts import Compose, Made
from pbem.services.failures import tell_made
from pbem.services.health import record_backoff
from pbem.services.post import Post
from pbem.services.progress import Marks, Progress, unmarked
from pbem.services.reports import composing
from pbem.store.advisory_locks import lanes_apart
from pbem.store.backoff import Backoff
from pbem.store.backup import BackupPlan
from pbem.store.claims import Lease, Waits
from pbem.store.db import SchemaError, check_schema, open_database
from pbem.store.faults import crash_point
from pbem.store.security import known_address
from pbem.store.wakeups import MailWatch
from pbem.store.work import Work

log = logging.getLogger(__name__)
WOKEN_TICKS_APART = 0.1          # seconds at least between two ticks woken by stored mail
STATUS_EVERY = 30.0              # seconds between serve's STATUS= to systemd without a watchdog
KEPT_BACKOFFS = ("IMAP", "SMTP")  # back-offs written where `pbem status` reads them
PRUNE_AFTER = 60.0               # serve's first look at [retention]: once the first ticks ran

UNAVAILABLE = "the mail server could not be reached or refused us"
RATE_LIMITED = "the mail server says we send too much: sending pauses"


def utc_now() -> datetime:
    """The real clock (tests and the demo may pass another)."""
    return datetime.now(UTC)


def poll_scheduler(interval: float, tick: Callable[[], None], send: Callable[[], None],
                   first_tick: datetime) -> BackgroundScheduler:
    """serve's jobs, not started: ``tick`` every ``interval`` seconds from ``first_tick``,
    and ``send`` (the outbox alone) in between. Each job runs once at a time; a start
    that comes while it still runs (a big turn's tick) is dropped, and one that comes
    late (a stalled machine, a stopped process) runs late, once: APScheduler's default
    grace of one second would skip it."""
    scheduler = BackgroundScheduler(timezone="UTC", job_defaults={
        "max_instances": 1, "coalesce": True, "misfire_grace_time": None})
    scheduler.add_job(tick, "interval", seconds=interval, id="tick", next_run_time=first_tick)
    scheduler.add_job(send, "interval", seconds=interval, id="send")
    return scheduler


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


def dkim_signer(settings: Settings) -> DkimSigner | None:
    """The signer [dkim] asks for, or None; a missing or bad key is a ConfigError."""
    conf = settings.dkim
    if conf is None:
        return None
    try:
        signer = load_signer(conf.selector, conf.domain or settings.domain,
                             private_key=conf.private_key,
                             private_key_file=conf.private_key_file)
    except DkimError as exc:
        raise ConfigError(f"[dkim]: {exc}") from exc
    if not aligned_domain(settings.domain, signer.domain):
        log.warning("DKIM domain %s is not the domain of the server's address (%s): "
                    "DMARC will not count the signature", signer.domain, settings.domain)
    return signer


def composer_parts(settings: Settings) -> tuple[Engine, Compose]:
    """In the composer's own process (pbem.runner.composer): its engine (its own
    connections; the schema is the server's business) and how it makes a draft's mails,
    with templates of its own."""
    engine = open_database(settings.database, migrate=False,
                           synchronous=settings.db.synchronous)
    post = Post(settings, Renderer(settings.templates_dir, kind_template_dirs()), utc_now)
    return engine, composing(post)


class Server:
    def __init__(self, settings: Settings, clock: Callable[[], datetime] = utc_now, *,
                 compose_apart: bool | None = None) -> None:
        self.settings = settings
        self.signer = dkim_signer(settings)   # DKIM, or None; a bad key stops here
        self.engine = open_database(settings.database, synchronous=settings.db.synchronous,
                                    backups=BackupPlan(settings.backup_folder,
                                                       settings.backup.keep))
        self.referee = Referee(settings, self.engine, Renderer(settings.templates_dir, kind_template_dirs()), clock)
        self.clock = clock
        self.fetcher = Fetcher(settings, self.engine, self.referee, clock,
                               self._backoff("IMAP"))
        self._lock = threading.Lock()   # one cycle at a time within this process
        self._stop: threading.Event | None = None          # serve's, once it runs
        self._ticked = False                               # safe_tick says the first once
        self.stopped_by: SchemaError | None = None
        smtp = settings.smtp   # the login is made once: one token source for all sends
        self.senders = Senders(
            outbox_dir=settings.outbox_dir, durable=settings.db.synchronous == "full",
            signer=self.signer, smtp=None if smtp is None else SmtpAccount(
                smtp.host, smtp.port, smtp.ssl, smtp.starttls, smtp.username, smtp.password,
                oauth_login(smtp, "SMTP", self.fetcher.token_refused)))
        # the threads of each tick's Stream (its SMTP connections), kept from tick to tick
        self.sending = Workers("pbem-stream")
        self._woken = threading.Event()                     # mail stored: tick at once
        listen = settings.listen    # the listener's quota for mail from unknown senders
        self._junk = None if listen is None else JunkTally(
            self.engine, per_day=listen.junk_bytes_per_day, total=listen.junk_bytes_total)
        # outgoing mail claimed, left unsent, and not given back (the database was gone):
        # kept by keep_unreleased, given back by the next send (give_back)
        self._unreleased: list[int] = []
        self._unreleased_lock = threading.Lock()
        # when a tick last began, ended or went on to its next part: serve's watchdog
        # (loop_stalled) tells systemd it is alive only while this is recent
        self.progress = Progress()
        self._last_report: TickReport | None = None
        # a turn's reports made into mails by a process of its own (pbem.runner.composer):
        # SQLite, where the tick's thread is the one writer, and the other core idle
        self.composer: Composer | None = None
        if compose_apart is None:
            compose_apart = settings.compose_apart
        post = self.referee.post
        self._compose: Compose = composing(post)
        # without a composer, drafts a crash left (compose_apart on before, or with a
        # second core) are made at the first tick's end
        self._drafts_left = True
        if compose_apart and not lanes_apart(self.engine) and cores() >= 2:
            self.composer = Composer(self.engine, self._compose,
                                     partial(composer_parts, settings))

    # --- the edges ----------------------------------------------------------

    def close(self) -> None:
        """Log out of what is kept open (the IMAP and SMTP connections); the composer ends."""
        self.fetcher.close()
        self.senders.close()
        self.sending.close()
        if self.composer is not None:
            self.composer.stop()

    def store_received(self, raw: bytes, envelope_from: str, rcpts: list[str]) -> None:
        """The listener's store: returns (and the client gets its 250) only once stored.
        Mail from an address pbem does not know counts against the junk quota of
        [listen] (pbem.runner.junk); over it, MailRefused gives the client a 452."""
        source = "smtp"
        if self._junk is not None and not self._known_sender(raw):
            source = JUNK_SOURCE
            try:
                self._junk.admit(len(raw), self.clock())
            except JunkOverQuota as over:
                raise MailRefused(str(over)) from over
        self.referee.store_inbound(raw, source=source, envelope_from=envelope_from)
        crash_point("listener-stored")
        self._woken.set()

    # --- the jobs -------------------------------------------------------------

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

    def safe_tick(self) -> None:
        try:
            report = self.tick()
            if not self._ticked:   # always said once, whatever the tick did: serve is at work
                log.info("the first tick is done: %s", report)
            elif report.did_something or report.waits.worth_saying():
                log.info("tick: %s", report)
            self._ticked = True
        except SchemaError as exc:   # not ours to touch any more: serve stops
            log.error("stopping: %s", exc)
            self.stopped_by = exc
            if self._stop is not None:
                self._stop.set()
        except Exception:   # a job must never kill the scheduler
            log.exception("tick failed; will try again")

    def safe_send(self) -> None:
        """The outbox alone, between ticks (serve): answers leave while a tick of this
        worker, or another worker, is handling mail; claims keep each mail sent once."""
        try:
            report = self.send()
            if report.sent:
                log.info("sent %d", report.sent)
        except Exception:   # a job must never kill the scheduler
            log.exception("sending failed; will try again")

    def tick_when_woken(self, stop: threading.Event) -> None:
        """serve's ticks out of turn: one as soon as mail is stored (by this worker's
        listener, or by any worker on PostgreSQL: pbem.store.wakeups.MailWatch) or arrives in
        the [imap] folder (pbem.mail.idle.IdleWatch), not waiting
        for the next poll; at most one each WOKEN_TICKS_APART seconds, so a stream of
        mail makes a worker tick back to back, not once a mail. Each tick, woken or
        timed, runs alone (Server._lock)."""
        while not stop.is_set():
            if self._woken.wait(0.5):
                self._woken.clear()
                self.safe_tick()
                stop.wait(WOKEN_TICKS_APART)

    def compile_templates(self) -> None:
        """Every mail template compiled before the first mail (serve does it at start; a
        one-shot ``pbem tick`` compiles only the ones its mail needs). A template that
        does not compile is a ConfigError: the referee's override to fix."""
        try:
            count = self.referee.renderer.compile_all()
        except TemplateProblem as exc:
            raise ConfigError(str(exc)) from exc
        log.debug("%d mail templates compiled", count)

    def start_up(self) -> None:
        """What a long-running server does before its first tick: the templates compiled
        (compile_templates), then all that is loaded by now (modules, templates, the
        engine) set aside from the garbage collector (gc.freeze): it lives as long as the
        process, and each full collection would walk it again. In bench/mail_throughput
        the collector's time inside the ticks fell from about 120 to 40 ms a run."""
        self.compile_templates()
        gc.freeze()

    def listener(self) -> MailListener | None:
        listen = self.settings.listen
        if listen is None:
            return None
        addresses = [self.settings.address]
        policy = ListenPolicy(
            addresses=addresses, hostname=listen.hostname or self.settings.domain,
            max_connections=listen.max_connections,
            max_connections_per_ip=listen.max_connections_per_ip,
            timeout_seconds=listen.timeout_seconds, tls_cert=listen.tls_cert,
            tls_key=listen.tls_key, require_tls=listen.require_tls,
            authserv_id=self.settings.security.authserv_id,
            dns_servers=tuple(listen.dns_servers), trusted_relays=tuple(listen.trusted_relays),
            mails_per_minute_per_ip=listen.mails_per_minute_per_ip,
            mails_per_minute_per_sender=listen.mails_per_minute_per_sender)
        return MailListener(self.store_received, host=listen.host, port=listen.port,
                            max_bytes=self.settings.max_mail_bytes, policy=policy)

    def _known_sender(self, raw: bytes) -> bool:
        """Is the mail's From the referee, a player, a watcher or a confirmed sign-up?"""
        sender = parseaddr(read_mail_header(raw).text("From") or "")[1].strip().lower()
        if not sender:
            return False
        if sender == self.settings.referee.lower():
            return True
        with Session(self.engine) as session:
            return known_address(session, sender)

    def loop_stalled(self) -> float | None:
        """How long the ticks have shown no progress (no tick began, ended or went on to
        its next part), when that is longer than [server] late_tick_seconds; else None."""
        quiet = self.progress.quiet()
        return quiet if quiet > self.settings.tick_late_after else None

    def watch_loop(self, stop: threading.Event) -> None:
        """serve's main thread until ``stop``: tells systemd it is ready (READY=1), then,
        at half the watchdog's time (WatchdogSec), that it is alive (WATCHDOG=1) as long
        as the ticks make progress (loop_stalled), and what it does (STATUS=). A stalled
        tick loop stops the pings: systemd restarts the service after WatchdogSec."""
        watchdog = watchdog_seconds()
        notify("READY=1", "STATUS=serving: the first tick is under way")
        every = watchdog / 2 if watchdog else STATUS_EVERY
        told = False   # of the stall now
        while not stop.wait(every):
            stalled = self.loop_stalled()
            if stalled is not None:
                if not told:
                    log.error("the ticks have made no progress for %.0f s: is a tick stuck?%s",
                              stalled, " (systemd's watchdog is no longer told that pbem is "
                              "alive)" if watchdog else "")
                told = True
                notify(f"STATUS=stalled: no tick progress for {stalled:.0f} s")
                continue
            if told:
                log.warning("the ticks make progress again")
            told = False
            report = self._last_report
            status = f"STATUS=serving; last tick: {report}" if report else "STATUS=serving"
            notify(*(["WATCHDOG=1"] if watchdog else []), status)

    def serve(self, stop: threading.Event | None = None) -> None:
        """Run until SIGTERM/SIGINT (or stop is set); a clean stop finishes the mail in hand.
        Raises SchemaError once a newer pbem has upgraded the database."""
        self.start_up()
        stop = self._stop = stop or threading.Event()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
        listener = self.listener()
        if listener is not None:
            listener.start()
            log.info("listening for mail on %s:%s", self.settings.listen.host if
                     self.settings.listen else "", listener.port)
        scheduler = poll_scheduler(self.settings.tick_seconds, self.safe_tick, self.safe_send,
                                   self.clock())
        scheduler.add_job(self.prune, "interval", hours=1, id="prune",
                          next_run_time=datetime.now(UTC) + timedelta(seconds=PRUNE_AFTER))
        woken = threading.Thread(target=self.tick_when_woken, args=(stop,),
                                 name="pbem-woken-ticks", daemon=True)
        watch = MailWatch(self.engine, self._woken.set, stop)
        idle = self.fetcher.idle_watch(self._woken.set, stop)   # mail in the [imap] folder
        scheduler.start()
        woken.start()
        watch.start()
        if idle is not None:
            idle.start()
        try:
            self.watch_loop(stop)
        finally:
            notify("STOPPING=1", "STATUS=stopping: finishing the mail in hand")
            scheduler.shutdown(wait=True)   # lets a running tick finish
            woken.join()
            watch.join()
            if idle is not None:
                idle.join()
            if listener is not None:
                listener.stop()
            self.safe_tick()                # process what the listener took in last
            self.close()
        if self.stopped_by is not None:
            raise self.stopped_by
