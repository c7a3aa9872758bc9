"""How strong is the robot? Simulated postal Bluff games through pbem.rules only.

Two line-ups, each over N games (``--games``, default 2000):

* one robot against four uniform-random players (the robot's seat rotates
  over the five seats, game i puts it in seat i % 5 + 1);
* four robots against one uniform-random player (the random seat rotates).

Game i of either line-up rolls its dice from ``seed_from_number(SEED_BASE + i)``
and draws the players' choices from ``random.Random(SEED_BASE + i)``, so a run
is reproducible and both line-ups are dealt the same dice.

For each kind of player (robot, random) the figures are per seat of that
kind: the outright win rate (sole first place), the win rate counting a
shared first place as a win, the fair-share score (a first place shared by
k players counts 1/k; a seat that is no better than the others scores 20%)
and the mean virtual dice left at the end.

    python3 bench/robot_vs_random.py --games 200
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbem.rules import (
    POSTAL_RULES,
    DiceStream,
    RuleSet,
    apply_turn,
    choose_move,
    new_game,
    random_move,
    seed_from_number,
)
from pbem.rules.bid_moves import Move

SEED_BASE = 20_000
SEATS = (1, 2, 3, 4, 5)


def play(number: int, robots: frozenset[int], rules: RuleSet = POSTAL_RULES) -> tuple[int, ...]:
    """One whole postal game; robots are the robot seats. Returns the virtual dice."""
    stream = DiceStream(seed_from_number(SEED_BASE + number))
    rng = random.Random(SEED_BASE + number)
    state = new_game(stream, rules)
    while not state.game_over:
        moves: dict[int, Move] = {}
        for seat, k in sorted(state.due().items()):
            if seat in robots:
                moves[seat] = choose_move(state.seat_view(seat, k), rng)
            else:
                moves[seat] = random_move(state.legal_moves(k), rng)
        state, _ = apply_turn(state, moves, stream)
    return state.virtual_dice


@dataclass
class Tally:
    seats: int = 0          # seat-games played by this kind of player
    outright: int = 0
    shared: int = 0
    fair: float = 0.0
    dice: int = 0

    def add(self, seat: int, virtual: tuple[int, ...]) -> None:
        best = max(virtual)
        firsts = sum(1 for v in virtual if v == best)
        mine = virtual[seat - 1]
        self.seats += 1
        self.dice += mine
        if mine == best:
            self.shared += 1
            self.fair += 1 / firsts
            if firsts == 1:
                self.outright += 1

    def row(self, name: str) -> str:
        n = max(1, self.seats)
        return (f"  {name:<7} {100 * self.outright / n:7.1f}% {100 * self.shared / n:9.1f}% "
                f"{100 * self.fair / n:9.1f}% {self.dice / n:10.2f}")


@dataclass
class LineUp:
    title: str
    robots_of: RobotSeats
    robot: Tally = field(default_factory=Tally)
    rand: Tally = field(default_factory=Tally)
    seconds: float = 0.0
    games: int = 0


class RobotSeats:
    def __init__(self, robots_in_game: int) -> None:
        self.count = robots_in_game

    def __call__(self, number: int) -> frozenset[int]:
        rotating = number % 5 + 1
        if self.count == 1:
            return frozenset({rotating})
        return frozenset(SEATS) - {rotating}


def run(games: int) -> list[LineUp]:
    lineups = [LineUp("1 robot vs 4 random players", RobotSeats(1)),
               LineUp("4 robots vs 1 random player", RobotSeats(4))]
    for lineup in lineups:
        start = time.perf_counter()
        for number in range(games):
            robots = lineup.robots_of(number)
            virtual = play(number, robots)
            for seat in SEATS:
                (lineup.robot if seat in robots else lineup.rand).add(seat, virtual)
        lineup.seconds = time.perf_counter() - start
        lineup.games = games
    return lineups


def report(lineups: list[LineUp]) -> str:
    lines = []
    for lineup in lineups:
        rate = lineup.games / lineup.seconds if lineup.seconds else float("inf")
        lines += [
            (f"{lineup.title}: {lineup.games} games, {lineup.seconds:.1f} s, "
            f"{rate:.0f} games/s"),
            "  player  outright  win|shared  fair-share  mean dice   (per seat)",
            lineup.robot.row("robot"),
            lineup.rand.row("random"),
            (f"  robot mean virtual dice {lineup.robot.dice / max(1, lineup.robot.seats):.2f} "
            f"vs opponents' {lineup.rand.dice / max(1, lineup.rand.seats):.2f}"),
            "",
        ]
    lines.append("A seat no better than the others has a fair share of 20%.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--games", type=int, default=2000, help="games per line-up (2000)")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error("--games must be at least 1")
    print(report(run(args.games)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
