"""Baseline players written from the rules (/work RULES: sections 1-3 and 6), not from the robot.

* random: uniform among the legal moves.
* odds: the binomial odds of a bid from its own dice and the exposed ones
  (every unknown die matches a number bid with 1/3, a star bid with 1/6);
  calls when the expected dice lost by calling are below those of its own
  best raise if that were called; raises to the most likely legal bid (the
  lowest one of those); bluffs rarely (a random face, 1 move in 10).
* counting: the odds player, plus reading each opponent's bids since their
  last re-roll: a seat that bid a face is taken to hold one die of it (two
  after two bids of it) under its cup, the rest unknown.

Cup of Bluff: the odds player announces its true total when the token is in
the centre, otherwise the most likely centre total; as the Guesser it
believes a claim when that total is at least as likely as an average one
(1/16) with three dice; it gives its cheapest token.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pbem.rules.bid_moves import CHALLENGE, BidMove, Move
from pbem.rules.challenge import matches
from pbem.rules.cupofbluff import ANSWER, GIVE, TOTAL_ODDS, CupState, points
from pbem.rules.cupofbluff_moves import Announce, Answer, Give
from pbem.rules.ladder import Bid
from pbem.rules.odds import SeatView
from pbem.rules.ruleset import ExactRule

BLUFF_RATE = 0.1
Player = Callable[[Any, random.Random], Any]   # (a seat's view or the cup state, rng) -> move


def binomial(n_plain: int, n_super: int, p: float) -> list[float]:
    dist = [1.0]
    for weight, n in ((1, n_plain), (2, n_super)):
        for _ in range(n):
            nxt = [0.0] * (len(dist) + weight)
            for c, pr in enumerate(dist):
                nxt[c] += pr * (1 - p)
                nxt[c + weight] += pr * p
            dist = nxt
    return dist


def table_count(view: SeatView, bid: Bid, counting: bool) -> dict[int, float]:
    """P(actual == c) as this player sees it."""
    p = 1 / 6 if bid.is_star else 1 / 3
    known = sum(d.weight for d in view.own.dice + view.others_exposed if matches(d.face, bid))
    plain, super_ = view.unknown_plain, view.unknown_super
    if counting:
        for other in view.others:
            read = min(other.hidden_plain, sum(1 for b in other.bids if matches(b.face, bid)
                                               and (b.face == bid.face or bid.face != 6)), 2)
            known += read
            plain -= read
    return {known + c: pr for c, pr in enumerate(binomial(plain, super_, p))}


def exact_cost_challenger(rule: ExactRule) -> float:
    return 0.0 if rule in (ExactRule.NOBODY, ExactRule.EVERYONE) else 1.0


def odds_move(view: SeatView, rng: random.Random, counting: bool = False) -> Move:
    raises = view.ladder.raises(view.current)
    if not raises:
        return CHALLENGE

    def holds(bid: Bid) -> float:
        return sum(pr for c, pr in table_count(view, bid, counting).items() if c >= bid.quantity)

    scored = [(holds(b), -i, b) for i, b in enumerate(raises[:40])]
    best = max(scored)[2]
    if rng.random() < BLUFF_RATE:
        best = min(scored[:12], key=lambda s: (abs(s[0] - 0.5), s[1]))[2]
    if view.current is not None:
        bid = view.current
        dist = table_count(view, bid, counting)
        call = sum(pr * (c - bid.quantity) for c, pr in dist.items() if c > bid.quantity)
        call += dist.get(bid.quantity, 0.0) * exact_cost_challenger(view.rules.exact_rule)
        mine = table_count(view, best, counting)
        short = sum(pr * (best.quantity - c) for c, pr in mine.items() if c < best.quantity)
        if call < short:
            return CHALLENGE
    return BidMove(best)


def counting_move(view: SeatView, rng: random.Random) -> Move:
    return odds_move(view, rng, counting=True)


def cup_odds_move(state: CupState, seat: int, rng: random.Random) -> Any:
    if state.phase == ANSWER:
        assert state.claim is not None
        return Answer(TOTAL_ODDS[state.claim.total] >= 1 / 16)
    if state.phase == GIVE:
        return Give(min(state.tokens(seat), key=lambda t: (points(t), t)))
    others = [s for s in state.seats if s != seat]
    total = sum(state.roll)
    pick = total if total in state.centre else max(state.centre, key=lambda t: TOTAL_ODDS[t])
    return Announce(pick, rng.choice(others))
