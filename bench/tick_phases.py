"""Where a turn tick's time goes, part by part: used by ``bench/mail_throughput.py --phases``.

A turn tick (one that handles at least three mails: its last one resolves the turn, one
game at a time) is cut at the marks Server.tick makes for whoever times it (its
``marks`` argument): the fetch, each handled mail, the clock's work, the reports still to
make at its end, the wait for the last mails at the stream's close. For each part it
prints its wall time, how many cores the whole machine kept busy meanwhile (the relay
and Dovecot deliver on the same cores), and the CPU of the tick's own thread. A part
with the machine well under two cores busy is one where the other core waited.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

# the tag of each mark Server.tick makes (pbem.runner.referee.Marks), and the stretch it begins
PARTS = {
    "tick>": "the schema check",
    "fetch>": "fetching (IMAP, storing)",
    "fetch<": "before the first mail (leases, claims)",
    "mail>": "an order",
    "mail<": "between two mails",
    "clock>": "the clock's work",
    "clock<": "after the clock's work",
    "compose>": "the reports still to make (the composer's finish, drafts left)",
    "compose<": "the lease given back, asking what else is due",
    "close>": "waiting for the last mails to leave",
    "close<": "the end (the fetched mail's move settled)",
}
LAST = "the order that resolves the turn"
AFTER_LAST = "after it (failures told, the lease given back)"


@dataclass
class Phases:
    """The marks of every tick watched (``mark``, passed to Server.tick), and what they
    add up to."""

    busy: Callable[[], float]                       # core-seconds the machine was busy
    marks: list[tuple[str, float, float, float]] = field(default_factory=list)

    def mark(self, tag: str) -> None:
        """One of Server.tick's marks: when, the machine's busy time, the thread's CPU."""
        self._mark(tag)

    def _mark(self, tag: str) -> None:
        self.marks.append((tag, time.perf_counter(), self.busy(), time.thread_time()))

    def turn_ticks(self) -> list[list[tuple[str, float, float, float]]]:
        ticks, current = [], []
        for mark in self.marks:
            current.append(mark)
            if mark[0] == "tick<":
                ticks.append(current)
                current = []
        return [t for t in ticks if sum(m[0] == "mail>" for m in t) >= 3]

    def report(self) -> None:
        ticks = self.turn_ticks()
        if not ticks:
            print("no turn tick to cut into parts (one game at a time has them)")
            return
        parts: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        for tick in ticks:
            last = max(i for i, m in enumerate(tick) if m[0] == "mail>")
            for i, (start, end) in enumerate(zip(tick, tick[1:])):
                # every mark but a tick's end begins a part (a mark new to this
                # table: its tag)
                name = PARTS.get(start[0], start[0])
                if i == last:
                    name = LAST
                elif i == last + 1:
                    name = AFTER_LAST
                part = parts[name]
                part[0] += end[1] - start[1]
                part[1] += end[2] - start[2]
                part[2] += end[3] - start[3]
        whole = sum(t[-1][1] - t[0][1] for t in ticks)
        print(f"a turn tick, part by part ({len(ticks)} turn ticks, "
              f"{whole / len(ticks) * 1000:.0f} ms each):")
        print(f"  {'part':55s} {'wall':>8s} {'busy cores':>11s} {'tick CPU':>9s}")
        for name, (wall, busy, cpu) in sorted(parts.items(), key=lambda p: -p[1][0]):
            print(f"  {name:55s} {wall / len(ticks) * 1000:6.1f} ms "
                  f"{busy / wall if wall else 0.0:11.2f} {cpu / len(ticks) * 1000:6.1f} ms")
