"""How fast one client may hand mail to the embedded SMTP listener.

One client delivered 4,000 mails at 361 a second, each stored and answered. An
``IntakeThrottle`` counts the mails each client IP and each envelope sender handed over
within a sliding window; past the limit of either, ``admit`` gives the SMTP reply to
send instead (451 4.7.1: a real MTA retries later, so a burst is slowed and nothing a
person sent is lost). Counts live in memory, in the listener's process (they need not
outlive it), bounded in keys and in times kept per key. Pure: the standard library only;
the clock is given.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

#: what a client past its limit is told: try again later (RFC 3463 4.7.1, RFC 5321 451)
SLOW_DOWN = "451 4.7.1 Too many mails from {what} just now, try again later"


class SlidingCounts:
    """Events per key within the last ``window`` seconds, at most ``most`` a key; at most
    ``max_keys`` keys are kept (the least recently seen is forgotten first)."""

    def __init__(self, most: int, window: float, max_keys: int = 100_000) -> None:
        self.most, self.window, self.max_keys = most, window, max_keys
        self._times: OrderedDict[str, deque[float]] = OrderedDict()

    def take(self, key: str, now: float) -> bool:
        """Count an event of ``key`` at ``now`` if it is within the limit; False if not
        (nothing counted)."""
        times = self._times.get(key)
        if times is None:
            times = self._times[key] = deque()
            while len(self._times) > self.max_keys:
                self._times.popitem(last=False)
        self._times.move_to_end(key)
        while times and times[0] <= now - self.window:
            times.popleft()
        if len(times) >= self.most:
            return False
        times.append(now)
        return True

    def __len__(self) -> int:
        return len(self._times)


class IntakeThrottle:
    """Mails a client IP and an envelope sender may hand over a window; 0: no limit."""

    def __init__(self, per_ip: int, per_sender: int, window: float = 60.0, *,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000) -> None:
        self._ips = SlidingCounts(per_ip, window, max_keys) if per_ip > 0 else None
        self._senders = SlidingCounts(per_sender, window, max_keys) if per_sender > 0 else None
        self._clock = clock
        self._lock = threading.Lock()   # safe from the event loop and worker threads alike

    def admit(self, ip: str | None, sender: str | None) -> str | None:
        """None to take the mail, else the SMTP reply to give instead. A mail refused for
        its IP is not counted for its sender; one refused for its sender still counts for
        its IP (that client did send it)."""
        now = self._clock()
        with self._lock:
            if self._ips is not None and ip and not self._ips.take(ip, now):
                return SLOW_DOWN.format(what="your address")
            if self._senders is not None and sender and \
                    not self._senders.take(sender.lower(), now):
                return SLOW_DOWN.format(what="this sender")
        return None
