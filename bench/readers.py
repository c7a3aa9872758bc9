"""Players who read the bids, to train and test the robot against (bench only).

* reader: the odds player (bench/baselines.py) with a Bayesian belief about
  each other seat's hidden dice instead of plain odds: every hand those dice
  can form, weighed by how likely the seat's bids since its last re-roll are
  with it (pbem.rules.beliefs: a soft choice of the face it holds most of, or
  a bluff at 1 in 10). Exposed dice are known, and an expose re-rolls the rest,
  so the bids before it are forgotten. It bets on that belief: raises to the
  bid most likely to hold, calls when calling costs fewer dice in expectation
  than its own raise would if called, and bluffs 1 move in 10 as odds does.
* wary (bluff-aware): the reader, with a bluff rate for each seat that it
  learns during the game: every reveal (an ended mini-game, a finished round)
  shows what each seat held while it bid, and the rate is the posterior mean
  over a grid of rates, starting from 1 in 10 (a prior worth 10 bids).

Cup of Bluff has no bids to read: both play as the odds player there.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from baselines import BLUFF_RATE, exact_cost_challenger

from pbem.rules.beliefs import BLUFF, bid_likelihood, face_counts, hand_of
from pbem.rules.bid_moves import CHALLENGE, BidMove, Move
from pbem.rules.challenge import count_matching
from pbem.rules.dice import Die
from pbem.rules.ladder import Bid
from pbem.rules.odds import SeatView, count_distribution, match_probability

RATES = tuple(i / 40 for i in range(25))   # the bluff rates a wary player weighs, 0 .. 0.6
RAISE_RISK = 0.25                          # the share of its raise's shortfall a reader fears
PRIOR_BIDS = 10                            # the prior's weight, in bids at rate BLUFF


def convolve(a: Sequence[float], b: Sequence[float]) -> list[float]:
    out = [0.0] * (len(a) + len(b) - 1)
    for i, pa in enumerate(a):
        if pa:
            for j, pb in enumerate(b):
                out[i + j] += pa * pb
    return out


def table_count(view: SeatView, bid: Bid, bluff_of: dict[int, float] | None = None
                ) -> dict[int, float]:
    """P(actual == c) as a reader sees it: own and exposed dice, beliefs for the rest."""
    known = count_matching(view.known, bid)
    if not view.others:
        dist: Sequence[float] = count_distribution(view.unknown_plain, view.unknown_super,
                                                   match_probability(bid))
    else:
        dist = [1.0]
        for other in view.others:
            rate = (bluff_of or {}).get(other.seat, BLUFF)
            dist = convolve(dist, face_counts(other.hidden_plain, other.hidden_super,
                                              other.bids, bid.face, rate,
                                              view.rules.star_bids))
    return {known + c: pr for c, pr in enumerate(dist) if pr > 1e-12}


def reader_move(view: SeatView, rng: random.Random,
                bluff_of: dict[int, float] | None = None) -> Move:
    raises = view.ladder.raises(view.current)
    if not raises:
        return CHALLENGE
    cache: dict[int, dict[int, float]] = {}

    def dist(bid: Bid) -> dict[int, float]:
        if bid.face not in cache:
            cache[bid.face] = table_count(view, Bid(1, bid.face), bluff_of)
        return cache[bid.face]

    def holds(bid: Bid) -> float:
        return sum(pr for c, pr in dist(bid).items() if c >= bid.quantity)

    scored = [(holds(b), -i, b) for i, b in enumerate(raises[:40])]
    best = max(scored)[2]
    if rng.random() < BLUFF_RATE:
        best = min(scored[:12], key=lambda s: (abs(s[0] - 0.5), s[1]))[2]
    if view.current is not None:
        bid = view.current
        now = dist(bid)
        call = sum(pr * (c - bid.quantity) for c, pr in now.items() if c > bid.quantity)
        call += now.get(bid.quantity, 0.0) * exact_cost_challenger(view.rules.exact_rule)
        mine = dist(best)
        short = sum(pr * (best.quantity - c) for c, pr in mine.items() if c < best.quantity)
        if call < RAISE_RISK * short:
            return CHALLENGE
    return BidMove(best)


def hidden_at_reveal(dice: Sequence[Die], exposed: Sequence[int]) -> tuple[list[int], list[int]]:
    """(plain faces, super faces) of a seat's hidden dice: its dice less those it exposed."""
    shown = Counter(exposed)
    plain: list[int] = []
    supers: list[int] = []
    for die in sorted(dice, key=lambda d: d.super):   # the plain dice show first
        if shown[die.face] > 0:
            shown[die.face] -= 1
        else:
            (supers if die.super else plain).append(die.face)
    return plain, supers


@dataclass
class Wary:
    """A bluff-aware reader for one game: it learns each seat's bluff rate from the
    reveals it has seen (ended mini-games in postal, finished rounds in classic)."""

    seen: set[Any] = field(default_factory=set)
    # seat -> log-likelihood of each rate in RATES over that seat's revealed bids
    loglik: dict[int, list[float]] = field(default_factory=dict)

    def learn(self, key: Any, placed: Sequence[Any], table: dict[int, tuple[Die, ...]],
              star_bids: bool) -> None:
        if key in self.seen:
            return
        self.seen.add(key)
        for seat, dice in table.items():
            exposed = [f for b in placed if b.seat == seat for f in b.exposed]
            plain, supers = hidden_at_reveal(dice, exposed)
            hand = hand_of(plain, supers)
            mine: list[Bid] = []
            for b in placed:
                if b.seat == seat:
                    mine = [] if b.exposed else mine + [b.bid]
            row = self.loglik.setdefault(seat, [0.0] * len(RATES))
            for bid in mine:
                for i, rate in enumerate(RATES):
                    row[i] += math.log(bid_likelihood(hand, bid.face, rate, star_bids))

    def rate(self, seat: int) -> float:
        row = self.loglik.get(seat, [0.0] * len(RATES))
        # prior: as if PRIOR_BIDS bids had been seen with a 1-in-10 bluff (a beta-like shape)
        prior = [PRIOR_BIDS * (BLUFF * math.log(max(r, 1e-3)) +
                               (1 - BLUFF) * math.log(max(1 - r, 1e-3))) for r in RATES]
        logs = [a + b for a, b in zip(row, prior)]
        top = max(logs)
        weights = [math.exp(x - top) for x in logs]
        return sum(w * r for w, r in zip(weights, RATES)) / sum(weights)

    def observe(self, kind: str, state: Any) -> None:
        if kind == "postal":
            for game in state.minigames:
                if game.challenge is not None:
                    self.learn(("m", game.number), game.bids, game.challenge.table,
                               state.rules.star_bids)
        elif kind == "classic":
            for end in state.finished:
                self.learn(("r", end.round), end.bids, end.table, state.rules.star_bids)

    def move(self, kind: str, state: Any, view: SeatView, rng: random.Random) -> Move:
        self.observe(kind, state)
        return reader_move(view, rng, {o.seat: self.rate(o.seat) for o in view.others})
