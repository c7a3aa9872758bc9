"""The strong robot of Cup of Bluff (docs/rules.md section 6).

A Guesser is modelled as believing a claim the more, the likelier its total
is with three dice (belief(total), a soft threshold at an average total's
chance, 1/16). The Bluffer weighs every claim it may make: the true total
wins when the Guesser calls it a bluff, any other when the Guesser believes
it; a win is worth the token's points, a loss what the Guesser gains, both
against the field (the others' mean). As the Guesser it answers by the
chance the claim is true against a Bluffer who is honest when the total is
in the centre and otherwise claims likely totals. Easy and normal play as
plain_robot_move (at the end).
"""

from __future__ import annotations

import math
import random

from pbem.rules.cupofbluff import (
    ACT,
    ANSWER,
    GIVE,
    TOTAL_ODDS,
    CupState,
    doublets,
    points,
)
from pbem.rules.cupofbluff_moves import Announce, Answer, Doublet, Give, Move, Steal
from pbem.rules.errors import IllegalMove
from pbem.text.wording import _

AVERAGE = 1 / 16       # a total's chance that a Guesser finds believable
SHARPNESS = 60.0       # how sharp that threshold is


def belief(total: int) -> float:
    """How likely a Guesser believes a claim of total."""
    return 1 / (1 + math.exp(-SHARPNESS * (TOTAL_ODDS[total] - AVERAGE)))


def claim_true(state: CupState, total: int) -> float:
    """P(the claim is the rolled total) for a Bluffer honest when it can be."""
    in_centre = sum(TOTAL_ODDS[t] for t in state.centre)
    bluff = (1.0 - in_centre) * TOTAL_ODDS[total] / max(in_centre, 1e-9)
    return TOTAL_ODDS[total] / (TOTAL_ODDS[total] + bluff)


def _win_chance(total: int, rolled: int) -> float:
    """P(the Guesser answers wrongly) for a claim of total."""
    return 1 - belief(total) if total == rolled else belief(total)


def strong_move(state: CupState, seat: int, rng: random.Random) -> Move:
    if seat not in state.due():
        raise IllegalMove(_("it is not player {seat}'s move: {waiting}", seat=seat,
                            waiting=state.waiting_for_said()))
    if state.phase == ANSWER:
        assert state.claim is not None
        return Answer(claim_true(state, state.claim.total) >= 0.5)
    own = state.tokens(seat)
    if state.phase == GIVE:
        return Give(min(own, key=lambda t: (points(t), t)))
    assert state.phase == ACT
    field = max(1, state.players - 1)
    rolled = sum(state.roll)
    others = [s for s in state.seats if s != seat]
    # the Guesser: the player who gains least from being right (the lowest score)
    guesser = min(others, key=lambda s: (state.score(s), rng.random()))
    options: list[tuple[float, float, Move]] = []
    for total in state.centre:
        win = _win_chance(total, rolled)
        value = win * points(total) - (1 - win) * points(total) / field
        options.append((value, rng.random(), Announce(total, guesser)))
    if own:
        gift = min(points(t) for t in own)
        for victim in others:
            for token in state.tokens(victim):
                win = _win_chance(token, rolled)
                value = (win * points(token) - (1 - win) * gift) * (1 + 1 / field)
                options.append((value, rng.random(), Steal(token, victim)))
    for move in doublets(state):
        assert isinstance(move, Doublet)
        gain = points(move.take) - sum(points(t) for t in move.give)
        options.append((gain + 0.5 * len(move.give), rng.random(), move))
    return max(options, key=lambda o: (o[0], o[1]))[2]


def robot_move(state: CupState, seat: int, rng: random.Random, level: str = "normal") -> Move:
    """The cup robot at a level: strong_move, or easy and normal (plain_robot_move)."""
    if level == "strong":
        return strong_move(state, seat, rng)
    return plain_robot_move(state, seat, rng, level)


# --- easy and normal ------------------------------------------------------

def _believed(state: CupState, total: int) -> float:
    """How far a robot Guesser trusts a claim: the total's chance with 3 dice
    (relative to the likeliest total, 10 or 11), times the chance the claim is
    true against a Bluffer who is honest when it can and otherwise bluffs
    uniformly over the centre (that falls as the centre empties)."""
    likely = TOTAL_ODDS[total] / max(TOTAL_ODDS.values())
    in_centre = sum(TOTAL_ODDS[t] for t in state.centre)
    bluff = (1.0 - in_centre) / max(len(state.centre), 1)
    return likely * TOTAL_ODDS[total] / (TOTAL_ODDS[total] + bluff)


def plain_robot_move(state: CupState, seat: int, rng: random.Random,
                     level: str = "normal") -> Move:
    """A legal move for the due seat (draws on rng only, so it is repeatable). The
    easy Guesser answers at a coin's toss; normal and strong play alike."""
    if seat not in state.due():
        raise IllegalMove(_("it is not player {seat}'s move: {waiting}", seat=seat,
                            waiting=state.waiting_for_said()))
    if state.phase == ANSWER:
        assert state.claim is not None
        trust = 0.5 if level == "easy" else _believed(state, state.claim.total)
        return Answer(rng.random() < trust)
    own = state.tokens(seat)
    if state.phase == GIVE:   # the cheapest token; a low number breaks ties
        return Give(min(own, key=lambda t: (points(t), t)))
    total = sum(state.roll)
    others = [s for s in state.seats if s != seat]
    # a doublet is worth it for a 4- or 5-point token, giving back as few as possible
    best = [d for d in doublets(state) if isinstance(d, Doublet) and points(d.take) >= 4]
    if best:
        return min(best, key=lambda d: (-points(d.take), len(d.give), d.give, d.take))
    if total in state.centre:
        return Announce(total, rng.choice(others))
    owner = state.owner(total)
    # an unlikely total is usually called a bluff, so the truth wins it
    if own and owner is not None and owner != seat and points(total) >= 3:
        return Steal(total, owner)
    # a bluff on a likely total is believed more often
    pick = rng.choices(state.centre, weights=[TOTAL_ODDS[t] for t in state.centre])[0]
    return Announce(pick, rng.choice(others))
