"""The tick loop's heartbeat, and the marks of a tick's parts.

serve's watchdog (pbem.runner.server.Server.loop_stalled) tells systemd the server is alive
only while the ticks go on: a tick begun or ended, a mail handled, a game's clock work done.
What goes on says so by a call down to here (``Progress.beat``, or the ``Marks`` that
``Progress.marking`` gives), never by calling back up into the server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# Marks a tick's parts for whoever times them (bench/tick_phases.py): called with a tag
# as each part begins ("fetch>", "mail>", "clock>", "close>") and ends ("...<").
Marks = Callable[[str], None]


def unmarked(tag: str) -> None:
    """The marks of a tick nobody times."""


@dataclass
class Progress:
    """When the tick loop last went on (time.monotonic)."""

    at: float = field(default_factory=time.monotonic)

    def beat(self) -> None:
        self.at = time.monotonic()

    def quiet(self) -> float:
        """Seconds since the loop last went on."""
        return time.monotonic() - self.at

    def marking(self, marks: Marks) -> Marks:
        """``marks`` that beat too: each part of a tick begun or ended is progress."""
        def marked(tag: str) -> None:
            self.beat()
            marks(tag)
        return marked
