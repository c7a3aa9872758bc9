"""Backing off a service that failed (IMAP, SMTP, the database): when to try it again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from pbem.store.claims import aware
from pbem.text.wording import plural

log = logging.getLogger(__name__)

class Backoff:
    """When to try a service again after it failed: 30 s, 1, 2, 4 ... minutes, at most 15."""

    def __init__(self, name: str, base: float = 30.0, cap: float = 900.0,
                 on_change: Callable[[Backoff, str], None] | None = None) -> None:
        self.name = name
        self.base = base
        self.cap = cap
        self.failures = 0
        self.retry_at: datetime | None = None
        # told (the back-off, why) of each failure and of the first success after
        # failures: serve keeps it where `pbem status` reads it (pbem.services.health)
        self.on_change = on_change

    def ready(self, now: datetime) -> bool:
        return self.retry_at is None or aware(now) >= aware(self.retry_at)

    def failed(self, now: datetime, why: object) -> None:
        self.failures += 1
        wait = min(self.cap, self.base * 2 ** (self.failures - 1))
        self.retry_at = now + timedelta(seconds=wait)
        log.warning("%s unavailable (%s in a row): %s; next try in %.0f s", self.name,
                    plural("{n} time", "{n} times", self.failures), why, wait)
        if self.on_change is not None:
            self.on_change(self, str(why))

    def succeeded(self) -> None:
        if not self.failures:
            return
        log.info("%s is back after %d failed tries", self.name, self.failures)
        self.failures = 0
        self.retry_at = None
        if self.on_change is not None:
            self.on_change(self, "")
