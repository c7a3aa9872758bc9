"""Reading the readers: is a seat an odds player or a bid reader, from how it answered.

A seat's answers in the revealed rounds of the game (pbem.rules.odds.Answer: it
called a bid or raised it, and the bid's plain odds as that seat saw them) tell
the two kinds apart: a player who counts the odds calls a bid whose plain odds
are below about a half; a player who reads the bids takes a bid as a sign of the
bidder's hand and calls only what its plain odds put below about a tenth. The
two call curves below were fitted by eye to 9,800 answers of odds and reader
players (150 postal games each, seeds from 200000): plain odds 0.2-0.3, odds
players called 92 in 100 and readers 5; at 0.4-0.5, 57 and none. The weight of
the reader model is its posterior against the odds model, from even odds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from pbem.rules.odds import Answer

ODDS_MIDDLE = 0.5     # an odds player calls half the bids whose plain odds are this
ODDS_WIDTH = 0.07     # ... on a logistic curve this wide
READER_MIDDLE = 0.12  # a bid reader, likewise
READER_WIDTH = 0.05
READER_TOP = 0.6      # a reader calls at most this often, however unlikely the bid
FLOOR = 0.02          # no answer is ever impossible under either model
PRIOR_READER = 0.5    # the reader model's weight before any answer is seen


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


def odds_call(holds: float) -> float:
    """P(an odds player calls a bid with these plain odds)."""
    return _logistic((ODDS_MIDDLE - holds) / ODDS_WIDTH)


def reader_call(holds: float) -> float:
    """P(a bid reader calls a bid with these plain odds)."""
    return READER_TOP * _logistic((READER_MIDDLE - holds) / READER_WIDTH)


def _likelihood(call: float, called: bool) -> float:
    chance = call if called else 1.0 - call
    return min(1.0 - FLOOR, max(FLOOR, chance))


@lru_cache(maxsize=4096)
def reader_weight(answers: tuple[tuple[bool, float], ...]) -> float:
    """P(the seat is a bid reader | its answers as (called, plain odds))."""
    log_ratio = math.log(PRIOR_READER / (1.0 - PRIOR_READER))
    for called, holds in answers:
        log_ratio += (math.log(_likelihood(reader_call(holds), called))
                      - math.log(_likelihood(odds_call(holds), called)))
    return _logistic(log_ratio)


def reader_weights(answers: Sequence[Answer]) -> dict[int, float]:
    """For each seat that answered, the weight of the reader model for it."""
    by_seat: dict[int, list[tuple[bool, float]]] = {}
    for answer in answers:
        by_seat.setdefault(answer.seat, []).append((answer.called, round(answer.holds, 3)))
    return {seat: reader_weight(tuple(rows)) for seat, rows in by_seat.items()}


def seat_reader_weight(answers: Sequence[Answer], seat: int) -> float:
    """The weight of the reader model for seat (PRIOR_READER if it never answered)."""
    return reader_weights(answers).get(seat, PRIOR_READER)
