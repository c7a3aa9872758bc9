"""Postal games over the real mail stack whose ticks are SIGKILLed at random moments.

A ``KilledGame`` is a started postal game (five players, the stack's p1..p5). Each
round its players reply to their newest report with an order (testkit's robot
client), then one tick is run in a forked child (testkit/crash.py's zygote) that is
SIGKILLed at a random moment of its work, as a restart, an OOM killer or a deploy
would, then full ticks until all is handled and sent. ``round`` says what it took:
whether the kill landed (the tick may have finished first) and how many full ticks
the catch-up needed (one, if a kill costs nothing but time).

Used by tests/e2e/test_kills.py (a few games) and bench/kills.py (many).
Plain module (no pytest import).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from pbem.config import load_settings
from pbem.demo.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.games.records import find_game
from pbem.runner.server import Server
from pbem.store.models import InboundMail, OutboundMail
from testkit.crash import Zygote
from testkit.stack import stack_config
from testkit.stored import inbound_rows

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
KEY = "kills-referee-key"


@dataclass
class Round:
    """One round of a killed game: the kill, and the catch-up after it."""

    kills: int                   # the kills that landed (a tick may finish first)
    ticks_to_catch_up: int       # full ticks until nothing was left to handle or send
    turn_before: int
    turn_after: int


@dataclass
class Tally:
    """What many rounds came to (bench/kills.py prints it)."""

    kills: int = 0
    rounds: int = 0
    orders_set_aside: int = 0
    most_ticks_to_catch_up: int = 0
    catch_ups: list[int] = field(default_factory=list)

    def add(self, done: Round) -> None:
        self.rounds += 1
        self.kills += done.kills
        self.catch_ups.append(done.ticks_to_catch_up)
        self.most_ticks_to_catch_up = max(self.most_ticks_to_catch_up, done.ticks_to_catch_up)


class KilledGame:
    """A started postal game over the stack whose ticks the caller kills."""

    def __init__(self, stack: Any, workdir: Path, zygote: Zygote, *, seed: int,
                 database: str | None = None, options: str = "") -> None:
        self.stack, self.zygote, self.rng = stack, zygote, random.Random(seed)
        for user in ["bluff", "referee", *PLAYERS]:
            stack.clear(user)
        database = database or f"sqlite:///{workdir / 'pbem.db'}"
        self.config = stack_config(workdir / "pbem.toml", stack, database, KEY)
        self.server = Server(load_settings(self.config))
        setup = [f"NEWGAME g1 SEED {seed} {options}".strip()]
        setup += [f"ADD g1 {stack.address(u)} Player-{u}" for u in PLAYERS] + ["START g1"]
        for line in setup:
            self.server.referee.admin(line.split())
        self.tick_seconds = 0.5        # how long the last full tick took (the kill's range)
        self.reports: dict[str, Any] = {}   # each player's newest report
        self.answer_due: set[str] = set()   # players who send again (resend)
        self.catch_up()
        self.orders = 0

    def turn(self) -> int:
        with Session(self.server.engine) as session:
            return find_game(session, "g1").turn

    def running(self) -> bool:
        with Session(self.server.engine) as session:
            return find_game(session, "g1").status == "running"

    def send_orders(self, poison: dict[str, str] | None = None) -> int:
        """Each player with a new report replies to it with an order (a player whose
        mail was set aside replies to the report before again); how many did. ``poison``:
        a line to add to a player's mail."""
        sent = 0
        for user in PLAYERS:
            reports = [m for m in (parse_mail(r) for r in self.stack.fetch_all(user))
                       if m["In-Reply-To"] is None and report_view(m) is not None]
            self.stack.clear(user)
            if reports:
                self.reports[user] = reports[-1]
            elif user not in self.answer_due:
                continue
            report = self.reports[user]
            view = report_view(report)
            assert view is not None
            lines = client_order_lines(view, self.rng)
            if not lines:
                continue
            extra = [(poison or {})[user]] if user in (poison or {}) else []
            raw = reply_to(report, self.stack.address(user),
                           ["Here goes:", *lines, *extra, "Cheers"])
            self.stack.deliver("bluff", raw, mail_from=self.stack.address(user))
            self.answer_due.discard(user)
            sent += 1
        if sent:
            self.stack.wait_for("bluff", sent)
        self.orders += sent
        return sent

    def resend(self, user: str) -> None:
        """``user`` sends an order again at the next send_orders (to the report before)."""
        self.answer_due.add(user)

    def kill_a_tick(self) -> bool:
        """One tick, SIGKILLed at a random moment of it; whether the kill landed."""
        delay = self.rng.uniform(0.0, self.tick_seconds)
        (status,) = self.zygote.run(self.config, kill_after=delay)
        assert status in (0, -9), f"the killed tick ended with {status}"
        return status == -9

    def catch_up(self, most: int = 5) -> int:
        """Full ticks until nothing is left to handle or send; how many it took."""
        for count in range(1, most + 1):
            started = time.monotonic()
            assert self.zygote.tick(self.config) == 0
            if count == 1:   # the tick that did the round's work: the next kills within it
                self.tick_seconds = time.monotonic() - started
            if self.all_done():
                return count
        raise AssertionError(f"{most} full ticks did not catch up: {self.left()}")

    def left(self) -> dict[str, int]:
        """What is not done: stored mail new, queued mail not sent, mail in the folder."""
        with Session(self.server.engine) as session:
            new = len(session.exec(select(InboundMail).where(InboundMail.status == "new")).all())
            unsent = len(session.exec(select(OutboundMail).where(
                OutboundMail.status != "sent")).all())
        return {"stored mail new": new, "mail unsent": unsent,
                "mail in the folder": len(self.stack.fetch_all("bluff"))}

    def all_done(self) -> bool:
        return not any(self.left().values())

    def round(self, most_kills: int = 3) -> Round | None:
        """Orders in, one to ``most_kills`` ticks killed in a row (a restart loop), the
        catch-up; None when nobody had an order to send."""
        before = self.turn()
        if not self.send_orders():
            return None
        kills = sum(self.kill_a_tick() for _ in range(self.rng.randint(1, most_kills)))
        ticks = self.catch_up()
        return Round(kills, ticks, before, self.turn())

    def set_aside(self) -> list[Any]:
        """The stored mails set aside (quarantined) so far (inbound_mail's columns, raw)."""
        return inbound_rows(self.server.engine, InboundMail.status == "quarantined")
