"""Play N postal games over the real mail stack and measure the referee's mail path.

Prints mails processed per second by `pbem tick` (fetch + process + resolve +
send), and the ratio of tick's time to the bare cost of the same mail work
done directly: fetching the same inbound mails with imapclient (and moving
them, as tick does) and sending the same number of outbound mails with
smtplib, measured in the same run on the same Dovecot, tick by tick: right
after each tick, its own mails (so a slow moment of the machine weighs on both
figures alike; see Floor).

    python bench/mail_throughput.py [--games 3] [--side-by-side 1] [--relay-processes 2]
                                    [--connections 4] [--runs 1] [--phases]

Each game has five players of its own (five robots, each with an address a game), as
on a real server, where ten games are fifty players, not the same five ten times.

The test stack's SMTP relay runs in processes of its own (two by default), as
an MTA does: it does not share this interpreter, and it serves the tick's
connections (``[smtp] connections``) in parallel. The bare sending uses one
connection, the floor the issue sets.

It also prints where the CPU went: pbem's own (the tick's thread, and its sending
threads), and the machine's while the ticks ran and while the bare run did (the relay
and Dovecot deliver on the same cores). The tick's work spread over every core at
once, nothing waiting, is the shortest tick this machine could run with that much CPU
("tick's work / cores").

Needs Dovecot (dovecot-imapd, dovecot-lmtpd); run from the repository root.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import smtplib
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import Session, col  # noqa: E402

from bench.tick_phases import Phases  # noqa: E402
from pbem.config import ImapSettings, Settings, SmtpSettings  # noqa: E402
from pbem.demo.robot_client import client_order_lines, parse_mail, reply_to, report_view  # noqa: E402
from pbem.runner.server import Server, TickReport  # noqa: E402
from pbem.services.progress import Marks, unmarked  # noqa: E402
from pbem.store.models import InboundMail, OutboundMail  # noqa: E402
from testkit.mailstack import DEFAULT_DOMAIN, DEFAULT_USERS, MailStack  # noqa: E402
from testkit.stored import inbound_rows, outbound_rows  # noqa: E402

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
CORES = os.cpu_count() or 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
KEY = "bench-referee-key"
RELAY_PROCESSES = 2   # the test relay's processes, as an MTA's (--relay-processes)
# The bare run delivers a player's mail to a mailbox of its own: a Dovecot mailbox costs
# more a delivery as it fills, so the two runs fill mailboxes of their own alike.
FLOOR_USERS = [f"floor-{u}@{DEFAULT_DOMAIN}" for u in [*PLAYERS, "referee"]]


def floor_address(address: str) -> str:
    """Where the bare run sends a mail for ``address``: the floor mailbox of its user
    (p1+bench-0@ -> floor-p1+bench-0@), the same address but for the mailbox."""
    return f"floor-{address}"


def player_address(stack: MailStack, user: str, game: str) -> str:
    """A robot's address in one game: each game has five players of its own, as on a real
    server (user+game@: the robot's own mailbox, Dovecot drops the +detail)."""
    local, _, domain = stack.address(user).partition("@")
    return f"{local}+{game}@{domain}"


def machine_busy() -> float:
    """Core-seconds this machine has been busy (all processes; Linux /proc/stat), or
    NaN where there is none: the tick shares the cores with the relay and Dovecot."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(f) for f in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    # user, nice, system, irq, softirq: not idle, iowait, nor steal (another VM's)
    return (sum(fields[0:3]) + fields[5] + fields[6]) / CLOCK_TICKS


@dataclass
class Cpu:
    """Where the CPU of a stretch of time went: the tick's own thread, the whole pbem
    process (its sending threads too) and the whole machine."""

    thread: float = 0.0
    process: float = 0.0
    machine: float = 0.0

    @contextmanager
    def measure(self) -> Iterator[None]:
        thread, process, machine = time.thread_time(), time.process_time(), machine_busy()
        try:
            yield
        finally:
            self.thread += time.thread_time() - thread
            self.process += time.process_time() - process
            self.machine += machine_busy() - machine


@dataclass
class Tick:
    """One tick's figures: its wall time, its thread's CPU and (once redone) its floor."""

    seconds: float
    thread_cpu: float
    floor: float = 0.0


def play(stack: MailStack, server: Server | OneShot, names: list[str], seed: int,
         after_tick: Callable[[TickReport, Tick], None], cpu: Cpu,
         marks: Marks = unmarked) -> float:
    """Whole games, played side by side (each tick handles the orders of all of them);
    returns the seconds spent inside tick, and adds the tick's CPU to ``cpu``.
    ``after_tick`` gets each tick's report and figures right after the tick."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = stack.address("referee"), stack.address("bluff"), "go"
    lines = [f"KEY {KEY}"]
    for n, name in enumerate(names):
        lines += [f"NEWGAME {name} SEED {seed + n}"]
        lines += [f"ADD {name} {player_address(stack, u, name)} {u}" for u in PLAYERS]
        lines += [f"START {name}"]
    msg.set_content("\n".join(lines) + "\n")
    stack.deliver("bluff", msg.as_bytes(policy=policy.SMTP), mail_from=stack.address("referee"))
    seen = {u: len(stack.fetch_all(u)) for u in PLAYERS}
    rngs = {name: random.Random(seed + n) for n, name in enumerate(names)}
    over: set[str] = set()
    ticking = 0.0
    while True:
        start, thread = time.perf_counter(), cpu.thread
        with cpu.measure():
            ticked = server.tick(marks)
        took = time.perf_counter() - start
        ticking += took
        after_tick(ticked, Tick(took, cpu.thread - thread))
        moved = False
        for user in PLAYERS:
            raws = stack.fetch_all(user)
            fresh, seen[user] = raws[seen[user]:], len(raws)
            latest: dict[str, EmailMessage] = {}
            for mail in map(parse_mail, fresh):
                view = report_view(mail)
                if view is not None and view["game"] in rngs:
                    latest[view["game"]] = mail
            for name, report in latest.items():
                view = report_view(report)
                assert view is not None
                if view["game_over"]:
                    over.add(name)
                if name in over:
                    continue
                lines = client_order_lines(view, rngs[name])
                if lines:
                    sender = player_address(stack, user, name)
                    stack.deliver("bluff", reply_to(report, sender, lines),
                                  mail_from=sender)
                    moved = True
        if len(over) == len(names) or not moved:
            return ticking


class OneShot:
    """`pbem tick` run by cron: a server made for each tick (its composer too, if the
    tick starts one), closed after it (``--one-shot``); ``engine``: for reading the rows."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = Server(settings, compose_apart=False).engine

    def tick(self, marks: Marks = unmarked) -> TickReport:
        server = Server(self.settings)
        try:
            return server.tick(marks)
        finally:
            server.close()

    def close(self) -> None:
        self.engine.dispose()


class Floor:
    """The same mail work done directly, tick by tick: right after each tick, the mails it
    fetched are fetched and moved again with imapclient, and the mails it sent are sent
    again with smtplib over one connection, into mailboxes of their own. Both
    connections stay open from tick to tick, as the tick keeps its own.

    Tick by tick, a slow moment of the machine weighs on both figures alike (a whole
    game's or round's mail measured at its end swung the ratio from 1.0x to 2.0x from
    one run to the next), and the bare run gets the mail a tick got, no more: mail
    that arrives after a tick could not have been fetched with it."""

    def __init__(self, stack: MailStack) -> None:
        self.imap = stack.imap("bluff")
        if not self.imap.folder_exists("bare-done"):
            self.imap.create_folder("bare-done")
        self.imap.select_folder("INBOX")
        self.smtp = smtplib.SMTP(stack.smtp_host, stack.smtp_port)
        self.seconds = 0.0        # the bare mail work
        self.imap_seconds = 0.0   # ... of which IMAP
        self.cpu = Cpu()          # ... its CPU (the machine's: the relay and Dovecot's too)
        self.aside = 0.0          # all the floor did, reading the rows included
        self.after_in = self.after_out = 0   # the last rows redone

    def redo_tick(self, server: Server | OneShot) -> tuple[int, int]:
        """Redo the mail of the rows the last tick added; how many mails in and out."""
        start = time.perf_counter()
        inbound, outbound, self.after_in, self.after_out = new_mail(
            server, self.after_in, self.after_out)
        self.redo(inbound, outbound)
        self.aside += time.perf_counter() - start
        return len(inbound), len(outbound)

    def redo(self, inbound: list[bytes], outbound: list[tuple[str, list[str], bytes]]) -> None:
        for raw in inbound:   # (not timed) the tick's mails back where it found them
            self.imap.append("INBOX", raw)
        with self.cpu.measure():
            self._redo(inbound, outbound)

    def _redo(self, inbound: list[bytes], outbound: list[tuple[str, list[str], bytes]]) -> None:
        start = time.perf_counter()
        if inbound:
            uids = self.imap.search(["ALL"])
            self.imap.fetch(uids, ["RFC822.SIZE"])
            data = self.imap.fetch(uids, ["BODY.PEEK[]"])
            assert len(data) == len(inbound)
            self.imap.move(uids, "bare-done")
        self.imap_seconds += time.perf_counter() - start
        for mail_from, rcpts, raw in outbound:
            self.smtp.sendmail(mail_from, [floor_address(r) for r in rcpts], raw)
        self.seconds += time.perf_counter() - start

    def close(self) -> None:
        self.imap.logout()
        self.smtp.quit()


def new_mail(server: Server | OneShot, after_in: int, after_out: int) -> tuple[
        list[bytes], list[tuple[str, list[str], bytes]], int, int]:
    """The mail stored and sent in rows after ids ``after_in`` and ``after_out``, and the
    last ids read (where the next tick's mail begins)."""
    with Session(server.engine) as session:
        ins = inbound_rows(session, col(InboundMail.id) > after_in)
        outs = outbound_rows(session, col(OutboundMail.id) > after_out)
        return ([r.raw for r in ins],
                [(r.mail_from, json.loads(r.rcpts_json), r.raw) for r in outs
                 if r.status == "sent"],
                max((r.id or 0 for r in ins), default=after_in),
                max((r.id or 0 for r in outs), default=after_out))


@dataclass
class Figures:
    """What the rounds add up to."""

    games: int = 0
    ticking: float = 0.0    # seconds inside pbem tick
    wall: float = 0.0       # seconds of the whole play, players included
    bare: float = 0.0       # seconds of the bare imapclient + smtplib work
    mails_in: int = 0
    mails_out: int = 0
    phases: Counter[str] = field(default_factory=Counter)   # the tick's, from its reports
    bare_imap: float = 0.0  # of which the floor's IMAP (the rest is its SMTP)
    tick_cpu: Cpu = field(default_factory=Cpu)
    bare_cpu: Cpu = field(default_factory=Cpu)

    def report(self) -> None:
        mails = self.mails_in + self.mails_out
        print(f"games played:              {self.games}")
        print(f"mails in / out:            {self.mails_in} / {self.mails_out}")
        print(f"time inside pbem tick:     {self.ticking:.2f} s "
              f"(whole run with the players: {self.wall:.2f} s)")
        print("  of which:                " + ", ".join(
            f"{phase} {secs:.2f} s" for phase, secs in self.phases.items()))
        print(f"mails handled per second:  {mails / self.ticking:.1f} (in + out, by tick)")
        print(f"inbound orders per second: {self.mails_in / self.ticking:.1f}")
        print(f"bare imapclient+smtplib:   {self.bare:.2f} s for the same mails (tick by tick)")
        print(f"  of which:                IMAP {self.bare_imap:.2f} s, "
              f"SMTP {self.bare - self.bare_imap:.2f} s")
        print(f"ratio tick / bare:         {self.ticking / self.bare:.2f}x")
        tick, bare = self.tick_cpu, self.bare_cpu
        print(f"CPU in tick:               pbem {tick.process:.2f} s (the tick's thread "
              f"{tick.thread:.2f} s); the machine busy {tick.machine:.2f} core-s "
              f"of {CORES * self.ticking:.2f} ({tick.machine / (CORES * self.ticking):.0%})")
        print(f"CPU in bare:               the machine busy {bare.machine:.2f} core-s of "
              f"{CORES * self.bare:.2f}; the relay and Dovecot's part about "
              f"{bare.machine - bare.process:.2f}")
        # the work of the tick on all cores at once, nothing waiting: no tick is shorter
        print(f"tick's work / cores:       {tick.machine / CORES:.2f} s = "
              f"{tick.machine / CORES / self.bare:.2f}x bare (on {CORES} cores)")


def measure(args: argparse.Namespace, each_tick: Callable[[Tick], None] | None = None,
            marks: Marks = unmarked) -> Figures:
    """One run: a fresh mail stack and database, the games played, both figures.
    ``each_tick`` gets each tick's figures, its floor's included, before the next tick
    (bench/mail_paired.py); ``marks`` each tick's marks (bench/tick_phases.py)."""
    with MailStack(users=[*DEFAULT_USERS, *FLOOR_USERS],
                   relay_processes=args.relay_processes) as stack, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database=f"sqlite:///{tmp}/bench.db", address=stack.address("bluff"),
            referee=stack.address("referee"), referee_key=KEY,
            imap=ImapSettings(stack.imap_host, stack.imap_port, ssl=False,
                              username=stack.address("bluff"), password=stack.password),
            smtp=SmtpSettings(stack.smtp_host, stack.smtp_port, starttls=False,
                              connections=args.connections))
        if args.composer_from is not None:
            settings = dataclasses.replace(settings, composer_from_turn=args.composer_from)
        if args.no_compose:
            settings = dataclasses.replace(settings, compose_apart=False)
        server: Server | OneShot
        if args.one_shot:
            server = OneShot(settings)
        else:
            server = Server(settings)
            server.start_up()   # as pbem serve does at start
        figures = Figures()
        floor = Floor(stack)

        def redo_tick(report: TickReport, tick: Tick) -> None:
            figures.phases.update(report.seconds)
            before = floor.seconds
            mails_in, mails_out = floor.redo_tick(server)
            figures.mails_in += mails_in
            figures.mails_out += mails_out
            if each_tick is not None:
                tick.floor = floor.seconds - before
                each_tick(tick)

        rounds = [list(range(first, min(first + args.side_by_side, args.games)))
                  for first in range(0, args.games, args.side_by_side)]
        start = time.perf_counter()
        for games in rounds:
            figures.ticking += play(stack, server, [f"bench-{g}" for g in games],
                                    1000 + games[0], redo_tick, figures.tick_cpu, marks)
            figures.games += len(games)
        figures.wall = time.perf_counter() - start - floor.aside   # the play's own
        floor.close()
        server.close()
        figures.bare, figures.bare_imap = floor.seconds, floor.imap_seconds
        figures.bare_cpu = floor.cpu
        return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--relay-processes", type=int, default=RELAY_PROCESSES,
                        help="processes of the test SMTP relay, each serving connections as a "
                             "real MTA's do (default 2); 0: a thread of this process, sharing "
                             "its interpreter")
    parser.add_argument("--connections", type=int, default=SmtpSettings.connections,
                        help="the server's [smtp] connections (default: its default, "
                             f"{SmtpSettings.connections})")
    parser.add_argument("--side-by-side", type=int, default=1, metavar="K",
                        help="play the games K at a time, so each tick handles the orders of "
                             "K games (default 1: one game at a time)")
    parser.add_argument("--composer-from", type=int, default=None, metavar="N",
                        help="[server] composer_from_turn: the composer started at a tick's "
                             "Nth turn (default: its default)")
    parser.add_argument("--no-compose", action="store_true",
                        help="[server] compose_apart = false: no composer")
    parser.add_argument("--one-shot", action="store_true",
                        help="a server made for each tick, as `pbem tick` from cron (its "
                             "composer started again by each tick that reaches the threshold)")
    parser.add_argument("--phases", action="store_true",
                        help="also cut the first run's turn ticks into their parts (wall, "
                             "cores busy, the tick's CPU; bench/tick_phases.py)")
    parser.add_argument("--runs", type=int, default=1,
                        help="measure this many times, each on a fresh stack, and print each "
                             "run's ratio and their median (this machine's speed moves from "
                             "one minute to the next; the bare floor, one mail after another, "
                             "feels it most)")
    args = parser.parse_args()
    phases = Phases(machine_busy)
    runs = [measure(args, marks=phases.mark if args.phases else unmarked)]
    runs += [measure(args) for _ in range(args.runs - 1)]
    runs[0].report()
    if args.phases:
        phases.report()
    if len(runs) > 1:
        ratios = [f.ticking / f.bare for f in runs]
        print("runs (tick / bare):        " + ", ".join(
            f"{f.ticking:.2f} / {f.bare:.2f} s = {r:.2f}x" for f, r in zip(runs, ratios)))
        print(f"median ratio of {len(runs)} runs:    {statistics.median(ratios):.2f}x")
        # the figure a busy machine moves least: the CPU of the tick's own thread
        threads = [f.tick_cpu.thread for f in runs]
        print("the tick's thread CPU:     " + ", ".join(f"{t:.2f}" for t in threads)
              + f" s (median {statistics.median(threads):.2f} s)")


if __name__ == "__main__":
    main()
