"""SIGTERM and SIGINT turned into serve's stop event without a lock in the handler.

A Python signal handler runs in the main thread between two of its bytecodes, and that
may be while the main thread holds the very lock the handler wants: serve's main thread
spends its life in ``stop.wait()``, and ``Event.wait`` holds the event's own (not
reentrant) lock for a few steps each time round. A handler that calls ``stop.set()``
there waits for that lock forever: serve never stops, and no further SIGTERM helps
(tests/runner/test_stop_signals.py shows it). So the handler here only writes the
signal's number to a pipe; a thread of its own reads it, says so in the log, and sets
the event, outside any handler.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType, TracebackType

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopOnSignals:
    """While entered (in the main thread): SIGTERM or SIGINT sets ``stop``. On leaving,
    the handlers that were there before are put back."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self._previous: dict[int, object] = {}
        self._pipe: tuple[int, int] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> StopOnSignals:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)   # the handler must never wait
        self._pipe = (read_end, write_end)
        self._reader = threading.Thread(target=self._read, args=(read_end,),
                                        name="pbem-stop-signals", daemon=True)
        self._reader.start()
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)   # type: ignore[arg-type]
        assert self._pipe is not None and self._reader is not None
        read_end, write_end = self._pipe
        os.close(write_end)                # the reader sees the end of the pipe
        self._reader.join()
        os.close(read_end)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        assert self._pipe is not None
        try:
            os.write(self._pipe[1], bytes([signum]))
        except BlockingIOError:            # a full pipe: stops enough are on their way
            pass

    def _read(self, read_end: int) -> None:
        while got := os.read(read_end, 64):
            for signum in got:
                log.info("%s: stopping once the mail in hand is done",
                         signal.Signals(signum).name)
            self.stop.set()
