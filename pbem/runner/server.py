"""The imperative shell: wires the edges (IMAP, SMTP listener, SMTP out, clock) to the referee.

The shell: it may import every layer below (pbem.runner.ticking, pbem.runner.fetching,
pbem.runner.referee, pbem.outbox, the mail edges ...); nothing below imports it. ``utc_now``
is the clock source. A tick's work (fetch, handle, send) is pbem.runner.ticking's; here is
the process: its parts made and closed, the listener's store, and serve's loop (the
scheduler's jobs, the ticks woken by stored mail, systemd's watchdog).
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from email.utils import parseaddr
from functools import partial

from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Engine
from sqlmodel import Session

from pbem.config import ConfigError, Settings
from pbem.kinds import kind_template_dirs
from pbem.mail.dkim import DkimError, DkimSigner, load_signer
from pbem.mail.headers import read_mail_header
from pbem.mail.listener import ListenPolicy, MailListener, MailRefused
from pbem.mail.senderauth import aligned_domain
from pbem.mail.senders import Senders, SmtpAccount
from pbem.outbox import Workers
from pbem.render.reports import Renderer, TemplateProblem
from pbem.runner.composer import Composer, cores
from pbem.runner.fetching import Fetcher, oauth_login
from pbem.runner.junk import JUNK_SOURCE, JunkOverQuota, JunkTally
from pbem.runner.notify import notify, watchdog_seconds
from pbem.runner.referee import Referee
from pbem.runner.stop_signals import StopOnSignals
from pbem.runner.ticking import Ticking, TickReport
from pbem.services.drafts import Compose
from pbem.services.post import Post
from pbem.services.progress import Progress
from pbem.services.reports import composing
from pbem.store.advisory_locks import lanes_apart
from pbem.store.backup import BackupPlan
from pbem.store.db import SchemaError, open_database
from pbem.store.faults import crash_point
from pbem.store.security import known_address
from pbem.store.wakeups import MailWatch

log = logging.getLogger(__name__)
WOKEN_TICKS_APART = 0.1          # seconds at least between two ticks woken by stored mail
STATUS_EVERY = 30.0              # seconds between serve's STATUS= to systemd without a watchdog
LISTEN_WAIT = 10.0               # seconds serve waits for its MailWatch before the first tick
PRUNE_AFTER = 60.0               # serve's first look at [retention]: once the first ticks ran


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


class Server(Ticking):
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
        # signals go to the main thread only (tests run serve in threads of their own)
        in_main = threading.current_thread() is threading.main_thread()
        with StopOnSignals(stop) if in_main else nullcontext():
            self._serve_until(stop)

    def _serve_until(self, stop: threading.Event) -> None:
        """serve's parts started, its main thread in watch_loop until ``stop``, then each
        part stopped in turn and the mail in hand finished."""
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
        watch.start()
        if not watch.until_listening(LISTEN_WAIT):   # else mail stored meanwhile waits a poll
            log.warning("not yet woken when mail is stored: the ticks go on by the clock")
        scheduler.start()
        woken.start()
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
