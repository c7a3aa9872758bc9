"""A robot player: picks the move that costs it the fewest dice in expectation.

One ply: a challenge costs what the table is over the bid (plus the exact-bid
penalty when it lands exactly); a raise costs what the new bid would be short
if the next player challenged it. Raising passes the risk on, so raise costs
are discounted a little. Ties are broken by the random stream passed in, so
the robot is deterministic for a given stream.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pbem.rules.bid_moves import CHALLENGE, BidMove, Move
from pbem.rules.challenge import matches
from pbem.rules.dice import Face
from pbem.rules.ladder import Bid
from pbem.rules.odds import SeatView, actual_distribution
from pbem.rules.robot_choice import choose_strong
from pbem.rules.ruleset import ExactRule

RAISE_DISCOUNT = 0.85   # a raise is not always challenged
SEARCH_WIDTH = 40       # bids above the current one worth weighing


def _exact_cost_to_challenger(rule: ExactRule) -> float:
    return 0.0 if rule is ExactRule.NOBODY else 1.0   # the others cost the challenger a die


def _exact_cost_to_bidder(rule: ExactRule) -> float:
    return 1.0 if rule is ExactRule.EVERYONE else (-1.0 if rule is ExactRule.CHALLENGER_GIVES else 0.0)


def challenge_cost(view: SeatView) -> float:
    bid = view.current
    assert bid is not None
    dist = actual_distribution(view, bid)
    over = sum(pr * (c - bid.quantity) for c, pr in dist.items() if c > bid.quantity)
    return over + dist.get(bid.quantity, 0.0) * _exact_cost_to_challenger(view.rules.exact_rule)


def raise_cost(view: SeatView, bid: Bid) -> float:
    dist = actual_distribution(view, bid)
    short = sum(pr * (bid.quantity - c) for c, pr in dist.items() if c < bid.quantity)
    exact = dist.get(bid.quantity, 0.0) * _exact_cost_to_bidder(view.rules.exact_rule)
    return RAISE_DISCOUNT * (short + exact)


def expose_for(view: SeatView, bid: Bid) -> tuple[Face, ...]:
    """Show the hidden dice that already match the bid and re-roll the rest,
    when at least one die would be re-rolled (a re-rolled die may match)."""
    if not view.rules.expose:
        return ()
    hidden = [d.face for d in view.own.hidden]
    matching = tuple(sorted(f for f in hidden if matches(f, bid)))
    if matching and len(matching) < len(hidden):
        return matching
    return ()


LEVELS = ("easy", "normal", "strong")
DEFAULT_LEVEL = "strong"
EASY_SLACK = 0.5   # the easy robot picks among the moves this close to its best


def choose_move(view: SeatView, rng: random.Random, level: str = "normal") -> Move:
    """The robot's move at a level: easy (loose one-ply), normal (one-ply) or
    strong (beliefs from the bids, see pbem.rules.robot_strong). The stand-in plays
    at the game's level, DEFAULT_LEVEL unless set; a bare call plays normal."""
    if level == "strong":
        return choose_strong(view, rng)
    return one_ply_move(view, rng, EASY_SLACK if level == "easy" else 0.0)


def one_ply_move(view: SeatView, rng: random.Random, slack: float = 0.0) -> Move:
    candidates = view.ladder.raises(view.current)[:SEARCH_WIDTH]
    options: list[tuple[float, float, Move]] = []
    if view.current is not None:
        options.append((challenge_cost(view), rng.random(), CHALLENGE))
    for bid in candidates:
        options.append((raise_cost(view, bid), rng.random(), BidMove(bid)))
    if not options:   # unreachable: a round with no bid always has an opening bid
        return CHALLENGE
    # the cheapest move, ties (and with slack, near ties) broken by the stream
    floor = min(round(o[0], 9) for o in options) + slack
    best = min((o for o in options if round(o[0], 9) <= floor), key=lambda o: o[1])[2]
    if isinstance(best, BidMove):
        return BidMove(best.bid, expose_for(view, best.bid))
    return best


def random_move(legal: Sequence[Move], rng: random.Random) -> Move:
    """The baseline opponent: uniform among the legal moves."""
    return legal[rng.randrange(len(legal))]
