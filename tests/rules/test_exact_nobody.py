"""EXACT nobody, the Czech edition's exact bid: when the count is at least the bid the
challenger lost and gives up as many dice as the count exceeds the bid; on an exact
bid that is none. Nobody loses a die, and the bidder, who was right, opens the next round."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.kinds.classic import CLASSIC
from pbem.kinds.classic_options import SIX_KEY
from pbem.rules.bid_moves import CHALLENGE, BidMove
from pbem.rules.challenge import count_matching, resolve_challenge
from pbem.rules.classic import Hand, RoundEnded, apply_move, new_game
from pbem.rules.dice import STAR, DiceStream, Die, seed_from_number
from pbem.rules.ladder import Bid
from pbem.rules.robot import challenge_cost
from pbem.rules.ruleset import ExactRule, RuleSet
from tests.rules.test_classic_rules import challenge, position

CZECH = RuleSet(dice_per_player=6, exact_rule=ExactRule.NOBODY, expose=False)
S = STAR


def test_the_czech_preset_plays_exact_nobody() -> None:
    rules = CLASSIC.parse_options(["czech"])
    assert rules["exact_rule"] == "nobody" and rules[SIX_KEY] == 5
    assert RuleSet.from_json(rules).exact_rule is ExactRule.NOBODY
    assert "nobody loses a die" in CLASSIC.describe_rules(rules)


def test_exact_nobody_is_an_option_of_any_edition() -> None:
    rules = CLASSIC.parse_options(["english", "EXACT", "nobody"])
    assert rules["exact_rule"] == "nobody" and rules["expose"] is True
    assert "nobody" in CLASSIC.option_help


def test_an_exact_bid_costs_nobody_a_die_and_the_bidder_opens() -> None:
    # 4 threes bid by player 1, challenged by 2: 3 3 + 3 + star = 4, exactly
    state = position(CZECH, [[3, 3, 1], [3, 1, 1], [S, 2, 2]], bids=[(1, Bid(4, 3))])
    after, ended = challenge(state)
    assert ended.end.result.outcome == "exact"
    assert ended.end.lost == {} and ended.end.out == ()
    assert after.hands == state.hands
    assert after.round == 2 and after.opener == after.to_move == 1


def test_over_and_short_pay_as_ever() -> None:
    over = position(CZECH, [[3, 3, 3], [3, 1, 1], [S, 2, 2]], bids=[(1, Bid(4, 3))])
    _, ended = challenge(over)
    assert ended.end.lost == {2: 1} and ended.end.next_opener == 1   # 5 against 4
    short = position(CZECH, [[3, 1, 1], [3, 1, 1], [2, 2, 2]], bids=[(1, Bid(4, 3))])
    _, ended = challenge(short)
    assert ended.end.lost == {1: 2} and ended.end.next_opener == 2


def test_the_robot_knows_an_exact_bid_costs_the_challenger_nothing() -> None:
    state = position(CZECH, [[3, 3, 1], [3, 1, 1], [S, 2, 2]], bids=[(1, Bid(4, 3))])
    english = position(RuleSet(), [[3, 3, 1], [3, 1, 1], [S, 2, 2]], bids=[(1, Bid(4, 3))])
    assert challenge_cost(state.seat_view(2)) < challenge_cost(english.seat_view(2))


faces = st.sampled_from([1, 2, 3, 4, 5, STAR])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.builds(Die, faces, st.booleans()), min_size=1, max_size=6),
                min_size=2, max_size=6), st.sampled_from([1, 2, 3, 4, 5, STAR]), st.data())
def test_exact_nobody_never_takes_a_die_on_an_exact_bid(tables: list[list[Die]], face: int,
                                                        data: st.DataObject) -> None:
    table = {s: tuple(d) for s, d in enumerate(tables, start=1)}
    count = count_matching((d for dice in table.values() for d in dice), Bid(1, face))
    bidder = data.draw(st.sampled_from(sorted(table)))
    challenger = data.draw(st.sampled_from([s for s in table if s != bidder]))
    if count >= 1:
        exact = resolve_challenge(Bid(count, face), bidder, challenger, table, ExactRule.NOBODY)
        assert exact.outcome == "exact" and exact.losses == {}
    quantity = data.draw(st.integers(1, 30))
    result = resolve_challenge(Bid(quantity, face), bidder, challenger, table, ExactRule.NOBODY)
    # the Czech rule: the count over the bid, paid by the challenger; short: the bidder
    if count >= quantity:
        assert result.losses == ({challenger: count - quantity} if count > quantity else {})
    else:
        assert result.losses == {bidder: quantity - count}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 6), st.integers(0, 10**6))
def test_czech_games_end_and_the_right_player_opens(seed: int, players: int,
                                                     choices: int) -> None:
    rules = CLASSIC.rules_of(CLASSIC.parse_options(["czech", "DICE", "3"]), players)
    dice, rng = DiceStream(seed_from_number(seed)), random.Random(choices)
    state = new_game(dice, rules, players)
    for _ in range(3000):
        if state.game_over:
            break
        seat = state.to_move
        assert seat is not None
        raises = state.ladder.raises(state.current_bid)[:8]
        move = (CHALLENGE if state.current_bid is not None and (not raises or rng.random() < 0.4)
                else BidMove(rng.choice(raises)))
        before = state
        state, events = apply_move(state, seat, move, dice)
        for e in events:
            if isinstance(e, RoundEnded) and e.end.result.outcome == "exact":
                assert e.end.lost == {} and state.hands == before.hands
                assert e.end.next_opener == before.bidder
    assert state.game_over
    assert sum(1 for h in state.hands if h != Hand(0)) == 1
