"""How fast and how strong is the robot of each game kind? Games played through pbem.kinds only.

Every game kind of the registry ``pbem.kinds.KINDS`` is played the way the
server plays it: ``start`` -> ``due`` -> one move per due seat -> ``apply``,
until ``over``; the result is read from ``standings``. The table sizes are
postal 5 players, classic 4 (English edition, DICE 5) and Cup of Bluff 4.

1. Speed: ``--speed-games`` robot-only games per kind (default 100). Figures:
   whole games per second, turns per second (a turn is one ``apply``: five
   moves at once in postal, one move in classic and cup) and the mean turns
   of a game. The time includes the robot's thinking, which is most of it.

2. Strength: two line-ups per kind, ``--games`` games each (default 1000):

   * one robot against uniform-random players (game i puts the robot in
     seat i % n + 1, so it rotates over the n seats);
   * all robots but one uniform-random player (the random seat rotates).

   A random player picks uniformly among the moves its position allows (the
   rules modules' ``legal_moves``: every raise and the challenge in postal and
   classic; every announce, steal, doublet, answer or gift in cup).
   Per seat of each kind of player (robot, random) the figures are: the first
   place rate (a shared first place counts as a win), the fair share of first
   place (a first place shared by k seats counts 1/k), the "no edge" share
   1/n that a seat no better than the others would get, and the mean place
   (1 is best; ties share the better place). The fair shares of one game add
   up to 1, so the robots' and the random players' shares mirror each other.

Game i (both line-ups and the speed run) rolls its dice from
``seed_from_number(SEED_BASE + i)`` and draws the players' choices from
``random.Random(SEED_BASE + i)``, so a run is reproducible and the two
line-ups of a kind are dealt the same dice streams. Over 1000 seat-games a
rate near 25% is known to about +-3 points (95%); raise ``--games`` for finer
figures (the time grows in proportion). The defaults take about 70 s on one
core (one process).

    python3 bench/kinds_robots.py
    python3 bench/kinds_robots.py --games 100 --speed-games 20 --kinds cup
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from robot_vs_random import Tally  # bench/robot_vs_random.py

from pbem.kinds import KINDS, GameKind
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.rules.robot import random_move

SEED_BASE = 30_000

# kind name -> (players, NEWGAME option words)
SETUPS: dict[str, tuple[int, list[str]]] = {
    "postal": (5, []),
    "classic": (4, ["english", "dice", "5"]),
    "cup": (4, []),
}


def legal_moves(kind: GameKind, state: Any, seat: int) -> list[Any]:
    """What the rules module offers the due seat (the kinds do not list moves)."""
    if kind.name == "postal":
        moves: list[Any] = state.legal_moves(state.due()[seat])   # the seat's mini-game
    else:
        moves = state.legal_moves()                    # classic and cup: the one due seat
    return moves


@dataclass
class Game:
    places: tuple[int, ...]   # seat -> rank (index seat - 1)
    turns: int


def play(kind: GameKind, number: int, robots: frozenset[int]) -> Game:
    """One whole game of kind; robots are the robot seats, the others play at random."""
    players, words = SETUPS[kind.name]
    stream = DiceStream(seed_from_number(SEED_BASE + number))
    rng = random.Random(SEED_BASE + number)
    state = kind.start(kind.parse_options(words), stream, players)
    turns = 0
    while not kind.over(state):
        moves = {}
        for seat in sorted(kind.due(state)):
            if seat in robots:
                moves[seat] = kind.robot_move(state, seat, rng)
            else:
                moves[seat] = random_move(legal_moves(kind, state, seat), rng)
        state = kind.apply(state, moves, stream).state
        turns += 1
    ranks = {s["seat"]: s["rank"] for s in kind.standings(state)}
    return Game(tuple(ranks[seat] for seat in range(1, players + 1)), turns)


# --- speed ------------------------------------------------------------------


def speed(kind: GameKind, games: int) -> str:
    seats = frozenset(range(1, SETUPS[kind.name][0] + 1))
    turns = 0
    start = time.perf_counter()
    for number in range(games):
        turns += play(kind, number, seats).turns
    seconds = time.perf_counter() - start
    return (f"  {kind.name:<8} {games:6d} {seconds:8.1f} {games / seconds:9.1f} "
            f"{turns / seconds:9.0f} {turns / games:10.1f}")


# --- strength ---------------------------------------------------------------


@dataclass
class LineUp:
    title: str
    robots_of: Callable[[int], frozenset[int]]
    # Tally of bench/robot_vs_random.py, fed minus the rank as the score:
    # its "shared" counts first places, "fair" the 1/k shares, -dice the places
    robot: Tally = field(default_factory=Tally)
    rand: Tally = field(default_factory=Tally)
    seconds: float = 0.0


def lineups(players: int) -> list[LineUp]:
    seats = frozenset(range(1, players + 1))

    def one_robot(number: int) -> frozenset[int]:
        return frozenset({number % players + 1})

    def one_random(number: int) -> frozenset[int]:
        return seats - {number % players + 1}

    return [LineUp(f"1 robot vs {players - 1} random", one_robot),
            LineUp(f"{players - 1} robots vs 1 random", one_random)]


def strength(kind: GameKind, games: int) -> list[LineUp]:
    players = SETUPS[kind.name][0]
    out = lineups(players)
    for lineup in out:
        start = time.perf_counter()
        for number in range(games):
            robots = lineup.robots_of(number)
            score = tuple(-rank for rank in play(kind, number, robots).places)
            for seat in range(1, players + 1):
                (lineup.robot if seat in robots else lineup.rand).add(seat, score)
        lineup.seconds = time.perf_counter() - start
    return out


def row(name: str, tally: Tally, players: int) -> str:
    n = max(1, tally.seats)
    return (f"    {name:<7} {tally.seats:6d} {100 * tally.shared / n:8.1f}% "
            f"{100 * tally.fair / n:9.1f}% {100 / players:8.1f}% {-tally.dice / n:7.2f}")


def strength_report(kind: GameKind, games: int, lines: list[LineUp]) -> list[str]:
    players = SETUPS[kind.name][0]
    out = [f"{kind.name} ({kind.title}, {players} players), {games} games per line-up:"]
    for lineup in lines:
        edge = 100 * (lineup.robot.fair / max(1, lineup.robot.seats) - 1 / players)
        out += [(f"  {lineup.title} ({lineup.seconds:.1f} s): robot fair share "
                 f"{edge:+.1f} points over no edge"),
                "    player   seats    first  fair-share  no edge  mean place   (per seat)",
                row("robot", lineup.robot, players),
                row("random", lineup.rand, players)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=1000,
                        help="strength games per line-up and kind (1000)")
    parser.add_argument("--speed-games", type=int, default=100,
                        help="robot-only games per kind for the speed figures (100)")
    parser.add_argument("--kinds", nargs="+", choices=list(KINDS), default=list(KINDS),
                        help="the kinds to play (all)")
    args = parser.parse_args(argv)
    if args.games < 1 or args.speed_games < 1:
        parser.error("--games and --speed-games must be at least 1")
    kinds = [KINDS[name] for name in args.kinds]
    missing = [k.name for k in kinds if k.name not in SETUPS]
    if missing:
        parser.error(f"no table size set for kind(s) {', '.join(missing)}: add them to SETUPS")

    print("Speed, robot-only games (one process, one core):")
    print("  kind      games  seconds   games/s   turns/s  turns/game")
    for kind in kinds:
        print(speed(kind, args.speed_games), flush=True)
    print()
    print("Strength against uniform-random players (first: first place, shared counts as a win;")
    print("fair-share: a first place shared by k counts 1/k; no edge: 1/n):")
    for kind in kinds:
        print("\n".join(strength_report(kind, args.games, strength(kind, args.games))),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
