"""Classic Bluff (pbem.rules.classic): examples from the rule texts, then properties."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbem.rules import (
    CHALLENGE,
    STAR,
    Bid,
    BidMove,
    Cup,
    DiceStream,
    Die,
    ExactRule,
    IllegalMove,
    RuleSet,
    bid_odds,
    choose_move,
    seed_from_number,
)
from pbem.rules.bid_moves import Move
from pbem.rules.classic import (
    BidPlaced,
    ClassicState,
    GameEnded,
    Hand,
    RoundEnded,
    RoundStarted,
    apply_move,
    hand_label,
    new_game,
    reroll_label,
)

SEED = seed_from_number(1993)
S = STAR
ENGLISH = RuleSet()
ANNIVERSARY = RuleSet(super_die=True, expose=False)


def stream() -> DiceStream:
    return DiceStream(SEED)


def position(rules: RuleSet, table: Sequence[Sequence[int]], *, supers: Sequence[int] = (),
             bids: Sequence[tuple[int, Bid]] = (), to_move: int | None = None,
             round_no: int = 1) -> ClassicState:
    """A hand-made round: table[i] is seat i+1's faces ([] = out); with ``supers``
    the last die of those seats is the orange one."""
    state = new_game(stream(), rules, len(table))
    hands = tuple(Hand(len(f) - (s + 1 in supers), s + 1 in supers) if f else Hand(0)
                  for s, f in enumerate(table))
    cups = tuple(Cup(tuple(Die(x, s + 1 in supers and i == len(f) - 1) for i, x in enumerate(f)))
                 for s, f in enumerate(table))
    out = tuple(None if f else 0 for f in table)
    first = bids[0][0] if bids else 1
    state = replace(state, round=round_no, hands=hands, cups=cups, out_round=out,
                    opener=first, to_move=first)
    for seat, bid in bids:
        state, _ = apply_move(state, seat, BidMove(bid), stream())
    return state if to_move is None else replace(state, to_move=to_move)


def challenge(state: ClassicState) -> tuple[ClassicState, RoundEnded]:
    assert state.to_move is not None
    after, events = apply_move(state, state.to_move, CHALLENGE, stream())
    ended = [e for e in events if isinstance(e, RoundEnded)]
    assert len(ended) == 1
    return after, ended[0]


# --------------------------------------------------------------------------
# Set-up
# --------------------------------------------------------------------------


def test_new_game_rolls_from_round_and_seat_labels() -> None:
    state = new_game(stream(), ENGLISH, 4)
    assert (state.round, state.opener, state.to_move, state.players) == (1, 1, 1, 4)
    assert state.hands == (Hand(5),) * 4 and state.dice_in_play == 20
    for seat in state.seats:
        assert [d.face for d in state.cup(seat).dice] == list(stream().dice(hand_label(1, seat), 5))
    assert state.due() == {1: "open round 1 with a bid"}


@pytest.mark.parametrize("players", [0, 1, 7])
def test_two_to_six_players(players: int) -> None:
    with pytest.raises(ValueError, match="2 to 6"):
        new_game(stream(), ENGLISH, players)


def test_anniversary_hand_is_four_plain_and_one_super() -> None:
    state = new_game(stream(), ANNIVERSARY, 3)
    assert state.hand(1) == Hand(4, True) and state.hand(1).count == 5
    assert [d.super for d in state.cup(2).dice] == [False] * 4 + [True]
    # the super die counts twice on the board: 3 players x 6 = 18 spaces
    assert state.dice_in_play == 18 and state.ladder.top_number == 18


def test_czech_six_dice() -> None:
    assert new_game(stream(), RuleSet(dice_per_player=6), 5).dice_in_play == 30


# --------------------------------------------------------------------------
# Challenges (docs/rules.md sections 2 and 4)
# --------------------------------------------------------------------------


def test_rules_example_ten_twos_challenger_loses_two() -> None:
    # 8 twos + 4 stars = 12 against 10: the challenger loses 2
    state = position(ENGLISH, [[2, 2, 2, 2, S], [2, 2, 2, S, S], [2, S, 1, 1, 1]],
                     bids=[(1, Bid(10, 2))])
    after, ended = challenge(state)
    assert ended.end.result.actual == 12 and ended.end.lost == {2: 2}
    assert after.hand(2) == Hand(3) and after.opener == 1 and after.to_move == 1


def test_rules_example_eight_stars_exact() -> None:
    state = position(ENGLISH, [[S, S, S, 1, 1], [S, S, S, 2, 2], [S, S, 3, 3, 3], [1] * 5],
                     bids=[(2, Bid(8, S))])
    after, ended = challenge(state)
    assert ended.end.result.outcome == "exact"
    assert ended.end.lost == {1: 1, 3: 1, 4: 1} and after.hand(2) == Hand(5)
    assert after.opener == 2   # the bid held, so the bidder was right


def test_short_bid_costs_the_bidder_the_difference() -> None:
    # 6 fives bid, 3 present (German text: he bet 6, only 3 are there: he gives 3)
    state = position(ENGLISH, [[5, 5, 1, 1, 1], [S, 2, 2, 2, 2]], bids=[(1, Bid(6, 5))])
    after, ended = challenge(state)
    assert ended.end.lost == {1: 3} and after.hand(1) == Hand(2)
    assert after.opener == 2 and after.round == 2


EXACT_TABLE = [[3, 3, 1], [3, 1, 1], [S, 2, 2]]   # 4 threes, bid by 1, challenged by 2


@pytest.mark.parametrize(("rule", "lost"), [
    (ExactRule.ALL_BUT_BIDDER, {2: 1, 3: 1}),
    (ExactRule.CHALLENGER, {2: 1}),
    (ExactRule.NOBODY, {}),
    (ExactRule.EVERYONE, {1: 1, 2: 1, 3: 1}),
    (ExactRule.CHALLENGER_GIVES, {1: -1, 2: 1}),
])
def test_exact_bid_rules(rule: ExactRule, lost: dict[int, int]) -> None:
    state = position(RuleSet(exact_rule=rule), EXACT_TABLE, bids=[(1, Bid(4, 3))])
    after, ended = challenge(state)
    assert ended.end.result.actual == 4 and ended.end.lost == lost
    assert after.opener == 1


def test_challenger_gives_only_while_below_the_start_count() -> None:
    rules = RuleSet(exact_rule=ExactRule.CHALLENGER_GIVES, dice_per_player=3)
    state = position(rules, [[3, 3, 3], [1, 1, 1]], bids=[(1, Bid(3, 3))])
    after, ended = challenge(state)
    assert ended.end.lost == {2: 1} and after.hand(1) == Hand(3)


def test_everyone_loses_but_the_bidder_keeps_the_last_die() -> None:
    # everyone at one die, the bid is exact: nobody would be left, so the bidder is spared
    rules = RuleSet(exact_rule=ExactRule.EVERYONE)
    state = position(rules, [[2], [2], [1]], bids=[(1, Bid(2, 2))])
    after, ended = challenge(state)
    assert ended.end.out == (2, 3) and after.game_over and after.winner == 1


def test_right_player_out_next_in_opens() -> None:
    rules = RuleSet(exact_rule=ExactRule.EVERYONE)
    state = position(rules, [[1, 1], [4], [4, 2], [S, 5]], bids=[(2, Bid(3, 4))])
    after, ended = challenge(state)
    assert ended.end.out == (2,) and ended.end.next_opener == 3
    assert after.opener == after.to_move == 3


# --------------------------------------------------------------------------
# The super die (anniversary edition)
# --------------------------------------------------------------------------


def test_super_die_counts_twice() -> None:
    state = position(ANNIVERSARY, [[4, 1, 1, 1, 4], [4, 2, 2, 2, S]], supers=[1, 2],
                     bids=[(1, Bid(6, 4))])
    after, ended = challenge(state)
    # 4 + orange 4 (2) + 4 + orange star (2) = 6: exact, all but the bidder lose 1
    assert ended.end.result.actual == 6 and ended.end.lost == {2: 1}
    assert after.hand(2) == Hand(3, True)


@pytest.mark.parametrize(("hand", "owed", "after"), [
    (Hand(4, True), 1, Hand(3, True)),   # plain dice go first
    (Hand(4, True), 5, Hand(1)),         # the orange die goes when plain ones cannot pay
    (Hand(1, True), 2, Hand(1)),         # the orange die pays 2: one plain die stays
    (Hand(2, True), 3, Hand(1)),
    (Hand(0, True), 2, Hand(0)),         # losing the orange die costs 2
    (Hand(0, True), 1, Hand(0)),         # owes 1, only the orange die: it goes
    (Hand(1, True), 9, Hand(0)),
    (Hand(3), 5, Hand(0)),
])
def test_paying_with_the_super_die(hand: Hand, owed: int, after: Hand) -> None:
    assert hand.lose(owed) == after


def test_one_die_owed_only_the_orange_left_goes_out() -> None:
    state = position(ANNIVERSARY, [[3], [1, 1, 2]], supers=[1], bids=[(1, Bid(3, 3))])
    after, ended = challenge(state)
    # 2 threes (the orange 3 counts twice) against 3: short by 1, the orange die goes
    assert ended.end.lost == {1: 2} and after.game_over and after.winner == 2
    assert ended.end.next_opener is None


# --------------------------------------------------------------------------
# Turn order, skipping players who are out, the end
# --------------------------------------------------------------------------


def test_players_out_are_skipped() -> None:
    state = position(ENGLISH, [[1, 2], [], [3, 3], [4]])
    assert state.seats_in == (1, 3, 4) and state.dice_in_play == 5
    after, _ = apply_move(state, 1, BidMove(Bid(1, 3)), stream())
    assert after.to_move == 3
    with pytest.raises(IllegalMove, match="out of the game"):
        after.check_move(2, CHALLENGE)
    after, _ = apply_move(after, 3, BidMove(Bid(2, 3)), stream())
    after, _ = apply_move(after, 4, BidMove(Bid(3, 3)), stream())
    assert after.to_move == 1


def test_illegal_moves_say_why() -> None:
    state = position(ENGLISH, [[1, 2], [3, 3]])
    with pytest.raises(IllegalMove, match="you must BID"):
        state.check_move(1, CHALLENGE)
    with pytest.raises(IllegalMove, match="player 1's move"):
        state.check_move(2, BidMove(Bid(1, 1)))
    with pytest.raises(IllegalMove, match="off the board"):
        state.check_move(1, BidMove(Bid(5, 1)))
    top = position(ENGLISH, [[1, 2], [3, 3]], bids=[(1, Bid(4, 5))])
    assert top.due() == {2: "challenge 4 fives (the top of the board) in round 1"}
    with pytest.raises(IllegalMove, match="must CHALLENGE"):
        top.check_move(2, BidMove(Bid(4, 5)))


def test_game_ends_with_the_last_player_holding_dice() -> None:
    state = position(ENGLISH, [[1, 1, 2], [5]], bids=[(2, Bid(2, 5))], round_no=9)
    after, events = apply_move(state, 1, CHALLENGE, stream())
    assert after.game_over and after.winner == 1 and after.to_move is None
    assert after.due() == {} and after.legal_moves() == []
    assert isinstance(events[-1], GameEnded) and events[-1].winner == 1
    assert [(s.rank, s.seat, s.dice, s.out_round) for s in after.standings()] == [
        (1, 1, 3, None), (2, 2, 0, 9)]
    with pytest.raises(IllegalMove, match="game is over"):
        after.check_move(1, BidMove(Bid(1, 1)))


def test_new_round_rolls_the_dice_that_are_left() -> None:
    state = position(ENGLISH, [[1, 1, 2], [5, 5]], bids=[(2, Bid(3, 5))], round_no=4)
    after, events = apply_move(state, 1, CHALLENGE, stream())
    assert isinstance(events[-1], RoundStarted) and events[-1] == RoundStarted(5, 1)
    assert [d.face for d in after.cup(2).dice] == list(stream().dice(hand_label(5, 2), 1))
    assert after.bids == () and after.last_round is not None
    assert after.last_round.table == {1: state.cup(1).dice, 2: state.cup(2).dice}


def test_expose_rerolls_from_a_round_keyed_label() -> None:
    state = position(ENGLISH, [[3, 3, 1, 2], [5, 5]], round_no=2)
    after, events = apply_move(state, 1, BidMove(Bid(3, 3), (3, 3)), stream())
    rerolled = stream().dice(reroll_label(2, 1, 1), 2)
    assert events == [BidPlaced(2, 1, Bid(3, 3), (3, 3), rerolled)]
    assert [d.face for d in after.cup(1).exposed] == [3, 3]
    assert [d.face for d in after.cup(1).hidden] == list(rerolled)
    with pytest.raises(IllegalMove, match="stay hidden"):
        after.check_move(2, BidMove(Bid(4, 5), (5, 5)))
    off = position(ANNIVERSARY, [[3, 3], [5, 5]])
    with pytest.raises(IllegalMove, match="off in this game"):
        off.check_move(1, BidMove(Bid(1, 3), (3,)))


def test_robot_and_odds_see_every_die_in_play() -> None:
    state = position(ANNIVERSARY, [[S, S, S, 1, 2], [4, 4, 4, 4, 4], [1, 1, 1]],
                     supers=[1, 2], bids=[(1, Bid(5, S))])
    view = state.seat_view(2)
    assert (view.unknown_plain, view.unknown_super) == (7, 1)
    assert view.ladder.top_number == 15 and view.own == state.cup(2)
    assert 0 < bid_odds(view, Bid(5, S)).holds < 1
    move = choose_move(view, random.Random(1))
    state.check_move(2, move)


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------

rule_sets = st.builds(RuleSet, dice_per_player=st.integers(1, 6), super_die=st.booleans(),
                      exact_rule=st.sampled_from(list(ExactRule)), star_bids=st.booleans(),
                      expose=st.booleans(), board_cap=st.sampled_from([None, None, 20, 8]))


def random_move(state: ClassicState, rng: random.Random) -> Move:
    """A random legal move that ends rounds often enough to keep games short."""
    assert state.to_move is not None
    raises = state.ladder.raises(state.current_bid)[:12]
    if state.current_bid is not None and (not raises or rng.random() < 0.3):
        return CHALLENGE
    bid = rng.choice(raises)
    hidden = [d.face for d in state.cup(state.to_move).hidden]
    if state.rules.expose and len(hidden) > 1 and rng.random() < 0.3:
        return BidMove(bid, tuple(rng.sample(hidden, rng.randrange(1, len(hidden)))))
    return BidMove(bid)


def play(seed: int, rules: RuleSet, players: int,
         choices: int) -> tuple[list[ClassicState], list[tuple[int, Move]]]:
    dice, rng = DiceStream(seed_from_number(seed)), random.Random(choices)
    states = [new_game(dice, rules, players)]
    moves: list[tuple[int, Move]] = []
    while not states[-1].game_over:
        assert len(moves) < 5000, "the game did not end"
        seat = states[-1].to_move
        assert seat is not None
        move = random_move(states[-1], rng) if choices % 3 else choose_move(
            states[-1].seat_view(seat), rng)
        states.append(apply_move(states[-1], seat, move, dice)[0])
        moves.append((seat, move))
    return states, moves


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), rules=rule_sets, players=st.integers(2, 6),
       choices=st.integers(0, 10**6))
def test_random_play_keeps_the_invariants(seed: int, rules: RuleSet, players: int,
                                          choices: int) -> None:
    states, moves = play(seed, rules, players, choices)
    for before, after, (seat, _move) in zip(states, states[1:], moves):
        assert before.is_in(seat) and seat == before.to_move
        assert after.dice_in_play <= before.dice_in_play   # no rule makes dice
        for s in before.seats:
            if not before.is_in(s):   # out for good
                assert not after.is_in(s) and after.out_round[s - 1] == before.out_round[s - 1]
            gained = after.hand(s).value > before.hand(s).value
            if gained:   # only the bidder, by the challenger-gives rule, up to the start
                assert rules.exact_rule is ExactRule.CHALLENGER_GIVES and s == before.bidder
                assert after.hand(s).count <= rules.dice_per_player
        if after.round > before.round:
            assert after.to_move == after.opener and after.is_in(after.opener)
    final = states[-1]
    assert len(final.seats_in) == 1 and final.winner == final.seats_in[0]
    assert [s.seat for s in final.standings() if s.rank == 1] == [final.winner]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), rules=rule_sets, players=st.integers(2, 6),
       choices=st.integers(0, 10**6))
def test_replay_rebuilds_the_same_game(seed: int, rules: RuleSet, players: int,
                                       choices: int) -> None:
    states, moves = play(seed, rules, players, choices)
    dice = DiceStream(seed_from_number(seed))
    state = new_game(dice, rules, players)
    for seat, move in moves:
        state, _ = apply_move(state, seat, move, dice)
    assert state == states[-1]
