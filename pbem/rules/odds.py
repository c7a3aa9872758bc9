"""What one player can know: the odds that a bid holds (docs/rules.md section 1).

Unknown dice are independent: each matches a number bid with p = 1/3 (its
face or a star) and a star bid with p = 1/6. A super die counts twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

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


class Answer(NamedTuple):
    """How a seat answered a bid: called it or raised, and the bid's plain odds as
    that seat saw them then (its own dice, the dice exposed so far, every other die
    at 1/3 or 1/6), each with its chance: one pair when a reveal showed its hand, one
    a possible hand otherwise. What tells a bid reader from an odds player. A
    tuple of plain values, so the garbage collector stops tracking the cached ones
    (thousands of tracked objects made its full passes cost a move 60 ms)."""

    seat: int
    called: bool
    odds: tuple[tuple[float, float], ...]   # (chance, plain odds that the bid holds)


# a round's bids in order as (seat, bid, faces exposed)
Placed = tuple[tuple[int, Bid, tuple[Face, ...]], ...]


def answers(placed: Placed, sizes: Mapping[int, int], challenger: int | None = None,
            table: Mapping[int, Sequence[Die]] | None = None) -> tuple[Answer, ...]:
    """Each answer to a bid in a round whose seats hold sizes dice (seat -> dice): the
    raises, and the call that ended it if challenger. table, every seat's dice at
    the reveal, shows the hand of a seat's answers after its last expose."""
    shown = tuple(sorted((s, tuple(d)) for s, d in (table or {}).items()))
    return _answers(placed, tuple(sorted(sizes.items())), challenger, shown)


@lru_cache(maxsize=256)
def _answers(placed: Placed, sizes: tuple[tuple[int, int], ...], challenger: int | None,
             table: tuple[tuple[int, tuple[Die, ...]], ...]) -> tuple[Answer, ...]:
    dice = dict(table)
    total = sum(n for _, n in sizes)
    size = dict(sizes)
    last_expose = {seat: i for i, (seat, _, faces) in enumerate(placed) if faces}
    faced = [(i, seat, False) for i, (seat, _, _) in enumerate(placed) if i > 0]
    if challenger is not None and placed:
        faced.append((len(placed), challenger, True))
    out: list[Answer] = []
    for i, seat, called in faced:
        if seat not in size:
            continue
        bid = placed[i - 1][1]
        p = match_probability(bid)
        mine = [f for s, _, faces in placed[:i] if s == seat for f in faces]
        theirs = [f for s, _, faces in placed[:i] if s != seat for f in faces]
        seen = sum(1 for f in theirs if matches(f, bid))
        unknown = count_distribution(max(0, total - size[seat] - len(theirs)), 0, p)

        def holds(own: int, dist: tuple[float, ...] = unknown, q: int = bid.quantity,
                  seen: int = seen) -> float:
            need = q - own - seen
            return 1.0 if need <= 0 else min(1.0, sum(dist[need:]))

        if seat in dice and last_expose.get(seat, -1) < i:   # its hand then is shown
            pairs: tuple[tuple[float, float], ...] = (
                (1.0, holds(count_matching(dice[seat], bid))),)
        else:   # its hidden dice then at plain odds
            known = sum(1 for f in mine if matches(f, bid))
            spread = count_distribution(max(0, size[seat] - len(mine)), 0, p)
            pairs = tuple((pr, holds(known + m)) for m, pr in enumerate(spread) if pr > 1e-9)
        out.append(Answer(seat, called, pairs))
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
    answers: tuple[Answer, ...] = ()     # the other seats' answers in this game
    # postal: every seat's virtual dice (index seat - 1), and the dice a player of each
    # other running mini-game (first place is decided over all five)
    virtual_dice: tuple[int, ...] = ()
    later: tuple[int, ...] = ()

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
