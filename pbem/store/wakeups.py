"""Waking the workers when mail is stored, so none waits for its next tick.

A worker ticks every poll_seconds; mail another worker fetched, or a listener took
in, would wait for that (a minute, by default). On PostgreSQL the transaction that
stores mail also NOTIFYs a channel, which PostgreSQL delivers when it commits and
once however many mails it stored; every `pbem serve` LISTENs on a connection of its
own (MailWatch) and ticks at once. SQLite has one worker, which its own listener
wakes (pbem.runner.server). A missed wake costs nothing but time: the ticks go on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, text
from sqlmodel import Session

from pbem.store.advisory_locks import lanes_apart

log = logging.getLogger(__name__)

CHANNEL = "pbem_mail_stored"
_NOTIFY = text(f"NOTIFY {CHANNEL}")
RECONNECT_SECONDS = 5.0   # after the watch's connection was lost


def tell_stored(session: Session) -> None:
    """In a transaction that stores mail: the workers are woken once it commits
    (PostgreSQL; nothing on SQLite)."""
    connection = session.connection()
    if lanes_apart(connection.engine):   # the workers that share the work
        connection.execute(_NOTIFY)


class MailWatch:
    """A thread that LISTENs for stored mail on a connection of its own and calls
    ``woken`` for each notification, until ``stop`` is set. On SQLite it is never
    started (``wanted`` is False)."""

    def __init__(self, engine: Engine, woken: Callable[[], object],
                 stop: threading.Event) -> None:
        self.engine, self.woken, self.stop = engine, woken, stop
        self._thread: threading.Thread | None = None
        self._listening = threading.Event()   # the first LISTEN is done

    @property
    def wanted(self) -> bool:
        return lanes_apart(self.engine)   # several workers: PostgreSQL

    def start(self) -> None:
        if self.wanted:
            self._thread = threading.Thread(target=self._run, name="pbem-mail-watch",
                                            daemon=True)
            self._thread.start()

    def until_listening(self, seconds: float) -> bool:
        """Wait, at most ``seconds``, until the watch LISTENs (at once if it is not
        started): a NOTIFY before that is lost to it. serve waits so before its first
        tick, which then finds any mail stored before, and a wake any mail after."""
        return self._thread is None or self._listening.wait(seconds)

    def join(self, timeout: float = 5.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self._listen()
            except Exception as exc:   # the ticks go on meanwhile: only time is lost
                log.warning("not woken when mail is stored (%s); listening again in %.0f s",
                            " ".join(str(exc).split())[:200], RECONNECT_SECONDS)
                self.stop.wait(RECONNECT_SECONDS)

    def _listen(self) -> None:
        import psycopg  # the PostgreSQL driver: only installed with pbem[postgres]
        url = self.engine.url.set(drivername="postgresql")
        conn: Any = psycopg.connect(url.render_as_string(hide_password=False),
                                    autocommit=True)
        with conn:
            conn.execute(f"LISTEN {CHANNEL}")
            self._listening.set()
            while not self.stop.is_set():
                for _ in conn.notifies(timeout=1.0):
                    self.woken()
