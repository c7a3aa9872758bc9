"""Threads kept for a server's Streams: each tick's sending runs on threads that wait
between ticks, instead of threads started for each tick.

A thread started costs the tick's thread its wait until the new thread runs (Thread.start
waits for it): a fraction of a millisecond on an idle machine, a few on a busy one, and a
Stream started up to ``[smtp] connections`` of them a tick (bench/mail_throughput.py:
docs/performance.md, "mail8"). A job handed to ``Workers.run`` runs on an idle kept thread,
or on a new one when none is idle; the caller waits for it with the ``Job`` it gets back.
What a job reads and writes is in its arguments: the kept threads carry nothing from one
job to the next. They are daemons, as the Stream's own threads were: a job that never
ends (a Stream never closed) does not keep the process from exiting.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

# a kept thread idle this long ends (a server that has stopped sending, or one never
# closed, keeps no thread for ever); the next job starts another
IDLE_SECONDS = 300.0


class Job:
    """A job handed to a kept thread: ``wait`` until it has returned (or raised: the job
    tells its caller of its errors itself, as a Stream's connections do)."""

    def __init__(self, work: Callable[[], object]) -> None:
        self.work = work
        self._done = threading.Event()

    def run(self) -> None:
        try:
            self.work()
        except BaseException:   # noqa: BLE001 - the thread goes on to the next job
            log.exception("a sending job failed")
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


class Workers:
    """The kept threads (named ``name-N``); ``close`` ends the idle ones, and each busy
    one once its job is over; one idle for ``idle_seconds`` ends by itself. Closed, they
    still take jobs, on threads started anew (a server closed between ticks, which drops
    its kept connections, ticks again)."""

    def __init__(self, name: str = "pbem-send", idle_seconds: float = IDLE_SECONDS) -> None:
        self.name, self.idle_seconds = name, idle_seconds
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Job | None]] = []   # each idle thread's inbox
        self._started = 0
        self._generation = 0   # raised by close: a thread of an older one ends after its job

    @property
    def started(self) -> int:
        """Threads started so far (a kept one is started once)."""
        return self._started

    def run(self, work: Callable[[], object]) -> Job:
        """Run ``work`` on an idle kept thread, or a new one."""
        job = Job(work)
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
            if inbox is None:
                inbox = queue.SimpleQueue()
                self._started += 1
                thread = threading.Thread(target=self._serve,
                                          args=(inbox, self._generation),
                                          name=f"{self.name}-{self._started}", daemon=True)
                thread.start()
        inbox.put(job)
        return job

    def _serve(self, inbox: queue.SimpleQueue[Job | None], generation: int) -> None:
        while True:
            try:
                job = inbox.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if inbox not in self._idle:
                        continue   # just handed a job: it is in the inbox
                    self._idle.remove(inbox)   # idle too long: ends (a new one starts)
                    return
            if job is None:
                return
            job.run()
            with self._lock:
                if generation != self._generation:
                    return   # closed while it worked
                self._idle.append(inbox)

    def close(self) -> None:
        """End the kept threads (a busy one after its job)."""
        with self._lock:
            self._generation += 1
            idle, self._idle = self._idle, []
        for inbox in idle:
            inbox.put(None)
