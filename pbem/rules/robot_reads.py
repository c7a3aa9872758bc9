"""Reading the readers: is a seat an odds player or a bid reader, from how it answered.

A seat's answers in the revealed rounds of the game (pbem.rules.odds.Answer: it
called a bid or raised it, and the bid's plain odds as that seat saw them) tell
the two kinds apart: a player who counts the odds calls a bid whose plain odds
are below about a half; a player who reads the bids takes a bid as a sign of the
bidder's hand and calls only what its plain odds put below about a tenth. The
two call curves below were fitted by eye to 9,800 answers of odds and reader
players (150 postal games each, seeds from 200000): plain odds 0.2-0.3, odds
players called 92 in 100 and readers 5; at 0.4-0.5, 57 and none. The weight of
the reader model is its posterior against the odds model, from even odds: a
seat's own answers (a raise in a running round weighed over the hands the seat
could hold) and the other seats' at a share, capped.
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
TABLE_SHARE = 0.5     # the other seats' answers count at this share for a seat
TABLE_CAP = 2.0       # ... and at most this much log-likelihood ratio (odds of 7 to 1)


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


Odds = tuple[tuple[float, float], ...]   # (chance, plain odds): pbem.rules.odds.Answer


@lru_cache(maxsize=1024)
def _log_ratio(called: bool, odds: Odds) -> float:
    """log P(the answer | reader) - log P(the answer | odds player)."""
    reader = sum(chance * reader_call(holds) for chance, holds in odds)
    plain = sum(chance * odds_call(holds) for chance, holds in odds)
    return math.log(_likelihood(reader, called)) - math.log(_likelihood(plain, called))


def _evidence(answers: Sequence[tuple[bool, Odds]]) -> float:
    return sum(_log_ratio(called, odds) for called, odds in answers)


def reader_weight(answers: Sequence[tuple[bool, Odds]], table: float = 0.0) -> float:
    """P(the seat is a bid reader | its answers as (called, odds)), with table the
    log-likelihood ratio the other seats' answers add."""
    return _logistic(math.log(PRIOR_READER / (1.0 - PRIOR_READER)) + _evidence(answers)
                     + table)


def seat_reader_weight(answers: Sequence[Answer], seat: int) -> float:
    """The weight of the reader model for seat: its own answers, and the other seats'
    at TABLE_SHARE, up to TABLE_CAP (players at one table tend to play alike; a
    seat's own answers soon outweigh theirs)."""
    own = [(a.called, a.odds) for a in answers if a.seat == seat]
    rest = [(a.called, a.odds) for a in answers if a.seat != seat]
    table = TABLE_SHARE * _evidence(rest)
    return reader_weight(own, max(-TABLE_CAP, min(TABLE_CAP, table)))
