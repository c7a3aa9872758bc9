"""What one player can know: the odds that a bid holds (docs/rules.md section 1).

Unknown dice are independent: each matches a number bid with p = 1/3 (its
face or a star) and a star bid with p = 1/6. A super die counts twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pbem.rules.challenge import count_matching, matches
from pbem.rules.dice import Die, Face
from pbem.rules.dice_cup import Cup
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.ruleset import RuleSet


@dataclass(frozen=True)
class Odds:
    holds: float   # P(actual >= quantity)
    exact: float   # P(actual == quantity)


@dataclass(frozen=True)
class OtherSeat:
    """What a seat knows of another seat in the round: its hidden dice count and
    its bids since its last re-roll (a bid with an expose re-rolled the rest, so
    it and the bids before it say nothing about the dice now hidden)."""

    seat: int
    hidden_plain: int
    hidden_super: int
    bids: tuple[Bid, ...] = ()


def bids_since_reroll(placed: Sequence[tuple[int, Bid, bool]], seat: int) -> tuple[Bid, ...]:
    """seat's bids after its last expose; placed is (seat, bid, exposed) in order."""
    mine: list[Bid] = []
    for bidder, bid, exposed in placed:
        if bidder == seat:
            mine = [] if exposed else mine + [bid]
    return tuple(mine)


def other_seats(cups: Sequence[tuple[int, Cup]], placed: Sequence[tuple[int, Bid, bool]],
                seat: int) -> tuple[OtherSeat, ...]:
    """Every other seat's OtherSeat, from (seat, cup) pairs and the round's bids."""
    return tuple(OtherSeat(s, sum(1 for d in c.hidden if not d.super),
                           sum(1 for d in c.hidden if d.super), bids_since_reroll(placed, s))
                 for s, c in cups if s != seat)


@dataclass(frozen=True)
class Answer:
    """How a seat answered a bid in a round now revealed: called it or raised, and the
    bid's plain odds as that seat saw them then (its own dice, the dice exposed so
    far, every other die at 1/3 or 1/6): what tells a bid reader from an odds player."""

    seat: int
    called: bool
    holds: float


# a revealed round: its bids in order as (seat, bid, faces exposed), the challenger,
# and every seat's dice at the reveal
Placed = tuple[tuple[int, Bid, tuple[Face, ...]], ...]


def answers(placed: Placed, challenger: int | None,
            table: Mapping[int, Sequence[Die]]) -> tuple[Answer, ...]:
    """Each answer to a bid in a revealed round whose hand the reveal shows: a
    seat's answers after its last expose (before it, its hidden dice were others)."""
    if not table:
        return ()
    return _answers(placed, challenger, tuple(sorted((s, tuple(d)) for s, d in table.items())))


@lru_cache(maxsize=1024)
def _answers(placed: Placed, challenger: int | None,
             table: tuple[tuple[int, tuple[Die, ...]], ...]) -> tuple[Answer, ...]:
    dice = dict(table)
    last_expose = {seat: i for i, (seat, _, shown) in enumerate(placed) if shown}
    faced = [(i, seat, False) for i, (seat, _, _) in enumerate(placed) if i > 0]
    if challenger is not None and placed:
        faced.append((len(placed), challenger, True))
    out: list[Answer] = []
    for i, seat, called in faced:
        if seat not in dice or last_expose.get(seat, -1) >= i:
            continue
        bid = placed[i - 1][1]
        shown = [f for s, _, faces in placed[:i] if s != seat for f in faces]
        own = count_matching(dice[seat], bid)
        seen = sum(1 for f in shown if matches(f, bid))
        unknown = sum(len(d) for s, d in table if s != seat) - len(shown)
        need = bid.quantity - own - seen
        tail = count_distribution(max(0, unknown), 0, match_probability(bid))[max(0, need):]
        out.append(Answer(seat, called, 1.0 if need <= 0 else min(1.0, sum(tail))))
    return tuple(out)


@dataclass(frozen=True)
class SeatView:
    """One seat's knowledge of one running round: what the robot and the odds use."""

    seat: int
    own: Cup
    others_exposed: tuple[Die, ...]
    unknown_plain: int        # other players' hidden plain dice
    unknown_super: int        # other players' hidden super dice
    current: Bid | None
    ladder: Ladder
    rules: RuleSet
    others: tuple[OtherSeat, ...] = ()   # the other seats in the round, for beliefs
    next_seat: int | None = None         # the seat that answers this seat's bid
    own_bids: tuple[Bid, ...] = ()       # this seat's bids since its last re-roll
    answers: tuple[Answer, ...] = ()     # the other seats' answers in revealed rounds

    @property
    def known(self) -> tuple[Die, ...]:
        return self.own.dice + self.others_exposed


def match_probability(bid: Bid) -> float:
    return 1 / 6 if bid.is_star else 1 / 3


@lru_cache(maxsize=4096)
def count_distribution(plain: int, super_: int, p: float) -> tuple[float, ...]:
    """P(matching count == c) for c = 0..plain + 2*super_ over the unknown dice."""
    dist = [1.0]
    for weight, n in ((1, plain), (2, super_)):
        for _ in range(n):
            nxt = [0.0] * (len(dist) + weight)
            for c, pr in enumerate(dist):
                nxt[c] += pr * (1 - p)
                nxt[c + weight] += pr * p
            dist = nxt
    return tuple(dist)


def actual_distribution(view: SeatView, bid: Bid) -> dict[int, float]:
    """P(actual == c) for the whole table, from this seat's point of view."""
    known = count_matching(view.known, bid)
    dist = count_distribution(view.unknown_plain, view.unknown_super, match_probability(bid))
    return {known + c: pr for c, pr in enumerate(dist) if pr > 0}


def bid_odds(view: SeatView, bid: Bid) -> Odds:
    dist = actual_distribution(view, bid)
    holds = sum(pr for c, pr in dist.items() if c >= bid.quantity)
    return Odds(holds=min(1.0, holds), exact=dist.get(bid.quantity, 0.0))
