"""Challenge resolution (docs/rules.md sections 2 and 4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pbem.rules.dice import STAR, Die
from pbem.rules.ladder import Bid
from pbem.rules.ruleset import ExactRule


def matches(die_face: int, bid: Bid) -> bool:
    """A star matches every number bid; a star bid counts stars only."""
    return die_face == STAR or die_face == bid.face


def count_matching(dice: Iterable[Die], bid: Bid) -> int:
    return sum(die.weight for die in dice if matches(die.face, bid))


@dataclass(frozen=True)
class ChallengeResult:
    bid: Bid
    bidder: int
    challenger: int
    actual: int
    losses: dict[int, int]   # seat -> dice lost; a negative number is a die gained

    @property
    def outcome(self) -> str:
        if self.actual < self.bid.quantity:
            return "short"
        return "exact" if self.actual == self.bid.quantity else "over"


def resolve_challenge(bid: Bid, bidder: int, challenger: int,
                      dice_by_seat: Mapping[int, Sequence[Die]], rule: ExactRule,
                      *, bidder_at_max: bool = True) -> ChallengeResult:
    """Count the table and say who loses how many.

    ``dice_by_seat`` holds every seat still at the table (hidden and exposed
    dice alike). ``bidder_at_max`` is for the German "challenger gives" rule:
    the bidder gets the die only when below the starting count.
    """
    actual = count_matching((d for dice in dice_by_seat.values() for d in dice), bid)
    losses: dict[int, int] = {}
    if actual < bid.quantity:
        losses[bidder] = bid.quantity - actual
    elif actual > bid.quantity:
        losses[challenger] = actual - bid.quantity
    elif rule is ExactRule.NOBODY:
        pass   # Czech: the challenger owes what the count exceeds the bid by, here 0
    elif rule is ExactRule.ALL_BUT_BIDDER:
        losses = {seat: 1 for seat in dice_by_seat if seat != bidder}
    elif rule is ExactRule.CHALLENGER:
        losses[challenger] = 1
    elif rule is ExactRule.EVERYONE:
        losses = {seat: 1 for seat in dice_by_seat}
    else:
        losses[challenger] = 1
        if not bidder_at_max:
            losses[bidder] = -1
    return ChallengeResult(bid, bidder, challenger, actual, losses)
