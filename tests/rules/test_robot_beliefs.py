"""The strong robot's beliefs from the bids and its scoring of outcomes against the field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.rules.dice import STAR
from pbem.rules.ladder import Bid
from pbem.rules.odds import OtherSeat, bids_since_reroll
from pbem.rules.robot_strong import (
    FACE_WEIGHT,
    STAR_WEIGHT,
    die_posterior,
    match_chance,
    outcome_value,
    seat_distribution,
)
from pbem.rules.ruleset import ExactRule

bids = st.lists(st.builds(Bid, st.integers(1, 20), st.sampled_from([1, 2, 3, 4, 5, STAR])),
                max_size=6).map(tuple)


def test_no_bids_no_tilt() -> None:
    post = die_posterior(())
    assert all(p == pytest.approx(1 / 6) for p in post.values())
    assert match_chance(post, 4) == pytest.approx(1 / 3)
    assert match_chance(post, STAR) == pytest.approx(1 / 6)


def test_a_bid_of_fours_makes_fours_likelier_and_leaves_the_stars() -> None:
    post = die_posterior((Bid(3, 4),))
    w = 1 + FACE_WEIGHT
    assert post[4] == pytest.approx(5 / 6 * w / (w + 4))
    assert post[STAR] == pytest.approx(1 / 6)   # a number bid says nothing of stars
    assert post[4] > post[STAR] and post[2] == post[1] < 1 / 6
    assert match_chance(post, 4) > 1 / 3 > match_chance(post, 2)


def test_two_bids_of_a_face_say_more_than_one() -> None:
    once, twice = die_posterior((Bid(3, 4),)), die_posterior((Bid(3, 4), Bid(5, 4)))
    assert twice[4] > once[4]


def test_star_bids_tilt_stars_only() -> None:
    post = die_posterior((Bid(2, STAR),))
    assert post[STAR] == pytest.approx((1 + STAR_WEIGHT) / (6 + STAR_WEIGHT))
    assert post[STAR] > 1 / 6 and post[1] == post[5]


@given(bids)
def test_posterior_is_a_distribution(made: tuple[Bid, ...]) -> None:
    post = die_posterior(made)
    assert sum(post.values()) == pytest.approx(1.0)
    dist = seat_distribution(OtherSeat(2, 3, 1, made), 3)
    assert sum(dist) == pytest.approx(1.0) and len(dist) == 3 + 2 + 1


def test_bids_before_an_expose_are_forgotten() -> None:
    placed = [(2, Bid(2, 3), False), (3, Bid(3, 3), False), (2, Bid(4, 3), True),
              (3, Bid(5, 3), False), (2, Bid(6, 5), False)]
    assert bids_since_reroll(placed, 2) == (Bid(6, 5),)
    assert bids_since_reroll(placed, 3) == (Bid(3, 3), Bid(5, 3))
    assert bids_since_reroll(placed, 4) == ()


def test_postal_exact_bid_is_plus_one_for_the_bidder_against_each() -> None:
    rule = ExactRule.ALL_BUT_BIDDER
    assert outcome_value(6, 6, True, rule, 5) == 1.0
    # the challenger loses one die, as do the three others: a quarter against the field
    assert outcome_value(6, 6, False, rule, 5) == pytest.approx(-0.25)


def test_short_and_over_against_the_field() -> None:
    rule = ExactRule.ALL_BUT_BIDDER
    assert outcome_value(4, 6, True, rule, 5) == -2            # short by 2: the bidder pays
    assert outcome_value(4, 6, False, rule, 5) == pytest.approx(0.5)
    assert outcome_value(9, 6, False, rule, 5) == -3           # over by 3: the challenger pays
    assert outcome_value(9, 6, True, rule, 5) == pytest.approx(0.75)


@pytest.mark.parametrize("rule,bidder,challenger", [
    (ExactRule.NOBODY, 0.0, 0.0), (ExactRule.EVERYONE, 0.0, 0.0),
    (ExactRule.CHALLENGER, 1 / 3, -1.0)])
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
