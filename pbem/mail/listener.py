"""The embedded SMTP listener (aiosmtpd): accepts mail directly, without a mailbox.

A message is answered with 250 only after ``store(raw, envelope_from, rcpts)`` has
returned (it runs in a worker thread and must save durably). If ``store`` raises
``MailRefused`` the client gets its reply (a quota's 452, say); any other error gives
``451 4.3.0`` and the client retries later, so nothing is lost.

It is fit to face the internet (docs/deliverability.md, "Exposing the listener"):
mail only for the server's own addresses (pbem.mail.recipients), caps on
connections and on the memory of each (pbem.mail.smtpguard), log storms collapsed
(pbem.mail.logstorm), STARTTLS with a configured certificate, a greeting with the
configured host name and no software version, and, for mail that did not come
through a trusted relay of ours, every Authentication-Results header replaced by
the results of our own SPF, DKIM and DMARC checks (pbem.mail.arrival_auth).
"""
from __future__ import annotations

import asyncio
import logging
import resource
import socket
import ssl
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aiosmtpd.controller import Controller

from pbem.mail.arrival_auth import stamp
from pbem.mail.dnsquery import Resolver
from pbem.mail.logstorm import StormFilter
from pbem.mail.recipients import Recipients
from pbem.mail.smtpguard import Gate, GuardedSMTP
from pbem.mail.throttle import IntakeThrottle

log = logging.getLogger(__name__)

StoreFn = Callable[[bytes, str, list[str]], None]

MAX_RECIPIENTS = 50          # RCPTs a mail (RFC 5321 asks for at least 100 of a relay)
MAX_REFUSED_RECIPIENTS = 10  # refused RCPTs a connection before it is closed
# open files the process needs besides the connections: its database, logs and pipes
# (some ten), and one burst of asyncio's accept loop, which takes up to the listen
# backlog (100) connections before it closes any refused one
SPARE_FILES = 256
# loggers whose storms are collapsed while a listener runs: aiosmtpd's, asyncio's, ours
_STORMY = ("mail.log", "asyncio", __name__, "pbem.mail.smtpguard")


class MailRefused(Exception):
    """Raised by a store to refuse a mail with this SMTP reply (``452 4.3.1 ...``)."""

    def __init__(self, reply: str) -> None:
        super().__init__(reply)
        self.reply = reply


@dataclass(frozen=True)
class ListenPolicy:
    """What the listener takes and how much (the [listen] settings, pbem.config)."""

    addresses: Sequence[str]               # the server's own address(es)
    hostname: str = ""                     # in the greeting; default: the address's domain
    max_connections: int = 100
    max_connections_per_ip: int = 10
    timeout_seconds: float = 300.0
    tls_cert: str = ""
    tls_key: str = ""
    require_tls: bool = False
    # our SPF/DKIM/DMARC checks write Authentication-Results with this id (none: no checks)
    authserv_id: str = ""
    dns_servers: Sequence[str] = ()
    # peers whose Authentication-Results are kept (our own mail servers that forward)
    trusted_relays: Sequence[str] = field(default_factory=tuple)
    # mails a client IP / an envelope sender may hand over a minute (0: no limit)
    mails_per_minute_per_ip: int = 0
    mails_per_minute_per_sender: int = 0

    @property
    def banner_host(self) -> str:
        if self.hostname:
            return self.hostname
        domains = [a.rpartition("@")[2] for a in self.addresses if "@" in a]
        return domains[0] if domains else socket.getfqdn()


class _StoreHandler:
    def __init__(self, store: StoreFn, executor: ThreadPoolExecutor,
                 policy: ListenPolicy) -> None:
        self.store = store
        self.executor = executor
        self.policy = policy
        self.recipients = Recipients.of(policy.addresses)
        self.trusted = frozenset(policy.trusted_relays)
        self.resolver = Resolver(policy.dns_servers) if policy.authserv_id else None
        self.throttle = IntakeThrottle(policy.mails_per_minute_per_ip,
                                       policy.mails_per_minute_per_sender)

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str,
                          mail_options: list[str]) -> str:
        """A client past its mails a minute is told to come back later (451): a real MTA
        retries, so a person's mail is slowed, never lost; a flood is."""
        peer = session.peer if isinstance(session.peer, tuple) else ("", 0)
        ip = "" if str(peer[0]) in self.trusted else str(peer[0])
        refusal = self.throttle.admit(ip or None, address or None)
        if refusal is not None:
            log.info("slowed MAIL FROM %r from %r: %s", address, session.peer, refusal[:9])
            return refusal
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          rcpt_options: list[str]) -> str:
        refusal = self.recipients.refusal(address)
        if refusal is not None:
            refused = getattr(session, "pbem_refused", 0) + 1
            session.pbem_refused = refused
            log.info("refused RCPT %r from %r: %s", address, session.peer, refusal[:9])
            if refused > MAX_REFUSED_RECIPIENTS:
                server.loop.call_soon(_close, server)
                return "421 4.7.0 Too many refused recipients, closing the connection"
            return refusal
        if len(envelope.rcpt_tos) >= MAX_RECIPIENTS:
            return "452 4.5.3 Too many recipients"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        loop = asyncio.get_running_loop()
        raw = envelope.original_content
        if raw is None:
            raw = envelope.content if isinstance(envelope.content, bytes) else b""
        mail_from = envelope.mail_from or ""
        rcpts = list(envelope.rcpt_tos)
        peer = session.peer if isinstance(session.peer, tuple) else ("", 0)
        ip = str(peer[0]) if peer else ""
        helo = str(session.host_name or "")

        def checked_and_stored() -> None:   # one hop to a worker thread: DNS and disk block
            mail = raw if ip in self.trusted else stamp(
                raw, authserv_id=self.policy.authserv_id, ip=ip, helo=helo,
                mail_from=mail_from, resolver=self.resolver)
            self.store(mail, mail_from, rcpts)

        try:
            await loop.run_in_executor(self.executor, checked_and_stored)
        except MailRefused as refused:
            log.info("refused a mail from %r: %s", mail_from, refused.reply)
            return refused.reply
        except Exception:
            log.exception("storing a mail from %r for %r failed; answered 451", mail_from,
                          rcpts)
            return "451 4.3.0 Temporary failure storing the message, try again later"
        return "250 2.0.0 OK: message stored"


def _close(server: Any) -> None:
    if server.transport is not None:
        server.transport.close()


def _connections_allowed(wanted: int) -> int:
    """The connection cap that the open-files limit allows: the soft limit is raised
    toward the hard one when needed; if that is not enough the cap is lowered (a
    connection refused with 421 beats accept() failing for everyone, players too)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(hard, need)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < need:
        allowed = max(1, soft - SPARE_FILES)
        log.warning("[listen] max_connections %d is more than the open-files limit (%d) "
                    "allows: at most %d connections at once (raise LimitNOFILE)",
                    wanted, soft, allowed)
        return allowed
    return wanted


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _tls_context(policy: ListenPolicy) -> ssl.SSLContext | None:
    if not policy.tls_cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(policy.tls_cert, policy.tls_key)
    return context


class _Controller(Controller):
    """aiosmtpd's controller making our guarded protocol (Controller.factory is its hook)."""

    def __init__(self, handler: _StoreHandler, gate: Gate, **kwargs: Any) -> None:
        self.gate = gate
        super().__init__(handler, **kwargs)

    def factory(self) -> GuardedSMTP:
        return GuardedSMTP(self.handler, gate=self.gate, **self.SMTP_kwargs)


class MailListener:
    """SMTP server on host:port (port 0 picks a free port; see ``port`` after start)."""

    def __init__(self, store: StoreFn, host: str = "127.0.0.1", port: int = 2525,
                 max_bytes: int = 10_000_000, *, policy: ListenPolicy) -> None:
        self.store = store
        self.host = host
        self.port = port
        self.max_bytes = max_bytes
        self.policy = policy
        self.gate = Gate(_connections_allowed(policy.max_connections),
                         policy.max_connections_per_ip)
        self._controller: Controller | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._storms = StormFilter()

    def __repr__(self) -> str:
        return f"MailListener({self.host}:{self.port})"

    def __enter__(self) -> MailListener:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._controller is not None:
            return
        tls = _tls_context(self.policy)   # a missing or wrong certificate stops us here
        executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pbem-smtp-store")
        handler = _StoreHandler(self.store, executor, self.policy)
        want = self.port
        attempts = 5 if want == 0 else 1
        last: Exception | None = None
        for _ in range(attempts):
            port = want or _free_port(self.host)
            ctl = _Controller(handler, self.gate, hostname=self.host, port=port,
                              server_hostname=self.policy.banner_host, ident="ESMTP",
                              data_size_limit=self.max_bytes, tls_context=tls,
                              require_starttls=self.policy.require_tls,
                              timeout=self.policy.timeout_seconds)
            ctl.loop.set_exception_handler(_loop_trouble)
            try:
                ctl.start()
            except OSError as e:  # the port was taken between choosing and binding
                last = e
                try:
                    ctl.stop(no_assert=True)
                except Exception:
                    pass
                continue
            self._controller, self._executor, self.port = ctl, executor, port
            for name in _STORMY:
                logging.getLogger(name).addFilter(self._storms)
            log.info("%r: listening", self)
            return
        executor.shutdown(wait=False)
        raise OSError(f"cannot listen for SMTP on {self.host}:{want}: {last}")

    def stop(self) -> None:
        """Stop accepting, then wait for stores that are still running."""
        ctl, self._controller = self._controller, None
        executor, self._executor = self._executor, None
        if ctl is not None:
            ctl.stop()
            for name in _STORMY:
                logging.getLogger(name).removeFilter(self._storms)
        if executor is not None:
            executor.shutdown(wait=True)


def _loop_trouble(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The listener loop's unhandled errors (an accept() out of file descriptors, say),
    through our logger: its storms are collapsed like the rest."""
    exc = context.get("exception")
    log.error("SMTP listener: %s", context.get("message", "unhandled error"),
              exc_info=(type(exc), exc, exc.__traceback__) if exc is not None else None)
