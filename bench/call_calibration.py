"""How well the strong robot's call model predicts the next player's answer (postal).

Plays arena games (bench/robot_arena.py: same seeds, seats and streams) and, for
each raise of the strong robot, prices the chance that the next seat calls it as
the robot does (pbem.rules.robot_strong.Table.call_chance, over the beliefs of
the next seat's hand), then sees whether that seat called. Prints the observed
call rate in bins of the priced chance: a calibrated model has them equal.

    python3 bench/call_calibration.py --games 400 --seed-base 100000 reader
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from readers import Wary  # bench/readers.py
from robot_arena import SEED_BASE, move_of, seat_view  # bench/robot_arena.py

from pbem.kinds import KINDS
from pbem.rules.bid_moves import CHALLENGE, BidMove
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.rules.odds import SeatView
from pbem.rules.robot_strong import Table

BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.01)


def priced(view: SeatView, move: BidMove) -> float:
    """The robot's chance that the next seat calls move, over that seat's hands."""
    table = Table(view)
    _known, nxt, _rest = table.counts(move.bid.face)
    return sum(px * table.call_chance(move.bid, x) for x, px in enumerate(nxt) if px > 1e-9)


def play(number: int, others: str, seed_base: int,
         pairs: list[tuple[float, bool]]) -> None:
    kind = KINDS["postal"]
    stream = DiceStream(seed_from_number(seed_base + number))
    rng = random.Random(seed_base + number)
    state = kind.start(kind.parse_options([]), stream, 5)
    me = number % 5 + 1
    wary: dict[int, Wary] = {}
    pending: dict[int, tuple[int, float]] = {}   # mini-game -> (next seat, priced chance)
    while not kind.over(state):
        due = kind.due(state)
        moves: dict[int, object] = {}
        for seat in sorted(due):
            move = move_of("strong" if seat == me else others, kind, state, seat, rng,
                           None, wary)
            moves[seat] = move
            game = due[seat]
            if seat == me and isinstance(move, BidMove):
                view = seat_view(kind, state, seat)
                pending[game] = (view.next_seat, priced(view, move))
            elif game in pending and pending[game][0] == seat:
                pairs.append((pending.pop(game)[1], move == CHALLENGE))
        state = kind.apply(state, moves, stream).state
        pending = {g: p for g, p in pending.items() if g in kind.due(state).values()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("field", help="the four others: odds, reader, wary, ...")
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--seed-base", type=int, default=SEED_BASE)
    args = parser.parse_args(argv)
    pairs: list[tuple[float, bool]] = []
    for number in range(args.games):
        play(number, args.field, args.seed_base, pairs)
    print("| priced call chance | raises | priced mean | called % | ± |")
    print("| --- | --- | --- | --- | --- |")
    for low, high in zip(BINS, BINS[1:]):
        got = [(p, c) for p, c in pairs if low <= p < high]
        if not got:
            continue
        rate = sum(c for _, c in got) / len(got)
        mean = sum(p for p, _ in got) / len(got)
        ci = 1.96 * math.sqrt(rate * (1 - rate) / len(got))
        print(f"| {low:.1f}-{min(high, 1.0):.1f} | {len(got)} | {mean:.2f} "
              f"| {100 * rate:.0f} | {100 * ci:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
