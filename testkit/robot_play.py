"""A postal game played some turns by five strong robots, for the robot's tests."""

from __future__ import annotations

import random

from pbem.kinds import KINDS
from pbem.rules.bid_moves import BidMove
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.rules.ladder import Bid
from pbem.rules.postal import PostalState


def postal_played(seed: int, turns: int) -> PostalState:
    """The state of a postal game (seed ``seed``) after ``turns`` turns of strong robots,
    or earlier if it ended."""
    kind = KINDS["postal"]
    stream = DiceStream(seed_from_number(seed))
    rng = random.Random(seed)
    state = kind.start(kind.parse_options([]), stream, 5)
    for _ in range(turns):
        if kind.over(state):
            break
        moves = {seat: kind.robot_move(state, seat, rng, level="strong")
                 for seat in sorted(kind.due(state))}
        state = kind.apply(state, moves, stream).state
    return state


def after_raise(state: PostalState, seat: int, raise_: Bid, seed: int) -> PostalState:
    """The state after a turn in which ``seat`` raises to ``raise_`` and every other seat
    due moves as the strong robot (its own stream each), the dice from seed ``seed``:
    where the next seat answers that raise."""
    kind = KINDS["postal"]
    moves = {s: BidMove(raise_) if s == seat else
             kind.robot_move(state, s, random.Random(s), level="strong")
             for s in state.due()}
    return kind.apply(state, moves, DiceStream(seed_from_number(seed))).state
