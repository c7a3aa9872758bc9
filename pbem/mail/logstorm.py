"""Log storms collapsed: the same message again within a second is counted, not written.

An attack (or a resource running out) can make the listener's libraries log the same
error thousands of times a second; that fills the disk and hides everything else. This
filter lets one record of a kind through each second and says, on the next one let
through, how many were held back meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["StormFilter"]


class StormFilter(logging.Filter):
    def __init__(self, seconds: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.seconds, self.clock = seconds, clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self.clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.seconds:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            if len(self._last) > 1000:     # forget old kinds: bounded memory
                self._last.clear()
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} (and {held} more like it held back)"
        if last is not None and held and record.exc_info:
            record.exc_info = None          # one traceback a kind is enough
            record.exc_text = None
        return True
