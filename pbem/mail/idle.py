"""IMAP IDLE (RFC 2177): be told the moment mail arrives in the folder, not at the next
poll.

An IdleWatch is a thread with one connection of its own, IDLE on the folder (read
only: it never fetches nor moves). Each EXISTS the server reports calls ``woken``: the
worker ticks at once and polls the folder as it always does (its shares included:
pbem.runner.fetching), so IDLE only decides *when* to poll, never *what* is taken. A missed
EXISTS costs nothing but time: the timed polls go on.

IDLE is issued again every RENEW_SECONDS (RFC 2177: a server may drop a client idle
for 30 minutes). A dropped connection is made again with back-off (pbem.store.backoff),
and ``woken`` called once it is back (mail may have come meanwhile). A server without
the IDLE capability is left to the timed polls: the watch ends.
"""

from __future__ import annotations

import imaplib
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from imapclient import IMAPClient

from pbem.store.backoff import Backoff

from .errors import MailError
from .imap_connection import close_quietly

log = logging.getLogger(__name__)

RENEW_SECONDS = 29 * 60     # IDLE again this often (RFC 2177: before the 30-minute cut)
CHECK_SECONDS = 1.0         # how long one wait for the server's news lasts (stop is seen)


class IdleWatch:
    """A thread IDLE on ``folder`` over connections from ``connect``: ``woken`` is
    called for each batch of news that holds an EXISTS, until ``stop`` is set."""

    def __init__(self, connect: Callable[[], IMAPClient], folder: str,
                 woken: Callable[[], object], stop: threading.Event, *,
                 renew_seconds: float = RENEW_SECONDS,
                 backoff: Backoff | None = None) -> None:
        self.connect, self.folder, self.woken, self.stop = connect, folder, woken, stop
        self.renew_seconds = renew_seconds
        # a lost connection is tried again after 1, 2, 4 ... seconds, at most 5 minutes
        self.backoff = backoff or Backoff("IMAP IDLE", base=1.0, cap=300.0)
        self.supported: bool | None = None   # None: not known yet
        self.idles = 0                       # IDLE commands issued (renewals included)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pbem-imap-idle", daemon=True)
        self._thread.start()

    def join(self, timeout: float = 5.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                if not self._watch():
                    return   # no IDLE: the timed polls do it all
            except (MailError, OSError, imaplib.IMAP4.error, imaplib.IMAP4.abort) as exc:
                now = datetime.now(UTC)
                self.backoff.failed(now, f"the IDLE connection: {_short(exc)}")
                assert self.backoff.retry_at is not None
                self.stop.wait((self.backoff.retry_at - now).total_seconds())
            except Exception:   # never the thread's end: the polls go on, and so do we
                log.exception("IMAP IDLE failed; trying again")
                self.stop.wait(self.backoff.cap)

    def _watch(self) -> bool:
        """One connection's life: IDLE until ``stop`` (True), or False when the server
        cannot IDLE. Raises what the connection met."""
        client = self.connect()
        try:
            if b"IDLE" not in {c.upper() for c in client.capabilities()}:
                self.supported = False
                log.info("the IMAP server does not offer IDLE: new mail is fetched every "
                         "poll_seconds")
                return False
            self.supported = True
            client.select_folder(self.folder, readonly=True)
            self.backoff.succeeded()   # says "IMAP IDLE is back" after a failure
            self.woken()   # mail that came while nobody was idle
            while not self.stop.is_set():
                self._idle_once(client)
            return True
        finally:
            close_quietly(client)

    def _idle_once(self, client: IMAPClient) -> None:
        """One IDLE command, ended after renew_seconds (or at ``stop``)."""
        client.idle()
        self.idles += 1
        ends = time.monotonic() + self.renew_seconds
        while not self.stop.is_set() and time.monotonic() < ends:
            asked = time.monotonic()
            news = client.idle_check(timeout=CHECK_SECONDS)
            if any(_is_exists(item) for item in news):
                self.woken()
            # imapclient's idle_check swallows the end of the connection: it returns the
            # server's BYE, or nothing at once (the socket is readable: at its end)
            if any(_is_bye(item) for item in news) or \
                    (not news and time.monotonic() - asked < CHECK_SECONDS / 2):
                raise ConnectionError("the server closed the connection")
        # a failure above leaves the connection to be closed (_watch): no DONE then
        news = client.idle_done()[1]
        if any(_is_exists(item) for item in news):
            self.woken()


def _is_exists(item: object) -> bool:
    """``(3, b'EXISTS')``: the folder holds 3 mails (one came, or more)."""
    return isinstance(item, tuple) and len(item) >= 2 and item[1] == b"EXISTS"


def _is_bye(item: object) -> bool:
    return isinstance(item, tuple) and len(item) >= 1 and item[0] == b"BYE"


def _short(error: Exception) -> str:
    return " ".join(str(error).split())[:200] or type(error).__name__
