"""First place over the whole postal game: what an outcome does to the robot's chance.

A postal game is five mini-games at once; the most virtual dice after all five
wins, equal counts sharing first place. A one-move robot scores an outcome by
the dice it moves, the same whatever the standings; here an outcome is worth
what it changes in the robot's fair share of first place (a first shared by k
counts 1/k) once the mini-games still running have ended too. Each of those
is taken to end as the arena's games did (600 postal games from seed 700000,
the robot against four readers and four odds players: bench/robot_arena.py
--endings): an exact count (all but the bidder lose a die) or one seat losing
1 to 4 dice (4 standing for 4 or more), each seat alike.

So a die lost costs a leader more than a robot behind, which gains more by an
exact count of its own (every rival loses a die) than a further die lost costs
it; and a die lost by a rival counts by how far that rival stands from first
place. The strong robot weighs it at robot_strong.STANDINGS (half, and level
with the leaders only as far as the next seat reads as a bid reader: docs/robot-history.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

# dice per player of a mini-game -> how its 600 games ended: exact counts, and one
# seat losing 1, 2, 3, 4 or more dice
ENDED: dict[int, tuple[int, tuple[int, ...]]] = {
    5: (85, (159, 116, 99, 141)),
    4: (83, (178, 135, 104, 100)),
    3: (125, (184, 144, 88, 59)),
    2: (155, (233, 158, 39, 15)),
    1: (208, (301, 91)),
}
# ... as chances: (P(exact count), P(one seat loses 1, 2, ... dice))
ENDINGS: dict[int, tuple[float, tuple[float, ...]]] = {
    dice: (exact / (exact + sum(lost)), tuple(n / (exact + sum(lost)) for n in lost))
    for dice, (exact, lost) in ENDED.items()}
SPREAD = 6   # differences in virtual dice beyond this are taken as this (decided)


def _clamp(d: int) -> int:
    return max(-SPREAD, min(SPREAD, d))


def _share(rivals: tuple[int, ...]) -> float:
    """The robot's fair share of first place, rivals its rivals' dice less its own."""
    top = max(rivals) if rivals else -1
    if top > 0:
        return 0.0
    return 1.0 / (1 + sum(1 for r in rivals if r == 0))


@lru_cache(maxsize=65536)
def first_share(rivals: tuple[int, ...], later: tuple[int, ...]) -> float:
    """The robot's expected fair share of first place: rivals (sorted) the rivals' virtual
    dice less the robot's, later the dice per player of the mini-games yet to end."""
    if not later:
        return _share(rivals)
    exact, losses = ENDINGS.get(later[0], ENDINGS[1])
    rest = later[1:]
    seats = len(rivals) + 1

    def after(moved: list[int]) -> float:
        if not rest:   # the clamp keeps who is ahead, level and behind
            return _share(tuple(moved))
        return first_share(tuple(sorted(_clamp(d) for d in moved)), rest)

    # rivals level with each other fare alike: each distinct one once, times how many
    level = [(d, rivals.count(d), rivals.index(d)) for d in sorted(set(rivals))]
    total = 0.0
    if exact > 0.0:   # the bidder keeps its dice, every other seat loses one
        total += exact * after([d - 1 for d in rivals])
        for d, many, i in level:
            total += exact * many * after([*rivals[:i], d + 1, *rivals[i + 1:]])
    for k, pk in enumerate(losses, start=1):
        if pk <= 0.0:
            continue
        total += pk * after([d + k for d in rivals])   # the robot loses k
        for d, many, i in level:
            total += pk * many * after([*rivals[:i], d - k, *rivals[i + 1:]])
    return total / seats


def share_after(scores: Mapping[int, int], me: int, losses: Mapping[int, int],
                later: Sequence[int]) -> float:
    """The robot's expected fair share once losses (seat -> dice) came off scores
    (seat -> virtual dice) and the mini-games of later ended as ENDINGS has them."""
    mine = scores[me] - losses.get(me, 0)
    rivals = tuple(sorted(_clamp(v - losses.get(s, 0) - mine)
                          for s, v in scores.items() if s != me))
    return first_share(rivals, tuple(sorted(later, reverse=True)))


@lru_cache(maxsize=1)
def unit() -> float:
    """What losing one die in the first mini-game, all five to play, costs the robot's
    share: the scale that makes this worth -1, as a lost die is to the one-move robot."""
    even = {s: 5 for s in range(1, 6)}
    later = (4, 3, 2, 1)
    return share_after(even, 1, {}, (5, *later)) - share_after(even, 1, {1: 1}, later)
