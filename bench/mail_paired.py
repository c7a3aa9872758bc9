"""What if: the mail path's ratio with one thing changed, measured in pairs.

`bench/mail_throughput.py` measured twice, once with a change and once without, moves
more from one run to the next than most changes do. Here the change is a switch that
flips from one tick to the next within one run, so each half of the ticks shares the
machine's slow and fast moments with the other, and each half is set against its own
bare floor (the same mail redone right after each of its ticks):

    python3 bench/mail_paired.py --variant free-rendering [--runs 4] [--games 3]

Variants (what the "on" half of the ticks does differently):

- ``free-rendering``: the reports' text and HTML come from a cache (the latest ones the
  templates made, so about the same size) instead of the templates. Not a way to run a server:
  an upper bound on what any work on rendering could win. The players read their
  report.json, which is still made for each of them, so the games play as ever.
- ``switch-interval``: the interpreter lets another thread run every 0.5 ms instead of
  every 5 ms (``sys.setswitchinterval``): do the sending threads wait for the tick's?
- ``writer-reads``: the tick asks whether other mail is due (before its drain) in a
  transaction that takes SQLite's writer's turn, as before it only read.
- ``started-threads``: the tick's Stream starts its connections' threads itself, as
  before the server kept them from tick to tick (pbem.outbox.Workers).

A run's first tick starts the games, the costliest tick against its floor: it falls
on "off" in odd runs and on "on" in even ones. Each run prints, for each half: its
ticks, their time, their bare floor, the ratio and the CPU of the tick's own thread.
Needs Dovecot; run from the repository root.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import Session, col, select  # noqa: E402

from bench import mail_throughput  # noqa: E402
from bench.mail_throughput import Tick  # noqa: E402
from pbem.config import SmtpSettings  # noqa: E402
from pbem.outbox import Stream  # noqa: E402
from pbem.outbox.table import pending_due  # noqa: E402
from pbem.render.reports import Renderer  # noqa: E402
from pbem.runner import ticking  # noqa: E402
from pbem.store.claims import me  # noqa: E402
from pbem.store.models import OutboundMail  # noqa: E402


@dataclass
class Half:
    """The ticks a switch position was on for."""

    ticks: int = 0
    seconds: float = 0.0
    floor: float = 0.0
    thread_cpu: float = 0.0

    def line(self, name: str) -> str:
        return (f"{name:4s} ticks {self.ticks:3d}  tick {self.seconds:6.2f} s  "
                f"floor {self.floor:6.2f} s  ratio {self.seconds / self.floor:.3f}x  "
                f"tick's thread CPU {self.thread_cpu:5.2f} s")


def free_rendering() -> Callable[[bool], None]:
    """While on, Renderer.render gives a report the latest one the templates made (so
    its size follows the game's); the other mails are rendered as ever."""
    real = Renderer.render
    made: dict[str, tuple[str, str]] = {}
    state = {"on": False}

    def render(self: Renderer, name: str, context: Any, *args: Any,
               **kwargs: Any) -> tuple[str, str]:
        if not name.endswith("report"):
            return real(self, name, context, *args, **kwargs)
        if state["on"] and name in made:
            return made[name]
        made[name] = real(self, name, context, *args, **kwargs)
        return made[name]

    Renderer.render = render  # type: ignore[method-assign]
    return lambda on: state.__setitem__("on", on)


def switch_interval() -> Callable[[bool], None]:
    return lambda on: sys.setswitchinterval(0.0005 if on else 0.005)


def started_threads() -> Callable[[bool], None]:
    """While on, a tick's Stream starts its connections' threads itself, as before the
    server kept them (pbem.outbox.Workers)."""
    real = Stream.__init__
    state = {"on": False}

    def init(self: Stream, *args: Any, **kwargs: Any) -> None:
        if state["on"]:
            kwargs["workers"] = None
        real(self, *args, **kwargs)

    Stream.__init__ = init  # type: ignore[method-assign]
    return lambda on: state.__setitem__("on", on)


def others_due_as_a_writer() -> Callable[[bool], None]:
    """While on, the tick asks whether other mail is due (pbem.outbox.others_due) in a
    transaction that takes SQLite's writer's turn, as before it only read."""
    real = ticking.others_due
    state = {"on": False}

    def others_due(engine: Any, when: Any) -> bool:
        if not state["on"]:
            return real(engine, when)
        with Session(engine) as session:
            return session.execute(select(OutboundMail.id).where(
                *pending_due(when), col(OutboundMail.claimed_by).is_(None)
                | (col(OutboundMail.claimed_by) != me())).limit(1)).first() is not None

    ticking.others_due = others_due
    return lambda on: state.__setitem__("on", on)


VARIANTS = {"free-rendering": free_rendering, "switch-interval": switch_interval,
            "started-threads": started_threads, "writer-reads": others_due_as_a_writer}


def paired(switch: Callable[[bool], None], first: bool,
           halves: dict[bool, Half]) -> Callable[[Tick], None]:
    """Set ``switch`` to ``first`` for the first tick, then flip it after every tick;
    each tick's figures (its floor's included) go to its half: mail_throughput.measure's
    each_tick."""
    position = [first]
    switch(first)

    def each_tick(tick: Tick) -> None:
        half = halves[position[0]]
        half.ticks += 1
        half.seconds += tick.seconds
        half.thread_cpu += tick.thread_cpu
        half.floor += tick.floor
        position[0] = not position[0]
        switch(position[0])

    return each_tick


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--games", type=int, default=3)
    args = parser.parse_args()
    switch = VARIANTS[args.variant]()
    run_args = argparse.Namespace(games=args.games, side_by_side=1,
                                  relay_processes=mail_throughput.RELAY_PROCESSES,
                                  connections=SmtpSettings.connections,
                                  composer_from=None, no_compose=False, one_shot=False)
    for run in range(1, args.runs + 1):
        # a run's first tick (the games' start, the costliest against its floor) falls
        # on each half in turn
        halves = {False: Half(), True: Half()}
        try:
            mail_throughput.measure(run_args, paired(switch, run % 2 == 0, halves))
        finally:
            switch(False)
        print(f"run {run}:")
        print("  " + halves[False].line("off"))
        print("  " + halves[True].line("on"), flush=True)


if __name__ == "__main__":
    main()
