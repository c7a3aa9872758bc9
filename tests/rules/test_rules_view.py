"""The odds a postal report shows (pbem.rules.view.odds_view): for every seat and every
running mini-game with a bid, what the seat's whole view (PostalState.seat_view, the robot's)
gives, in games played out by hypothesis."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbem.rules.odds import bid_odds
from pbem.rules.postal import SEATS, PostalState
from pbem.rules.ruleset import RuleSet
from pbem.rules.view import odds_view
from tests.rules.test_rules_properties import games, play


def odds_by_seat_view(state: PostalState, seat: int) -> dict[int, dict[str, float]]:
    result = {}
    for game in state.minigames:
        if not game.ended and game.current_bid is not None:
            odds = bid_odds(state.seat_view(seat, game.number), game.current_bid)
            result[game.number] = {"holds": odds.holds, "exact": odds.exact}
    return result


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_the_odds_of_a_report_are_those_of_the_seats_view(
        case: tuple[RuleSet, int, st.DataObject]) -> None:
    rules, number, data = case
    states = play(data, rules, number).states
    shown = 0
    for state in states:
        for seat in SEATS:
            odds = odds_view(state, seat)
            assert odds == odds_by_seat_view(state, seat)
            shown += len(odds)
    assert shown > 0   # the games bid: the comparison is never empty
