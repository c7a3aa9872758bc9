"""What a seat knows of the dice (pbem.rules.view.dice_known: a report's odds, an order's
confirmation, a bid's chart) is what its whole view (PostalState.seat_view, the robot's)
says of them, for every seat and running mini-game with a bid, in games played out by
hypothesis."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbem.rules.odds import actual_distribution, bid_odds
from pbem.rules.postal import SEATS
from pbem.rules.ruleset import RuleSet
from pbem.rules.view import dice_known, odds_view
from tests.rules.test_rules_properties import games, play


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_the_dice_a_seat_knows_are_those_of_its_view(
        case: tuple[RuleSet, int, st.DataObject]) -> None:
    rules, number, data = case
    compared = 0
    for state in play(data, rules, number).states:
        for seat in SEATS:
            expected = {}
            for game in state.minigames:
                bid = game.current_bid
                if game.ended or bid is None:
                    continue
                whole, known = state.seat_view(seat, game.number), dice_known(
                    state, seat, game.number)
                assert actual_distribution(known, bid) == actual_distribution(whole, bid)
                odds = bid_odds(whole, bid)
                expected[game.number] = {"holds": odds.holds, "exact": odds.exact}
                compared += 1
            assert odds_view(state, seat) == expected
    assert compared > 0   # the games bid: the comparison is never empty
