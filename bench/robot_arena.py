"""An arena: one tested player against a field of others, through pbem.kinds only.

Players: random, odds, counting (bench/baselines.py), reader and wary (the
bid readers of bench/readers.py) and the robot at each level. A line-up is "TESTED vs FIELD" for a setup
(postal; classic-english, classic-german, classic-czech,
classic-anniversary; cup). Game i deals its dice from
``seed_from_number(SEED_BASE + i)`` (``--seed-base``, 40000 unless set) and
puts the tested player in seat i % n + 1 (so it rotates); the players draw on
``random.Random(SEED_BASE + i)``.

Figures for the tested seat: sole-first rate, fair share of first place (a
first shared by k counts 1/k; no edge is 1/n), the score left (postal:
virtual dice; classic: dice; cup: points), each with a 95% interval
(1.96 standard errors), and the robot's time per move (median and worst
wall time, and the median and worst CPU time of the move's own thread: on a
shared machine the wall time is mostly time the scheduler gave to others).

    python3 bench/robot_arena.py --games 600 postal:strong:odds classic-english:strong:odds
    python3 bench/robot_arena.py --table postal --games 600   # the line-ups of docs/robot-history.md, postal
    python3 bench/robot_arena.py --table others --games 600   # ... classic, cup
    python3 bench/robot_arena.py --tune robot_search.SAMPLES=12 postal:strong:reader

``--save FILE`` writes each line-up's per-game fair shares (JSON lines) for
bench/robot_paired.py, which compares two runs game by game (the same seeds
deal the same dice, so the paired difference is tighter than two intervals).
``--collector`` prints the garbage collector's passes over each line-up (how many,
and their CPU time, median and worst, by generation): the robot's worst moves
are most often a full pass. ``--endings`` counts how the postal mini-games ended (the figures of
pbem.rules.robot_standings); ``--roles`` how they ended for the tested seat
(bidder, caller or aside; short, exact or over) and the dice it lost there. ``--tune MODULE.NAME=VALUE`` sets a constant of
the strong robot's modules (pbem.rules.robot_strong, robot_search,
robot_reads, beliefs, robot_standings) for the run, to
screen a change without editing them.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baselines import counting_move, cup_odds_move, odds_move  # bench/baselines.py
from readers import Wary, reader_move  # bench/readers.py

from pbem.kinds import KINDS, GameKind
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.rules.robot import LEVELS, random_move

SEED_BASE = 40_000
SETUPS: dict[str, tuple[str, int, list[str]]] = {   # setup -> kind, players, option words
    "postal": ("postal", 5, []),
    "classic-english": ("classic", 5, ["english"]),
    "classic-german": ("classic", 5, ["german"]),
    "classic-czech": ("classic", 5, ["czech"]),
    "classic-anniversary": ("classic", 5, ["anniversary"]),
    "cup": ("cup", 5, []),
}
PLAYERS = ("random", "odds", "counting", "reader", "wary", *LEVELS)


def legal_moves(kind: GameKind[Any, Any], state: Any, seat: int) -> list[Any]:
    if kind.name == "postal":
        moves: list[Any] = state.legal_moves(state.due()[seat])
    else:
        moves = state.legal_moves()
    return moves


def seat_view(kind: GameKind[Any, Any], state: Any, seat: int) -> Any:
    if kind.name == "postal":
        return state.seat_view(seat, state.due()[seat])
    return state.seat_view(seat)


@dataclass
class Result:
    sole: list[float] = field(default_factory=list)
    fair: list[float] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    move_cpu_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0


def move_of(player: str, kind: GameKind[Any, Any], state: Any, seat: int, rng: random.Random,
            timing: Result | None, wary: dict[int, Wary]) -> Any:
    if player in LEVELS:
        start, start_cpu = time.perf_counter(), time.thread_time()
        move = kind.robot_move(state, seat, rng, level=player)
        if timing is not None:   # wall time, and the CPU time the move itself used
            timing.move_ms.append(1000 * (time.perf_counter() - start))
            timing.move_cpu_ms.append(1000 * (time.thread_time() - start_cpu))
        return move
    if player == "random":
        return random_move(legal_moves(kind, state, seat), rng)
    if kind.name == "cup":
        return cup_odds_move(state, seat, rng)   # counting is odds in Cup of Bluff
    view = seat_view(kind, state, seat)
    if player == "reader":
        return reader_move(view, rng)
    if player == "wary":   # one memory a seat a game: the bluff rates it learned
        return wary.setdefault(seat, Wary()).move(kind.name, state, view, rng)
    return counting_move(view, rng) if player == "counting" else odds_move(view, rng)


def play(setup: str, number: int, tested: str, others: str, result: Result,
         seed_base: int = SEED_BASE, endings: Counter[tuple[int, int]] | None = None,
         roles: Counter[tuple[str, str]] | None = None) -> None:
    kind_name, players, words = SETUPS[setup]
    kind = KINDS[kind_name]
    stream = DiceStream(seed_from_number(seed_base + number))
    rng = random.Random(seed_base + number)
    state = kind.start(kind.parse_options(words), stream, players)
    me = number % players + 1
    wary: dict[int, Wary] = {}
    while not kind.over(state):
        moves = {seat: move_of(tested if seat == me else others, kind, state, seat, rng,
                               result if seat == me else None, wary)
                 for seat in sorted(kind.due(state))}
        state = kind.apply(state, moves, stream).state
    if endings is not None:   # (dice a player, 0 for an exact count or the dice lost)
        for game in state.minigames:
            lost = game.challenge.result.losses
            endings[(len(game.cups[0].dice), 0 if len(lost) > 1 else sum(lost.values()))] += 1
    if roles is not None:
        count_roles(state, me, roles)
    rows = kind.standings(state)
    firsts = [r["seat"] for r in rows if r["rank"] == 1]
    result.sole.append(1.0 if firsts == [me] else 0.0)
    result.fair.append(1 / len(firsts) if me in firsts else 0.0)
    result.score.append(float(next(r["score"] for r in rows if r["seat"] == me)))


def count_roles(state: Any, me: int, roles: Counter[tuple[str, str]]) -> None:
    """Postal: how each mini-game ended for the tested seat me: its role (bidder,
    caller, aside), the count (short, exact, over), and the tested seat's bids."""
    for game in state.minigames:
        result = game.challenge.result
        role = ("bidder" if result.bidder == me else
                "caller" if result.challenger == me else "aside")
        roles[(role, result.outcome)] += 1
        roles[(role, result.outcome + " dice")] += max(0, result.losses.get(me, 0))
        roles[("bids", "tested")] += sum(1 for b in game.bids if b.seat == me)
        roles[("bids", "all")] += len(game.bids)


def roles_table(roles: Counter[tuple[str, str]], games: int) -> str:
    """--roles: a game's mini-game endings by the tested seat's role, and its dice lost."""
    out = ["| tested seat | short | exact | over | its dice lost |", "| --- | --- | --- | --- | --- |"]
    for role in ("bidder", "caller", "aside"):
        ends = " | ".join(f"{roles[(role, o)] / games:.3f}" for o in ("short", "exact", "over"))
        lost = sum(roles[(role, o + " dice")] for o in ("short", "exact", "over"))
        out.append(f"| {role} | {ends} | {lost / games:.3f} |")
    out.append(f"\nbids a game: {roles[('bids', 'all')] / games:.1f}, "
               f"the tested seat's {roles[('bids', 'tested')] / games:.2f}")
    return "\n".join(out)


def interval(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    sd = statistics.pstdev(values) if len(values) > 1 else 0.0
    return mean, 1.96 * sd / math.sqrt(len(values))


def run(setup: str, tested: str, others: str, games: int,
        seed_base: int = SEED_BASE, endings: Counter[tuple[int, int]] | None = None,
        roles: Counter[tuple[str, str]] | None = None) -> Result:
    result = Result()
    start = time.perf_counter()
    for number in range(games):
        play(setup, number, tested, others, result, seed_base, endings, roles)
    result.seconds = time.perf_counter() - start
    return result


def row(setup: str, tested: str, others: str, games: int, result: Result) -> str:
    players = SETUPS[setup][1]
    sole, sole_ci = interval(result.sole)
    fair, fair_ci = interval(result.fair)
    score, score_ci = interval(result.score)
    timing = ""
    if result.move_ms:
        timing = (f" | {statistics.median(result.move_ms):.2f} / "
                  f"{max(result.move_ms):.1f} / {statistics.median(result.move_cpu_ms):.2f} / "
                  f"{max(result.move_cpu_ms):.1f}")
    return (f"| {setup} | {tested} vs {players - 1} {others} | {games} "
            f"| {100 * sole:.1f} ± {100 * sole_ci:.1f} | {100 * fair:.1f} ± {100 * fair_ci:.1f} "
            f"| {100 / players:.0f} | {score:.2f} ± {score_ci:.2f}{timing or ' | -'} |")


HEADER = ("| setup | line-up | games | sole first % | fair share % | no edge % "
          "| score left | robot ms/move: wall median / worst, CPU median / worst |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |")


def full_table(part: str) -> list[tuple[str, str, str]]:
    """The line-ups of docs/robot-history.md: part postal, or part others (classic and cup)."""
    if part == "postal":
        out = [("postal", "odds", "random"), ("postal", "counting", "random")]
        for level in LEVELS:
            out += [("postal", level, "odds"), ("postal", level, "counting"),
                    ("postal", "odds", level)]
        out += [("postal", "reader", "odds"), ("postal", "wary", "odds")]
        for reader in ("reader", "wary"):
            out += [("postal", "strong", reader), ("postal", reader, "strong")]
        return out
    out = []
    for setup in ("classic-english", "classic-german", "classic-czech",
                  "classic-anniversary", "cup"):
        out += [(setup, "odds", "random"), (setup, "normal", "odds"), (setup, "strong", "odds")]
    return out


TUNABLE = ("robot_strong", "robot_search", "robot_reads", "beliefs", "robot_standings")


def tune(setting: str) -> None:
    """Set MODULE.NAME=VALUE, a number constant of one of the TUNABLE modules."""
    target, text = setting.split("=", 1)
    module_name, name = target.split(".", 1)
    if module_name not in TUNABLE:
        raise ValueError(f"not a tunable module: {module_name} ({', '.join(TUNABLE)})")
    module = importlib.import_module(f"pbem.rules.{module_name}")
    old = getattr(module, name)   # an unknown name raises AttributeError
    setattr(module, name, type(old)(float(text)) if isinstance(old, (int, float)) else text)


class Collector:
    """The garbage collector's passes while it listens (gc.callbacks): per generation,
    the CPU time of each pass (the process's: a pass runs in the moving thread)."""

    def __init__(self) -> None:
        self.passes: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.passes[info["generation"]].append(1000 * (time.process_time() - self._start))

    def report(self) -> str:
        return "collector passes, CPU ms median / worst: " + "; ".join(
            f"gen {g} {len(xs)} x {statistics.median(xs):.2f} / {max(xs):.1f}"
            for g, xs in self.passes.items() if xs)


def save(path: Path, lineup: str, args: argparse.Namespace, result: Result) -> None:
    """Append one line-up's per-game fair shares, with what made them."""
    record = {"lineup": lineup, "seed_base": args.seed_base, "games": args.games,
              "tune": args.tune, "fair": result.fair}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("lineups", nargs="*", help="setup:tested:field, e.g. postal:strong:odds")
    parser.add_argument("--games", type=int, default=600, help="games a line-up (600)")
    parser.add_argument("--seed-base", type=int, default=SEED_BASE,
                        help=f"game i deals from seed_from_number(SEED_BASE + i) "
                             f"({SEED_BASE}); fresh seeds check a change tuned on others")
    parser.add_argument("--table", choices=("postal", "others"),
                        help="the line-ups of docs/robot-history.md: postal, or classic and cup")
    parser.add_argument("--tune", action="append", default=[], metavar="MODULE.NAME=VALUE",
                        help="set a constant of the robot's modules for this run "
                             f"({', '.join(TUNABLE)})")
    parser.add_argument("--endings", action="store_true",
                        help="postal: count how the mini-games ended, by dice a player "
                             "(pbem.rules.robot_standings.ENDED)")
    parser.add_argument("--roles", action="store_true",
                        help="postal: how the mini-games ended for the tested seat "
                             "(bidder, caller or aside; short, exact or over), a game")
    parser.add_argument("--save", metavar="FILE",
                        help="append each line-up's per-game fair shares (JSON lines) to "
                             "FILE, for bench/robot_paired.py")
    parser.add_argument("--collector", action="store_true",
                        help="the garbage collector's passes over each line-up, by generation")
    args = parser.parse_args(argv)
    for setting in args.tune:
        try:
            tune(setting)
        except (ValueError, AttributeError) as error:
            parser.error(f"--tune {setting}: {error}")
        print(f"tuned: {setting}", flush=True)
    lineups = [tuple(text.split(":")) for text in args.lineups]
    if args.table:
        lineups += full_table(args.table)
    for lineup in lineups:
        if len(lineup) != 3 or lineup[0] not in SETUPS or not set(lineup[1:]) <= set(PLAYERS):
            parser.error(f"not a line-up: {':'.join(lineup)} (setups {', '.join(SETUPS)}; "
                         f"players {', '.join(PLAYERS)})")
    print(HEADER, flush=True)
    total = time.perf_counter()
    endings: Counter[tuple[int, int]] | None = Counter() if args.endings else None
    for setup, tested, others in lineups:
        roles: Counter[tuple[str, str]] | None = (
            Counter() if args.roles and setup == "postal" else None)
        collector = Collector()
        if args.collector:
            gc.callbacks.append(collector)
        try:
            result = run(setup, tested, others, args.games, args.seed_base, endings, roles)
        finally:
            if args.collector:
                gc.callbacks.remove(collector)
        print(row(setup, tested, others, args.games, result), flush=True)
        if args.save:
            save(Path(args.save), f"{setup}:{tested}:{others}", args, result)
        if args.collector:
            print(collector.report(), flush=True)
        if roles:
            print(f"\n{roles_table(roles, args.games)}\n", flush=True)
    if endings:
        print("\ndice a player: exact counts, then one seat losing 1, 2, 3, ... dice")
        for dice in sorted({d for d, _ in endings}, reverse=True):
            lost = max(k for d, k in endings if d == dice)
            print(f"{dice}: {endings[(dice, 0)]}, "
                  f"{tuple(endings[(dice, k)] for k in range(1, lost + 1))}")
    print(f"\n{time.perf_counter() - total:.0f} s in all", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
