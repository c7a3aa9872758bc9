"""What a seat's bids say about its hidden dice: an exact Bayesian posterior.

A seat's hidden dice were rolled (or re-rolled by its last expose) at random,
so before its bids every hand is as likely as the dice make it. Each bid it
made since is evidence: a player bids the face it holds most of, so the model
of a bid is a soft choice among the faces weighted by how many of the hand's
dice match each (a number face: that face and the stars; a star bid: the stars
twice, as a star bid stands at about half the quantity), mixed with a bluff
(any face alike) at the seat's bluff rate. The posterior over every hand the
hidden dice can form (multisets: at most 462 for six dice) gives, for each
face, the exact distribution of the seat's matching count. A super die counts
twice in its hand and in every count. Pure and cached: the same seat, bids
and rate give the same tables at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations_with_replacement

from pbem.rules.dice import FACES, STAR, Face
from pbem.rules.ladder import Bid

SHARPNESS = 1.5   # how strongly a bid follows the face the bidder holds most of
STAR_SLOPE = 2.0  # a star bid's strength per star held
STAR_OFFSET = 1.5 # ... less this (star bids are rarer than their odds make them)
BLUFF = 0.15      # the bluff rate assumed when none is known

Hand = tuple[int, ...]   # weighted count of each face of FACES (a super die adds 2)
Dist = tuple[float, ...]
Faces = tuple[int, ...]  # the faces of a seat's bids (faces_of)


def matching(hand: Hand, face: Face) -> int:
    """Dice of the hand that count for a bid of face (stars count for every number)."""
    stars = hand[5]
    return stars if face == STAR else hand[face - 1] + stars


def strength(hand: Hand, face: Face) -> float:
    """How good a bid of face is for the hand's owner: a star bid stands at about
    half the quantity of a number bid, so its stars count twice."""
    return STAR_SLOPE * hand[5] - STAR_OFFSET if face == STAR else hand[face - 1] + hand[5]


@lru_cache(maxsize=64)
def hands(plain: int, super_: int) -> tuple[tuple[Hand, float], ...]:
    """Every hand of plain dice and super dice with its chance (a super die adds 2)."""
    out: dict[Hand, float] = {}
    for rolled in combinations_with_replacement(range(6), plain):
        counts = [0] * 6
        for face in rolled:
            counts[face] += 1
        chance = math.factorial(plain) / math.prod(math.factorial(c) for c in counts) / 6 ** plain
        for supers in combinations_with_replacement(range(6), super_):
            total = list(counts)
            for face in supers:
                total[face] += 2
            extra = (math.factorial(super_) / math.prod(math.factorial(supers.count(f))
                                                         for f in range(6)) / 6 ** super_)
            hand = tuple(total)
            out[hand] = out.get(hand, 0.0) + chance * extra
    return tuple(out.items())


@lru_cache(maxsize=4096)
def likelihoods(hand: Hand, bluff: float, star_bids: bool = True) -> tuple[float, ...]:
    """P(a seat holding hand bids each face of FACES): a soft best face, or a bluff."""
    faces = FACES if star_bids else FACES[:5]
    weights = [math.exp(SHARPNESS * strength(hand, f)) if f in faces else 0.0 for f in FACES]
    total = sum(weights)
    return tuple((1.0 - bluff) * (w / total) + (bluff / len(faces) if f in faces else 0.0)
                 for f, w in zip(FACES, weights))


def bid_likelihood(hand: Hand, face: Face, bluff: float, star_bids: bool = True) -> float:
    """P(a seat holding hand bids face): a soft best face, or a bluff at rate bluff."""
    return likelihoods(hand, bluff, star_bids)[FACES.index(face)]


def faces_of(bids: Sequence[Bid]) -> Faces:
    """The faces of bids, in order: all a bid says of its bidder's hand here. The
    caches below are keyed by these plain ints, not by the bids: keys holding Bid
    instances stay tracked by the garbage collector, and 8,000 of them made its
    full passes cost a move 50 ms (docs/robot-history.md)."""
    return tuple(bid.face for bid in bids)


def posterior(plain: int, super_: int, bids: Sequence[Bid], bluff: float = BLUFF,
              star_bids: bool = True) -> tuple[tuple[Hand, ...], tuple[float, ...]]:
    """Every hand the seat's hidden dice can form and its chance given the bids it
    made since its last re-roll (summing to 1)."""
    return hand_weights(plain, super_, faces_of(bids), bluff, star_bids)


@lru_cache(maxsize=1024)
def hand_weights(plain: int, super_: int, faces: Faces, bluff: float = BLUFF,
                 star_bids: bool = True) -> tuple[tuple[Hand, ...], tuple[float, ...]]:
    """posterior, from the faces of the bids (faces_of)."""
    indices = [FACES.index(face) for face in faces]
    found = hands(plain, super_)
    weights: list[float] = []
    for hand, prior in found:
        weight = prior
        if indices:
            chances = likelihoods(hand, bluff, star_bids)
            for i in indices:
                weight *= chances[i]
        weights.append(weight)
    total = sum(weights) or 1.0
    return tuple(h for h, _ in found), tuple(w / total for w in weights)


def seat_counts(plain: int, super_: int, bids: Sequence[Bid], bluff: float = BLUFF,
                star_bids: bool = True) -> tuple[Dist, ...]:
    """For each face of FACES, P(the seat's matching count == c), c = 0..its dice,
    given the bids it made since its last re-roll."""
    return face_tables(plain, super_, faces_of(bids), bluff, star_bids)


@lru_cache(maxsize=8192)
def face_tables(plain: int, super_: int, faces: Faces, bluff: float = BLUFF,
                star_bids: bool = True) -> tuple[Dist, ...]:
    """seat_counts, from the faces of the bids (faces_of)."""
    top = plain + 2 * super_
    dists = [[0.0] * (top + 1) for _ in FACES]
    for hand, weight in zip(*hand_weights(plain, super_, faces, bluff, star_bids)):
        for i, face in enumerate(FACES):
            dists[i][matching(hand, face)] += weight
    return tuple(tuple(d) for d in dists)


def face_counts(plain: int, super_: int, bids: Sequence[Bid], face: Face,
                bluff: float = BLUFF, star_bids: bool = True) -> Dist:
    """P(the seat's matching count for a bid of face == c), c = 0..its dice."""
    rate = round(min(1.0, max(0.0, bluff)), 3)   # a coarse rate keeps the cache small
    return face_tables(plain, super_, faces_of(bids), rate, star_bids)[FACES.index(face)]


def honest_faces(hand: Hand, star_bids: bool = True) -> tuple[Face, ...]:
    """The faces an honest player holding hand would bid (its strongest ones)."""
    faces = FACES if star_bids else FACES[:5]
    best = max(strength(hand, f) for f in faces)
    return tuple(f for f in faces if strength(hand, f) == best)


def hand_of(faces: Sequence[Face], supers: Sequence[Face] = ()) -> Hand:
    """The Hand of plain dice faces and super dice faces."""
    counts = [0] * 6
    for face in faces:
        counts[FACES.index(face)] += 1
    for face in supers:
        counts[FACES.index(face)] += 2
    return tuple(counts)
