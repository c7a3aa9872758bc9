"""The composer: a process of its own that renders and builds the turns' reports on the
other core, while the tick's thread handles the next orders (SQLite).

SQLite lets one transaction write at a time, and the tick's thread is that writer for
every mail it handles; rendering and building a turn's five reports was a third of its
work (docs/performance.md, "SQLite's second core"). The transaction that plays a turn
queues one draft instead (pbem.services.drafts); the composer, a fresh interpreter the
server starts (spawned, not forked: a fork copies the locks other threads of the server
hold at that moment, held for ever in the copy), opens its own engine and templates,
reads the drafts without taking any lock, makes each into its mails (rendered, built:
bytes ready to send) and sends them back down a pipe. The composer writes nothing: the tick's thread queues what came back in the transaction it
has open anyway (``Composing``, its hand-off: the draft deleted, its mails queued and
claimed in one go) and sends them as it sends the rest. At its end the tick waits for
what the composer has not made yet (``finish``) and queues it, and makes any draft still
left itself (the composer gone, a transaction rolled back), so a tick ends with its mail
written, as without a composer.

A crash or a kill of either process leaves each draft either there (the next tick makes
it) or deleted with its mails queued, never both. The composer ends with its server (it
looks for its parent while idle). Starting it costs its process about a second and a half
of CPU (Python, pbem and the templates loaded again), once a server's life, at the first
tick that has ``[server] composer_from_turn`` turns (a smaller tick makes their reports
itself, each in the transaction that played the turn, no draft: Composing; it starts
nothing); as
multiprocessing's spawn does, it imports the main module of a script that runs a Server
again, which must keep its work under ``if __name__ == "__main__"`` (pbem's commands do).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import multiprocessing
import os
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from sqlalchemy import Engine

from pbem.services.drafts import (
    Compose,
    DraftTally,
    Failed,
    Made,
    make_waiting,
    queue_made,
)
from pbem.store.work import Work

log = logging.getLogger(__name__)

PAGE = 10               # drafts read at a time
IDLE_SECONDS = 0.005    # how often an idle composer looks for drafts
PIPE_BYTES = 1 << 20    # the pipe of what it made (Linux's most for a user: a megabyte)
FINISH_SECONDS = 600.0  # how long a tick waits for the composer to finish
_TICK, _FINISHED = "tick", "finished"

HandOff = Any   # a pbem.outbox Inline or Stream (claim before a commit, feed after, close)
# what the composer's process makes for itself: its engine and its compose; picklable (a
# module's function, or a functools.partial of one), as it is sent to a new interpreter
Parts = Callable[[], tuple[Engine, Compose]]


def cores() -> int:
    """The cores this process may run on: a composer wants a second one."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        return os.cpu_count() or 1


class Composer:
    """The composer process of a server: ``begin`` a tick, ``start`` it when the tick has
    enough drafts (Composing; a tick with fewer, an idle tick most of all, starts no process),
    take what it made (``ready``) as the tick goes, and ``finish`` at the tick's end. ``engine`` and
    ``compose``: the server's own (what the tick makes itself); ``parts``: how the
    composer's process makes its own."""

    def __init__(self, engine: Engine, compose: Compose, parts: Parts) -> None:
        self.engine, self.compose, self.parts = engine, compose, parts
        self._process: Any = None
        self._conn: Connection | None = None   # what the composer made
        self._ask: Connection | None = None    # what the tick asks of it
        self._asked = False                     # asked for this tick's drafts

    @property
    def asked(self) -> bool:
        """Asked for this tick's drafts (``start``)."""
        return self._asked

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.is_alive()

    @property
    def pid(self) -> int | None:
        """The composer's process id while it runs (bench/scale.py reads its memory)."""
        return int(self._process.pid) if self.running else None

    def begin(self) -> None:
        """A tick begins: the composer is asked for its drafts once it has enough turns
        (``start``, by Composing: a process started costs a second and a half of the
        other core's CPU, and the tick's drafts wait for it; a tick with fewer pays
        nothing: its turns' reports are made with them, no draft)."""
        self._asked = False

    def start(self) -> None:
        """The tick has drafts: the composer looks for drafts until it is asked to ``finish``
        (started first, or again if the last one died; between ticks it waits, reading
        nothing)."""
        self._asked = True
        if not self.running:
            self._spawn()
        try:
            if self._ask is not None:
                self._ask.send(_TICK)
        except OSError:
            log.error("the composer is gone; the tick makes the reports itself")
            self.stop()

    def _spawn(self) -> None:
        self.stop()
        # a new interpreter: nothing of this process's threads (a Stream's senders, the
        # IMAP IDLE, the scheduler) nor of their locks (a template cache's, a pool's)
        context = multiprocessing.get_context("spawn")
        # one pipe each way: what it made comes back in a pipe of a megabyte, so that it
        # runs a few turns ahead of the tick's thread without waiting for it to read
        made_out, made_in = context.Pipe(duplex=False)
        asked_out, asked_in = context.Pipe(duplex=False)
        with contextlib.suppress(OSError):
            fcntl.fcntl(made_in.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
        self._process = context.Process(target=_serve,
                                        args=(self.parts, asked_out, made_in, os.getpid()),
                                        name="pbem-composer", daemon=True)
        self._process.start()
        made_in.close()
        asked_out.close()
        self._conn, self._ask = made_out, asked_in

    def ready(self) -> list[Made]:
        """What the composer has made and the tick has not taken yet (waits for nothing)."""
        made: list[Made] = []
        conn = self._conn
        try:
            while conn is not None and conn.poll(0):
                item = conn.recv()
                if isinstance(item, Made):
                    made.append(item)
        except (EOFError, OSError):
            log.error("the composer is gone; the tick makes the rest of the reports itself")
            self._conn = None
        return made

    def finish(self, timeout: float = FINISH_SECONDS) -> list[Made]:
        """Everything the composer made, once it has made every draft committed before
        this call (what it cannot make in ``timeout`` seconds, or at all, the caller
        makes itself)."""
        made = self.ready()
        conn, ask = self._conn, self._ask
        if conn is None or ask is None or not self._asked or not self.running:
            return made   # (not asked this tick: it waits between ticks, asked nothing)
        self._asked = False
        try:
            ask.send(_FINISHED)
            while conn.poll(timeout):
                item = conn.recv()
                if item == _FINISHED:
                    return made
                made.append(item)
        except (EOFError, OSError):
            pass
        log.error("the composer did not finish; the tick makes the rest of the reports itself")
        self.stop()
        return made

    def stop(self) -> None:
        process, ask = self._process, self._ask
        self._process = self._conn = self._ask = None
        if process is None:
            return
        try:
            if ask is not None:
                ask.send("stop")
        except OSError:
            pass
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join(5)


def _serve(parts: Parts, asked: Connection, conn: Connection, parent: int) -> None:
    """The composer's process: its own engine and templates, then tick after tick."""
    engine, compose = parts()
    try:
        while True:   # between ticks: waits to be asked, its parent's end ends it
            while not asked.poll(1.0):
                if os.getppid() != parent:
                    return
            if asked.recv() != _TICK:
                return
            if not _tick(engine, compose, asked, conn, parent):
                return
    except (EOFError, OSError):   # the server closed its ends (gone, or dropped us unasked)
        return


def _tick(engine: Engine, compose: Compose, asked: Connection, conn: Connection,
          parent: int) -> bool:
    """A tick's drafts, made and sent back as they come, until the tick asks it to
    finish; False: its parent is gone or it was asked to stop."""
    after = 0   # the newest draft made: the tick's thread deletes it when it takes it
    while True:
        made = make_waiting(engine, compose, limit=PAGE, after=after)
        for item in made:
            conn.send(item)
            after = item.draft_id
        if made:
            continue
        if os.getppid() != parent:
            return False
        if not asked.poll(IDLE_SECONDS):
            continue
        if asked.recv() != _FINISHED:
            return False
        while made := make_waiting(engine, compose, limit=PAGE, after=after):
            for item in made:
                conn.send(item)
                after = item.draft_id
        conn.send(_FINISHED)
        return True


class Composing:
    """The tick's hand-off with a composer: each handling transaction, just before its
    commit, also queues the drafts' mails the composer has made by then (the drafts
    deleted in the same transaction), then hands everything to the tick's own hand-off
    (``inner``; None: the tick's drain sends it at the end).

    The composer is asked only once the tick has reported ``from_turn`` turns: a process
    started costs a second and a half of CPU, which a tick of a few turns does not win
    back. Until then a transaction is told to make its turns' reports at once, with the
    turn, as if there were no composer (``drafting``: what the tick's transactions are
    told, pbem.runner.mail_transaction); from the ``from_turn``th turn on, to queue them as
    drafts, and the first transaction that does starts the composer."""

    def __init__(self, inner: HandOff | None, composer: Composer,
                 failed: Failed | None = None, *, from_turn: int = 1) -> None:
        self.inner, self.composer, self.failed = inner, composer, failed
        self.from_turn = from_turn
        self.turns = 0   # the turns the tick has reported so far
        self.done = DraftTally()

    def drafting(self) -> bool:
        """Whether the next transaction queues its turns' reports as drafts for the
        composer (else it makes them itself, with the turn)."""
        return self.composer.asked or self.turns + 1 >= self.from_turn

    def claim(self, work: Work) -> list[Any]:
        self.turns += len(work.reported)
        if work.drafts and not self.composer.asked:
            self.composer.start()   # committed next: the composer makes them
        made = self.composer.ready()
        if made:
            self.done.add(queue_made(work, made, self.failed))
        if self.inner is None:
            work.queued.clear()   # the tick's drain sends it
            return []
        claimed: list[Any] = self.inner.claim(work)
        return claimed

    def feed(self, rows: list[Any]) -> None:
        if self.inner is not None:
            self.inner.feed(rows)


def queue_in_pages(engine: Engine, made: list[Made], hand_off: HandOff | None,
              failed: Failed | None = None, *, page: int = 50) -> DraftTally:
    """Queue ``made`` (the composer's last, or the tick's own) ``page`` drafts a
    transaction, handed to ``hand_off`` as each commits."""
    done = DraftTally()
    for first in range(0, len(made), page):
        with Work(engine, keep_queued=hand_off is not None) as work:
            done.add(queue_made(work, made[first:first + page], failed))
            claimed = hand_off.claim(work) if hand_off is not None else []
            work.commit()
        if hand_off is not None:
            hand_off.feed(claimed)
    return done


def finish_tick(engine: Engine, composer: Composer, compose: Compose,
                hand_off: HandOff | None, failed: Failed | None = None) -> DraftTally:
    """The tick's end: what the composer made and the tick has not taken yet queued, then
    any draft still left made here and queued (the composer gone, a transaction that
    took some rolled back, drafts a crash left)."""
    done = queue_in_pages(engine, composer.finish(), hand_off, failed)
    done.add(make_left(engine, compose, hand_off, failed))
    return done


def make_left(engine: Engine, compose: Compose, hand_off: HandOff | None,
              failed: Failed | None = None) -> DraftTally:
    """Every draft still waiting made here and queued (by a tick with no composer: a
    server without a second core, or whose compose_apart is off now, finds the drafts a
    crash left)."""
    done = DraftTally()
    while made := make_waiting(engine, compose, limit=50):
        done.add(queue_in_pages(engine, made, hand_off, failed))
    return done

