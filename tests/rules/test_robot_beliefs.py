"""The strong robot's beliefs from the bids and its scoring of outcomes against the field."""

from __future__ import annotations

import gc
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.rules import beliefs
from pbem.rules.dice import FACES, STAR
from pbem.rules.ladder import Bid
from pbem.rules.odds import OtherSeat, bids_since_reroll, count_distribution
from pbem.rules.robot_choice import choose_strong
from pbem.rules.robot_search import seat_distribution
from pbem.rules.robot_strong import GAIN_WEIGHT, outcome_value
from pbem.rules.ruleset import ExactRule
from testkit.robot_play import postal_played

bids = st.lists(st.builds(Bid, st.integers(1, 20), st.sampled_from([1, 2, 3, 4, 5, STAR])),
                max_size=6).map(tuple)


def mean(dist: tuple[float, ...]) -> float:
    return sum(c * p for c, p in enumerate(dist))


def test_no_bids_no_tilt() -> None:
    """Without bids a seat's counts are the plain odds: 1/3 a die for a number, 1/6 a star."""
    for face, p in ((4, 1 / 3), (STAR, 1 / 6)):
        dist = beliefs.face_counts(3, 1, (), face)
        assert dist == pytest.approx(count_distribution(3, 1, p))


def test_the_hands_of_a_seat_are_every_roll() -> None:
    hands = beliefs.hands(5, 0)
    assert len(hands) == 252 and sum(p for _, p in hands) == pytest.approx(1.0)
    assert len(beliefs.hands(5, 1)) > 252
    assert all(sum(h) == 5 + 2 for h, _ in beliefs.hands(5, 1))   # a super die counts twice


def test_a_bid_of_fours_makes_fours_likelier_and_others_less_likely() -> None:
    fours = beliefs.face_counts(5, 0, (Bid(3, 4),), 4)
    twos = beliefs.face_counts(5, 0, (Bid(3, 4),), 2)
    assert mean(fours) > 5 / 3 > mean(twos)


def test_two_bids_of_a_face_say_more_than_one() -> None:
    once = beliefs.face_counts(5, 0, (Bid(3, 4),), 4)
    twice = beliefs.face_counts(5, 0, (Bid(3, 4), Bid(5, 4)), 4)
    assert mean(twice) > mean(once)


def test_a_bluffer_s_bids_say_less() -> None:
    honest = beliefs.face_counts(5, 0, (Bid(3, 4),), 4, bluff=0.05)
    bluffer = beliefs.face_counts(5, 0, (Bid(3, 4),), 4, bluff=0.6)
    assert mean(honest) > mean(bluffer) > 5 / 3
    assert beliefs.face_counts(5, 0, (Bid(3, 4),), 4, bluff=1.0) == pytest.approx(
        count_distribution(5, 0, 1 / 3))


def test_honest_faces_are_the_strongest() -> None:
    assert beliefs.honest_faces(beliefs.hand_of([4, 4, 2, 1, 3])) == (4,)
    assert beliefs.honest_faces(beliefs.hand_of([STAR, STAR, STAR, 1, 3])) == (STAR,)


@settings(deadline=None)   # a new seat's table takes a few ms under a loaded machine
@given(bids, st.integers(0, 5), st.integers(0, 1), st.floats(0.0, 1.0))
def test_counts_are_distributions(made: tuple[Bid, ...], plain: int, super_: int,
                                  bluff: float) -> None:
    for face in FACES:
        dist = beliefs.face_counts(plain, super_, made, face, bluff)
        assert len(dist) == plain + 2 * super_ + 1
        assert sum(dist) == pytest.approx(1.0) and min(dist) >= 0.0
    dist = seat_distribution(OtherSeat(2, 3, 1, made), 3)
    assert sum(dist) == pytest.approx(1.0) and len(dist) == 3 + 2 + 1


def test_bids_before_an_expose_are_forgotten() -> None:
    placed = [(2, Bid(2, 3), False), (3, Bid(3, 3), False), (2, Bid(4, 3), True),
              (3, Bid(5, 3), False), (2, Bid(6, 5), False)]
    assert bids_since_reroll(placed, 2) == (Bid(6, 5),)
    assert bids_since_reroll(placed, 3) == (Bid(3, 3), Bid(5, 3))
    assert bids_since_reroll(placed, 4) == ()


def test_postal_exact_bid_is_a_gain_for_the_bidder_at_half_weight() -> None:
    rule = ExactRule.ALL_BUT_BIDDER
    # every other player loses a die: +1 against the field, counted at GAIN_WEIGHT
    assert outcome_value(6, 6, True, rule, 5) == pytest.approx(GAIN_WEIGHT) == 0.5
    # the challenger loses one die, as do the three others: a quarter against the field
    assert outcome_value(6, 6, False, rule, 5) == pytest.approx(-0.25)


def test_outcomes_are_weighed_for_first_place() -> None:
    """A die won off one rival counts half its share of the field; the first die the
    robot loses counts whole, each die after it half."""
    rule = ExactRule.ALL_BUT_BIDDER
    assert outcome_value(5, 6, True, rule, 5) == -1             # short by 1: the bidder pays
    assert outcome_value(4, 6, True, rule, 5) == pytest.approx(-1.5)   # short by 2
    assert outcome_value(4, 6, False, rule, 5) == pytest.approx(2 / 4 * 0.5)
    assert outcome_value(9, 6, False, rule, 5) == pytest.approx(-2.0)  # over by 3
    assert outcome_value(9, 6, True, rule, 5) == pytest.approx(3 / 4 * 0.5)


@given(st.integers(0, 30), st.integers(1, 30), st.booleans(), st.integers(2, 6))
def test_a_loss_outweighs_the_same_gain(actual: int, quantity: int, bidder: bool,
                                        players: int) -> None:
    """Whoever pays, a die lost costs the robot more than a die won off a rival pays
    it, and more dice lost never cost less."""
    rule = ExactRule.ALL_BUT_BIDDER
    value = outcome_value(actual, quantity, bidder, rule, players)
    off = abs(actual - quantity)
    if value < 0 and actual != quantity:
        assert -off <= value <= -1.0
        worse = actual - 1 if bidder else actual + 1
        assert outcome_value(worse, quantity, bidder, rule, players) < value
    elif value > 0 and actual != quantity:
        assert value == pytest.approx(GAIN_WEIGHT * off / (players - 1))
        as_loser = outcome_value(quantity - off, quantity, True, rule, players)
        assert value < -as_loser


@pytest.mark.parametrize("rule,bidder,challenger", [
    (ExactRule.NOBODY, 0.0, 0.0), (ExactRule.EVERYONE, 0.0, 0.0),
    (ExactRule.CHALLENGER, GAIN_WEIGHT / 3, -1.0)])
def test_exact_under_each_rule(rule: ExactRule, bidder: float, challenger: float) -> None:
    assert outcome_value(5, 5, True, rule, 4) == pytest.approx(bidder)
    assert outcome_value(5, 5, False, rule, 4) == pytest.approx(challenger)


@given(st.integers(0, 30), st.integers(1, 30), st.sampled_from(list(ExactRule)),
       st.integers(2, 6))
def test_the_challenger_wins_what_the_bidder_loses_when_short(actual: int, quantity: int,
                                                              rule: ExactRule,
                                                              players: int) -> None:
    bidder = outcome_value(actual, quantity, True, rule, players)
    challenger = outcome_value(actual, quantity, False, rule, players)
    if actual < quantity:
        assert bidder < 0 < challenger
    elif actual > quantity:
        assert challenger < 0 < bidder


@settings(deadline=None)
@given(bids, st.integers(0, 5), st.integers(0, 1))
def test_a_seat_s_tables_depend_on_the_faces_of_its_bids_alone(
        made: tuple[Bid, ...], plain: int, super_: int) -> None:
    """The caches are keyed by the faces (plain ints): the bids' quantities say nothing."""
    faces = beliefs.faces_of(made)
    assert all(type(face) is int for face in faces)
    assert beliefs.seat_counts(plain, super_, made) == beliefs.face_tables(plain, super_, faces)
    assert beliefs.posterior(plain, super_, made) == beliefs.hand_weights(plain, super_, faces)
    other = tuple(Bid(b.quantity + 1, b.face) for b in made)
    assert beliefs.seat_counts(plain, super_, other) == beliefs.seat_counts(plain, super_, made)


def test_the_robot_s_belief_caches_hold_nothing_the_collector_tracks() -> None:
    """Cache keys holding Bid instances stayed tracked by the garbage collector, and
    thousands of them made its full passes cost a move 50 ms: after a collection, no
    key of the belief caches is tracked (tuples of plain values are untracked)."""
    beliefs.face_tables.cache_clear()
    beliefs.hand_weights.cache_clear()
    state = postal_played(41, 12)
    for seat, number in sorted(state.due().items()):
        choose_strong(state.seat_view(seat, number), random.Random(seat))
    gc.collect()
    gc.collect()   # a key is untracked once the tuple inside it is
    for cache in (beliefs.face_tables, beliefs.hand_weights):
        keys = [key for found in gc.get_referents(cache) if isinstance(found, dict)
                for key in found]
        assert keys and not any(gc.is_tracked(key) for key in keys)
