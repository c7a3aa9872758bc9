"""Example tests of pbem.rules against every rule and example of docs/rules.md sections 1-4."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from pbem.rules import (
    CHALLENGE,
    POSTAL_RULES,
    STAR,
    Bid,
    BidMove,
    ChallengeMove,
    Cup,
    DiceStream,
    Die,
    ExactRule,
    IllegalMove,
    Ladder,
    MalformedMove,
    PostalState,
    RulesError,
    RuleSet,
    apply_turn,
    bid_odds,
    choose_move,
    commitment,
    count_matching,
    is_raise,
    minigame_of,
    mover,
    new_game,
    random_move,
    resolve_challenge,
    seed_from_number,
)
from pbem.rules.bid_moves import Move, move_from_json, move_to_json
from pbem.rules.dice import hand_label, reroll_label
from pbem.rules.odds import SeatView, actual_distribution
from pbem.rules.postal import BidPlaced, ChallengeResolved, GameEnded, PlacedBid, rank
from pbem.rules.postal_record import draw_seats

SEED = seed_from_number(2000)
S = STAR


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def spaces(ladder: Ladder) -> list[str]:
    """The track's spaces in order: "7" for a number space, "4★" for a star space."""
    out: list[str] = []
    for bid in ladder.bids:
        name = f"{bid.quantity}★" if bid.is_star else str(bid.quantity)
        if not out or out[-1] != name:
            out.append(name)
    return out


def dice(*faces: int, super_last: bool = False) -> tuple[Die, ...]:
    return tuple(Die(f, super_last and i == len(faces) - 1) for i, f in enumerate(faces))


def position(rules: RuleSet = POSTAL_RULES, *, turn: int = 1,
             cups: Mapping[int, Sequence[Sequence[int]]] | None = None,
             bids: Mapping[int, Sequence[tuple[int, Bid]]] | None = None,
             virtual: Sequence[int] = (5, 5, 5, 5, 5)) -> PostalState:
    """A hand-made position: cups[k] gives every seat's faces in mini-game k,
    bids[k] the (seat, bid) history of mini-game k (placed in earlier turns)."""
    state = new_game(DiceStream(SEED), rules)
    games = list(state.minigames)
    for k, faces in (cups or {}).items():
        games[k - 1] = replace(games[k - 1], cups=tuple(
            Cup.rolled(f, super_die=rules.super_die) for f in faces))
    for k, history in (bids or {}).items():
        placed = tuple(PlacedBid(max(1, turn - len(history) + i), seat, bid)
                       for i, (seat, bid) in enumerate(history))
        games[k - 1] = replace(games[k - 1], bids=placed)
    return PostalState(rules, turn, tuple(games), tuple(virtual))


def fill(state: PostalState, moves: Mapping[int, Move]) -> dict[int, Move]:
    """The given moves plus the lowest legal move for every other due seat."""
    full = dict(moves)
    for seat, k in state.due().items():
        full.setdefault(seat, state.legal_moves(k)[0])
    return full


# --------------------------------------------------------------------------
# 1. The dice and the bid ladder
# --------------------------------------------------------------------------


def test_a_die_shows_one_to_five_or_a_star() -> None:
    assert STAR == 6
    faces = set(DiceStream(SEED).dice("any", 600))
    assert faces == {1, 2, 3, 4, 5, STAR}
    assert Bid(3, STAR).is_star and not Bid(3, 5).is_star


def test_number_bid_counts_the_face_and_stars() -> None:
    table = dice(2, 2, S, 3, 4, S, 1)
    assert count_matching(table, Bid(1, 2)) == 4
    assert count_matching(table, Bid(1, 3)) == 3
    assert count_matching(table, Bid(1, 5)) == 2


def test_star_bid_counts_stars_only() -> None:
    table = dice(2, 2, S, 3, 4, S, 1)
    assert count_matching(table, Bid(1, S)) == 2
    assert count_matching(dice(1, 2, 3, 4, 5), Bid(1, S)) == 0


def test_track_order() -> None:
    assert spaces(Ladder(25))[:18] == [
        "1", "1★", "2", "3", "2★", "4", "5", "3★", "6", "7", "4★", "8", "9", "5★",
        "10", "11", "6★", "12"]


@pytest.mark.parametrize("n", range(1, 13))
def test_star_n_lies_between_number_spaces_2n_minus_1_and_2n(n: int) -> None:
    assert Bid(2 * n - 1, 5).position < Bid(n, S).position < Bid(2 * n, 1).position
    assert Bid(2 * n - 1, 5).key < Bid(n, S).key < Bid(2 * n, 1).key


def test_printed_board_ends_at_20_after_19_and_10_stars() -> None:
    for dice_in_play in (20, 25, 40):
        ladder = Ladder(dice_in_play, board_cap=20)
        assert spaces(ladder)[-3:] == ["19", "10★", "20"]
        assert ladder.top == Bid(20, 5)
        assert not ladder.on_track(Bid(21, 1)) and not ladder.on_track(Bid(11, S))
    assert spaces(Ladder(20))[-3:] == ["19", "10★", "20"]


def test_mail_track_runs_up_to_the_dice_in_play() -> None:
    # "continues the same pattern up to the number of dice in play"; a star space
    # lies *between* 2n-1 and 2n, so none follows the last number space
    assert spaces(Ladder(25))[-4:] == ["23", "12★", "24", "25"]
    assert Ladder(25).top == Bid(25, 5)
    assert spaces(Ladder(5)) == ["1", "1★", "2", "3", "2★", "4", "5"]
    assert spaces(Ladder(10))[-2:] == ["5★", "10"]
    assert len(Ladder(25).bids) == 25 * 5 + 12


def test_every_space_has_its_faces() -> None:
    ladder = Ladder(10)
    number_bids = [b for b in ladder.bids if b.quantity == 7 and not b.is_star]
    assert number_bids == [Bid(7, f) for f in (1, 2, 3, 4, 5)]
    assert [b for b in ladder.bids if b.is_star] == [Bid(n, S) for n in range(1, 6)]


@pytest.mark.parametrize(("old", "new"), [
    (Bid(6, 3), Bid(6, 5)),    # same number space, higher face
    (Bid(5, 5), Bid(6, 2)),    # any later space, any face
    (Bid(2, S), Bid(5, 4)),
    (Bid(8, 4), Bid(5, S)),
    (Bid(1, 1), Bid(1, S)),
    (Bid(1, S), Bid(2, 1)),
    (None, Bid(1, 1)),         # anything raises no bid
])
def test_raise_examples(old: Bid | None, new: Bid) -> None:
    assert is_raise(old, new)
    Ladder(25).check(old, new)
    if old is not None:
        assert not is_raise(new, old)


@pytest.mark.parametrize(("old", "new"), [
    (Bid(8, 4), Bid(4, S)),    # 4★ lies before 8
    (Bid(6, 5), Bid(6, 3)),    # same space, lower face
    (Bid(6, 3), Bid(6, 3)),    # the same bid
    (Bid(5, S), Bid(9, 5)),    # 5★ lies after 9
    (Bid(3, S), Bid(2, S)),
])
def test_not_a_raise(old: Bid, new: Bid) -> None:
    assert not is_raise(old, new)
    with pytest.raises(IllegalMove):
        Ladder(25).check(old, new)


def test_8_fours_to_4_stars_says_the_lowest_star_bid_above_it() -> None:
    with pytest.raises(IllegalMove) as err:
        Ladder(25).check(Bid(8, 4), Bid(4, S))
    assert "the lowest star bid above it is 5 stars" in str(err.value)
    assert "4 stars is not above 8 fours" in str(err.value)


def test_a_star_never_stands_on_a_number_space() -> None:
    number_positions = {Bid(q, 1).position for q in range(1, 200)}
    star_positions = {Bid(n, S).position for n in range(1, 100)}
    assert not number_positions & star_positions
    assert sorted(number_positions | star_positions)[:250] == list(range(250))


def test_off_the_board_is_illegal() -> None:
    with pytest.raises(IllegalMove, match="off the board"):
        Ladder(25).check(Bid(24, 5), Bid(26, 1))
    with pytest.raises(IllegalMove, match="off the board"):
        Ladder(25, board_cap=20).check(Bid(19, 5), Bid(21, 1))


def test_star_bids_off() -> None:
    ladder = Ladder(25, star_bids=False)
    assert not any(b.is_star for b in ladder.bids)
    assert spaces(ladder)[:4] == ["1", "2", "3", "4"]
    with pytest.raises(IllegalMove, match="star bids are off"):
        ladder.check(Bid(8, 4), Bid(5, S))
    state = position(RuleSet(star_bids=False))
    assert not any(isinstance(m, BidMove) and m.bid.is_star
                   for k in range(1, 6) for m in state.legal_moves(k))
    with pytest.raises(IllegalMove, match="star bids are off"):
        state.check_move(1, BidMove(Bid(1, S)))


def test_top_of_the_track_forces_a_challenge() -> None:
    ladder = Ladder(25)
    assert ladder.lowest_raise(ladder.top) is None
    assert ladder.raises(ladder.top) == []
    with pytest.raises(IllegalMove, match="you must CHALLENGE"):
        ladder.check(ladder.top, Bid(25, 4))
    # mini-game 5 has 5 dice: its top is 5 fives; player 2 moves there in turn 3
    state = position(turn=3, bids={5: [(5, Bid(5, 4)), (1, Bid(5, 5))]})
    assert state.mover(5) == 2
    assert state.legal_moves(5) == [CHALLENGE]
    with pytest.raises(IllegalMove, match="you must CHALLENGE"):
        state.check_move(2, BidMove(Bid(5, 5)))
    assert state.check_move(2, CHALLENGE) == 5


def test_top_with_the_printed_board() -> None:
    state = position(RuleSet(board_cap=20), turn=2, bids={1: [(1, Bid(20, 5))]})
    assert state.legal_moves(1) == [CHALLENGE]
    assert state.legal_moves(2)[-1] == BidMove(Bid(20, 5))


# --------------------------------------------------------------------------
# 2. A challenge
# --------------------------------------------------------------------------

BIDDER, CHALLENGER = 1, 2


def table_of(*seat_dice: tuple[Die, ...]) -> dict[int, tuple[Die, ...]]:
    return {s: d for s, d in enumerate(seat_dice, start=1)}


@pytest.mark.parametrize(("bid", "table", "outcome", "losses"), [
    # number bids: face plus stars
    (Bid(5, 3), table_of(dice(3, 3, 1), dice(S, 2, 2), dice(4, 4, 4)), "short", {BIDDER: 2}),
    (Bid(3, 3), table_of(dice(3, 3, 1), dice(S, 2, 2), dice(4, 4, 4)), "exact",
     {2: 1, 3: 1}),
    (Bid(1, 3), table_of(dice(3, 3, 1), dice(S, 2, 2), dice(4, 4, 4)), "over",
     {CHALLENGER: 2}),
    # star bids: stars only
    (Bid(3, S), table_of(dice(S, 3, 1), dice(S, 2, 2), dice(3, 3, 3)), "short", {BIDDER: 1}),
    (Bid(2, S), table_of(dice(S, 3, 1), dice(S, 2, 2), dice(3, 3, 3)), "exact",
     {2: 1, 3: 1}),
    (Bid(1, S), table_of(dice(S, S, S), dice(S, 2, 2), dice(3, 3, 3)), "over",
     {CHALLENGER: 3}),
])
def test_challenge_table(bid: Bid, table: dict[int, tuple[Die, ...]], outcome: str,
                         losses: dict[int, int]) -> None:
    result = resolve_challenge(bid, BIDDER, CHALLENGER, table, ExactRule.ALL_BUT_BIDDER)
    assert result.outcome == outcome
    assert result.losses == losses
    assert result.actual == count_matching((d for ds in table.values() for d in ds), bid)


def test_example_10_twos_challenged_with_8_twos_and_4_stars() -> None:
    table = table_of(dice(2, 2, 2, 2, S), dice(2, 2, 2, 2, S), dice(S, S, 1, 3, 4),
                     dice(1, 1, 3, 3, 4), dice(5, 5, 5, 4, 4))
    result = resolve_challenge(Bid(10, 2), 3, 4, table, ExactRule.ALL_BUT_BIDDER)
    assert result.actual == 12
    assert result.outcome == "over"
    assert result.losses == {4: 2}


def test_example_8_stars_exactly() -> None:
    table = table_of(dice(S, S, 1, 1, 1), dice(S, S, 2, 2, 2), dice(S, S, 3, 3, 3),
                     dice(S, 4, 4, 4, 4), dice(S, 5, 5, 5, 5))
    result = resolve_challenge(Bid(8, S), 2, 3, table, ExactRule.ALL_BUT_BIDDER)
    assert result.actual == 8 and result.outcome == "exact"
    assert result.losses == {1: 1, 3: 1, 4: 1, 5: 1}


EXACT_TABLE = table_of(dice(4, 4), dice(1, 2), dice(S, 3), dice(5, 5), dice(1, 1))


@pytest.mark.parametrize(("rule", "at_max", "losses"), [
    (ExactRule.ALL_BUT_BIDDER, True, {2: 1, 3: 1, 4: 1, 5: 1}),
    (ExactRule.CHALLENGER, True, {3: 1}),
    (ExactRule.NOBODY, True, {}),
    (ExactRule.NOBODY, False, {}),
    (ExactRule.EVERYONE, True, {1: 1, 2: 1, 3: 1, 4: 1, 5: 1}),
    (ExactRule.CHALLENGER_GIVES, True, {3: 1}),
    (ExactRule.CHALLENGER_GIVES, False, {3: 1, 1: -1}),
])
def test_exact_rules(rule: ExactRule, at_max: bool, losses: dict[int, int]) -> None:
    result = resolve_challenge(Bid(3, 4), 1, 3, EXACT_TABLE, rule, bidder_at_max=at_max)
    assert result.outcome == "exact"
    assert result.losses == losses


@pytest.mark.parametrize("rule", list(ExactRule))
@pytest.mark.parametrize(("quantity", "losses"), [(5, {1: 2}), (2, {3: 1})])
def test_exact_rule_does_not_touch_short_or_over(rule: ExactRule, quantity: int,
                                                 losses: dict[int, int]) -> None:
    for at_max in (True, False):
        result = resolve_challenge(Bid(quantity, 4), 1, 3, EXACT_TABLE, rule,
                                   bidder_at_max=at_max)
        assert result.losses == losses


@pytest.mark.parametrize(("bidder_virtual", "after"), [(5, 5), (4, 5), (0, 1), (-3, -2)])
def test_challenger_gives_in_the_postal_game(bidder_virtual: int, after: int) -> None:
    """The challenger always loses 1; the bidder gets it unless already at five."""
    rules = RuleSet(exact_rule=ExactRule.CHALLENGER_GIVES)
    # mini-game 5 (one die each): player 1 bid 2 fours in turn 1 ... in turn 2 player
    # 1 moves in mini-game 5; let player 5 bid and player 1 challenge
    cups = {5: [[4], [S], [1], [2], [3]]}
    virtual = [5, 5, 5, 5, bidder_virtual]
    state = position(rules, turn=2, cups=cups, bids={5: [(5, Bid(2, 4))]}, virtual=virtual)
    assert state.mover(5) == 1
    after_state, events = apply_turn(state, fill(state, {1: CHALLENGE}), DiceStream(SEED))
    resolved = [e for e in events if isinstance(e, ChallengeResolved)]
    assert resolved[0].result.outcome == "exact"
    assert after_state.virtual_dice == (4, 5, 5, 5, after)


def test_super_die_counts_twice() -> None:
    table = dice(3, 1, 2, 4, 3, super_last=True)
    assert count_matching(table, Bid(1, 3)) == 3
    assert count_matching(dice(1, 1, S, super_last=True), Bid(1, 5)) == 2
    assert count_matching(dice(1, 1, S, super_last=True), Bid(1, S)) == 2
    result = resolve_challenge(Bid(2, 3), 1, 2, {1: dice(3, super_last=True), 2: dice(1)},
                               ExactRule.ALL_BUT_BIDDER)
    assert result.actual == 2 and result.outcome == "exact"


def test_super_die_counts_twice_on_the_track() -> None:
    state = new_game(DiceStream(SEED), RuleSet(super_die=True))
    # mini-game 5: five players with one (super) die each = 10 dice in play
    assert state.minigame(5).dice_in_play == 10
    assert state.ladder(5).top == Bid(10, 5)
    assert state.minigame(1).dice_in_play == 30
    assert all(cup.hidden[-1].super and sum(d.super for d in cup.dice) == 1
               for game in state.minigames for cup in game.cups)


def test_the_challenge_counts_exposed_dice_and_every_seat() -> None:
    cups = {4: [[3, 1], [3, 2], [S, 5], [3, 3], [1, 1]]}
    state = position(turn=2, cups=cups, bids={4: [(4, Bid(5, 3))]})
    state = replace(state, minigames=tuple(
        replace(g, cups=(g.cups[0].expose([3], [2]),) + g.cups[1:]) if g.number == 4 else g
        for g in state.minigames))
    assert state.minigame(4).cup(1).exposed == dice(3)
    assert state.mover(4) == 5
    _after, events = apply_turn(state, fill(state, {5: CHALLENGE}), DiceStream(SEED))
    resolved = next(e for e in events if isinstance(e, ChallengeResolved))
    assert resolved.result.actual == 5
    assert resolved.result.losses == {1: 1, 2: 1, 3: 1, 5: 1}


# --------------------------------------------------------------------------
# 3. Exposing and re-rolling
# --------------------------------------------------------------------------


def test_expose_only_comes_with_a_bid() -> None:
    assert not hasattr(CHALLENGE, "expose")
    assert move_from_json({"bid": {"quantity": 2, "face": 3}, "expose": [3]}) == \
        BidMove(Bid(2, 3), (3,))


def test_at_least_one_die_stays_hidden() -> None:
    cup = Cup(dice(3, 3, 3))
    with pytest.raises(IllegalMove, match="at least one must stay hidden"):
        cup.check_expose([3, 3, 3])
    cup.check_expose([3, 3])
    with pytest.raises(IllegalMove, match="at least one must stay hidden"):
        Cup(dice(3)).check_expose([3])
    with pytest.raises(IllegalMove):
        Cup(dice(3, 4)).check_expose([])


def test_only_dice_really_hidden_can_be_exposed() -> None:
    cup = Cup(dice(3, 4, 5, S))
    with pytest.raises(IllegalMove, match="cannot expose"):
        cup.check_expose([2])
    with pytest.raises(IllegalMove, match="cannot expose"):
        cup.check_expose([3, 3])
    cup.check_expose([S, 5])
    shown = cup.expose([3], [1, 1, 1])
    assert shown.exposed == dice(3)
    with pytest.raises(IllegalMove, match="cannot expose"):
        shown.check_expose([3])   # the 3 is already face up, no hidden 3 is left


def test_a_later_expose_adds_to_the_earlier_ones() -> None:
    cup = Cup(dice(3, 4, 5, S, 2))
    first = cup.expose([3, 4], [5, 5, 1])
    assert first.exposed == dice(3, 4)
    assert first.hidden == dice(5, 5, 1)
    assert first.rerolls == 1
    second = first.expose([5, 5], [2])
    assert second.exposed == dice(3, 4, 5, 5)
    assert second.hidden == dice(2)
    assert second.rerolls == 2
    with pytest.raises(IllegalMove):
        second.check_expose([2])   # one hidden die left: no more exposing


def test_rerolled_dice_come_from_the_reroll_label() -> None:
    stream = DiceStream(SEED)
    state = new_game(stream)
    hidden = [d.face for d in state.minigame(1).cup(1).hidden]
    first = hidden[0]
    state, events = apply_turn(state, fill(state, {1: BidMove(Bid(1, 1), (first,))}), stream)
    placed = next(e for e in events if isinstance(e, BidPlaced) and e.seat == 1)
    assert reroll_label(1, 1, 1) == "reroll/1/1/1"
    assert placed.exposed == (first,)
    assert placed.rerolled == stream.dice("reroll/1/1/1", 4)
    cup = state.minigame(1).cup(1)
    assert cup.exposed == dice(first)
    assert tuple(d.face for d in cup.hidden) == stream.dice("reroll/1/1/1", 4)
    # player 1 moves in mini-game 1 again in turn 6; the second expose is re-roll 2
    while state.turn < 6:
        state, _ = apply_turn(state, fill(state, {}), stream)
    assert state.due()[1] == 1
    second = cup.hidden[0].face
    lowest = state.ladder(1).lowest_raise(state.minigame(1).current_bid)
    assert lowest is not None
    state, _ = apply_turn(state, fill(state, {1: BidMove(lowest, (second,))}), stream)
    cup = state.minigame(1).cup(1)
    assert cup.exposed == dice(first, second)
    assert tuple(d.face for d in cup.hidden) == stream.dice("reroll/1/1/2", 3)


def test_hands_come_from_the_hand_label() -> None:
    stream = DiceStream(SEED)
    state = new_game(stream)
    assert hand_label(3, 4) == "hand/3/4"
    for k in range(1, 6):
        for s in range(1, 6):
            assert tuple(d.face for d in state.minigame(k).cup(s).hidden) == \
                stream.dice(f"hand/{k}/{s}", 6 - k)


def test_expose_off_in_the_rule_set() -> None:
    state = new_game(DiceStream(SEED), RuleSet(expose=False))
    face = state.minigame(1).cup(1).hidden[0].face
    with pytest.raises(IllegalMove, match="exposing dice is off"):
        state.check_move(1, BidMove(Bid(1, 1), (face,)))
    state.check_move(1, BidMove(Bid(1, 1)))


def test_expose_is_checked_in_the_postal_game() -> None:
    state = position(cups={5: [[3], [3], [3], [3], [3]], 4: [[3, 3]] * 5})
    with pytest.raises(IllegalMove, match="stay hidden"):
        state.check_move(5, BidMove(Bid(1, 3), (3,)))
    with pytest.raises(IllegalMove, match="stay hidden"):
        state.check_move(4, BidMove(Bid(1, 3), (3, 3)))
    with pytest.raises(IllegalMove, match="cannot expose"):
        state.check_move(4, BidMove(Bid(1, 3), (4,)))
    assert state.check_move(4, BidMove(Bid(1, 3), (3,))) == 4


# --------------------------------------------------------------------------
# 4. The postal game
# --------------------------------------------------------------------------


def test_postal_setup() -> None:
    state = new_game(DiceStream(SEED))
    assert state.turn == 1
    assert state.virtual_dice == (5, 5, 5, 5, 5)
    assert [len(g.cups) for g in state.minigames] == [5] * 5
    assert [[len(c.dice) for c in g.cups] for g in state.minigames] == \
        [[5] * 5, [4] * 5, [3] * 5, [2] * 5, [1] * 5]
    assert [g.dice_in_play for g in state.minigames] == [25, 20, 15, 10, 5]
    assert all(not c.exposed for g in state.minigames for c in g.cups)
    assert not state.game_over


def test_player_k_opens_mini_game_k_and_must_bid() -> None:
    state = new_game(DiceStream(SEED))
    assert state.due() == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5}
    for k in range(1, 6):
        assert state.mover(k) == k
        legal = state.legal_moves(k)
        assert CHALLENGE not in legal
        assert legal == [BidMove(b) for b in state.ladder(k).bids]
        with pytest.raises(IllegalMove, match="must BID"):
            state.check_move(k, CHALLENGE)
    with pytest.raises(IllegalMove):
        apply_turn(state, fill(state, {3: CHALLENGE}), DiceStream(SEED))


def test_later_movers_raise_or_challenge() -> None:
    stream = DiceStream(SEED)
    state, _ = apply_turn(new_game(stream), fill(new_game(stream), {}), stream)
    assert state.turn == 2
    for k in range(1, 6):
        legal = state.legal_moves(k)
        assert legal[-1] == CHALLENGE
        current = state.minigame(k).current_bid
        seat = state.mover(k)
        assert current is not None and seat is not None
        assert all(isinstance(m, ChallengeMove) or is_raise(current, m.bid) for m in legal)
        with pytest.raises(IllegalMove, match="is not above"):
            state.check_move(seat, BidMove(current))


@pytest.mark.parametrize(("k", "t", "player"), [
    (1, 1, 1), (2, 1, 2), (5, 1, 5), (1, 2, 2), (5, 2, 1), (3, 3, 5), (5, 3, 2),
    (4, 7, 5), (2, 10, 1), (1, 6, 1),
])
def test_schedule_formula(k: int, t: int, player: int) -> None:
    assert mover(k, t) == ((k + t - 2) % 5) + 1 == player
    assert minigame_of(player, t) == k


def test_play_in_a_mini_game_goes_round_the_table() -> None:
    for k in range(1, 6):
        order = [mover(k, t) for t in range(1, 12)]
        assert all(b == a % 5 + 1 for a, b in itertools.pairwise(order))


def test_each_player_moves_in_exactly_one_mini_game_per_turn() -> None:
    for t in range(1, 40):
        assert sorted(mover(k, t) for k in range(1, 6)) == [1, 2, 3, 4, 5]


def test_one_challenge_ends_a_mini_game_and_its_player_has_nothing_due() -> None:
    stream = DiceStream(SEED)
    state = new_game(stream)
    state, _ = apply_turn(state, fill(state, {}), stream)
    # turn 2: player 3 moves in mini-game 2 and challenges
    assert state.due()[3] == 2
    cups_before = state.minigame(2).cups
    state, events = apply_turn(state, fill(state, {3: CHALLENGE}), stream)
    game = state.minigame(2)
    assert game.ended and game.challenge is not None and game.challenge.seat == 3
    assert game.cups == cups_before            # the mini-game's own dice do not change
    assert state.legal_moves(2) == []
    assert state.mover(2) is None
    assert any(isinstance(e, ChallengeResolved) and e.minigame == 2 for e in events)
    # turn 3: mini-game 2 would be moved by player 4, who now has nothing to do
    assert mover(2, 3) == 4
    assert 4 not in state.due()
    assert sorted(state.due()) == [1, 2, 3, 5]
    with pytest.raises(IllegalMove, match="no move this turn"):
        state.check_move(4, CHALLENGE)
    with pytest.raises(IllegalMove, match="no move this turn"):
        apply_turn(state, fill(state, {4: CHALLENGE}), stream)


def test_every_due_seat_needs_a_move() -> None:
    state = new_game(DiceStream(SEED))
    moves = fill(state, {})
    del moves[2]
    with pytest.raises(ValueError, match="no move for seats"):
        apply_turn(state, moves, DiceStream(SEED))


def test_virtual_dice_may_go_below_zero() -> None:
    # mini-game 1: no ones and no stars at all; player 1 bid 7 ones, player 2 challenges
    cups = {1: [[2, 3, 4, 5, 2]] * 5}
    state = position(turn=2, cups=cups, bids={1: [(1, Bid(7, 1))]}, virtual=(5, 5, 5, 5, 5))
    after, events = apply_turn(state, fill(state, {2: CHALLENGE}), DiceStream(SEED))
    resolved = next(e for e in events if isinstance(e, ChallengeResolved))
    assert resolved.result.actual == 0 and resolved.result.losses == {1: 7}
    assert after.virtual_dice == (-2, 5, 5, 5, 5)


def test_losses_come_off_virtual_dice() -> None:
    cups = {3: [[4, 4, 4], [4, S, 1], [2, 2, 2], [3, 3, 3], [5, 5, 5]]}
    # turn 2: player 4 moves in mini-game 3 and challenges player 3's 2 fours
    state = position(turn=2, cups=cups, bids={3: [(3, Bid(2, 4))]})
    assert state.mover(3) == 4
    after, _events = apply_turn(state, fill(state, {4: CHALLENGE}), DiceStream(SEED))
    assert after.virtual_dice == (5, 5, 5, 2, 5)   # 5 fours: over by 3


def test_game_ends_when_all_five_mini_games_ended() -> None:
    stream = DiceStream(SEED)
    state = new_game(stream)
    state, _ = apply_turn(state, fill(state, {}), stream)
    state, events = apply_turn(state, {s: CHALLENGE for s in state.due()}, stream)
    assert state.game_over
    ended = [e for e in events if isinstance(e, GameEnded)]
    assert len(ended) == 1 and ended[0].standings == state.standings()
    assert state.due() == {}
    with pytest.raises(IllegalMove, match="game is over"):
        apply_turn(state, {}, stream)


def test_ranking_shares_ranks() -> None:
    standings = rank({1: 5, 2: 3, 3: -2, 4: 5, 5: 3})
    assert [(s.seat, s.rank, s.virtual_dice) for s in standings] == [
        (1, 1, 5), (4, 1, 5), (2, 3, 3), (5, 3, 3), (3, 5, -2)]
    assert [s.rank for s in rank({1: 4, 2: 4, 3: 4, 4: 4, 5: 4})] == [1] * 5
    assert [s.rank for s in rank({1: 1, 2: 2, 3: 3, 4: 4, 5: 5})] == [1, 2, 3, 4, 5]
    state = position(virtual=(5, 3, -2, 5, 3))
    assert [s.rank for s in state.standings()] == [1, 1, 3, 3, 5]


def test_seat_draw_is_a_permutation_from_the_seats_label() -> None:
    stream = DiceStream(SEED)
    seats = draw_seats(stream, 5)
    assert sorted(seats) == [1, 2, 3, 4, 5]
    assert seats == stream.shuffle("seats", [1, 2, 3, 4, 5])
    draws = {tuple(draw_seats(DiceStream(seed_from_number(n)), 5)) for n in range(200)}
    assert len(draws) > 60   # 120 orders; a fair draw reaches most of them


# --------------------------------------------------------------------------
# The dice stream and the commitment
# --------------------------------------------------------------------------


def test_dice_stream_is_deterministic_per_seed_and_label() -> None:
    a, b = DiceStream(SEED), DiceStream(SEED)
    first = a.dice("hand/1/1", 5)
    a.dice("hand/2/2", 40)
    b.dice("zzz", 7)
    assert b.dice("hand/1/1", 5) == first == a.dice("hand/1/1", 5)
    assert a.dice("hand/1/1", 3) == first[:3]
    assert DiceStream(seed_from_number(1)).dice("x", 30) != DiceStream(SEED).dice("x", 30)
    assert a.dice("x", 30) != a.dice("y", 30)


def test_dice_follow_the_published_construction() -> None:
    """HMAC-SHA256(seed, "label/block"), bytes >= 252 skipped, die = byte % 6 + 1."""
    def by_hand(seed: bytes, label: str, count: int) -> tuple[int, ...]:
        out: list[int] = []
        block = 0
        while len(out) < count:
            digest = hmac.new(seed, f"{label}/{block}".encode(), hashlib.sha256).digest()
            out += [byte % 6 + 1 for byte in digest if byte < 252]
            block += 1
        return tuple(out[:count])
    stream = DiceStream(SEED)
    for label in ("hand/1/1", "reroll/3/2/1", "long"):
        assert stream.dice(label, 100) == by_hand(SEED, label, 100)


def test_dice_are_uniform() -> None:
    stream = DiceStream(SEED)
    counts = Counter(f for i in range(600) for f in stream.dice(f"chi/{i}", 100))
    assert sum(counts.values()) == 60_000
    expected = 10_000
    chi2 = sum((counts[f] - expected) ** 2 / expected for f in range(1, 7))
    assert chi2 < 30, (chi2, counts)   # 5 degrees of freedom: p(chi2 > 30) < 1e-5


def test_shuffle_is_a_permutation() -> None:
    stream = DiceStream(SEED)
    for n in (0, 1, 2, 5, 17, 100):
        items = [f"x{i}" for i in range(n)]
        shuffled = stream.shuffle(f"s/{n}", items)
        assert sorted(shuffled) == sorted(items)
        assert shuffled == stream.shuffle(f"s/{n}", items)
    assert stream.shuffle("s/100", list(range(100))) != list(range(100))


def test_commitment_is_sha256_of_the_seed() -> None:
    assert commitment(SEED) == hashlib.sha256(SEED).hexdigest()
    assert len(commitment(SEED)) == 64
    with pytest.raises(ValueError):
        DiceStream(b"short")


# --------------------------------------------------------------------------
# Odds
# --------------------------------------------------------------------------


def view(own: Sequence[int], others: Sequence[int] = (), unknown: int = 0,
         unknown_super: int = 0, current: Bid | None = None) -> SeatView:
    return SeatView(seat=1, own=Cup(dice(*own)), others_exposed=dice(*others),
                    unknown_plain=unknown, unknown_super=unknown_super, current=current,
                    ladder=Ladder(len(own) + len(others) + unknown + 2 * unknown_super),
                    rules=POSTAL_RULES)


def test_odds_with_no_unknown_dice_are_certain() -> None:
    v = view([3, 3, S], others=[1, 2])
    for q in range(1, 6):
        for f in (1, 2, 3, 4, 5, S):
            odds = bid_odds(v, Bid(q, f))
            assert odds.holds in (0.0, 1.0)
            assert odds.exact in (0.0, 1.0)
    assert bid_odds(v, Bid(3, 3)).holds == 1.0 and bid_odds(v, Bid(3, 3)).exact == 1.0
    assert bid_odds(v, Bid(4, 3)).holds == 0.0
    assert bid_odds(v, Bid(1, S)).exact == 1.0


def test_odds_of_one_unknown_die() -> None:
    v = view([3, 3], unknown=1)
    assert bid_odds(v, Bid(3, 3)).holds == pytest.approx(1 / 3)
    assert bid_odds(v, Bid(3, 3)).exact == pytest.approx(1 / 3)
    assert bid_odds(v, Bid(2, 3)).holds == pytest.approx(1.0)
    assert bid_odds(v, Bid(2, 3)).exact == pytest.approx(2 / 3)
    assert bid_odds(v, Bid(1, S)).holds == pytest.approx(1 / 6)
    assert bid_odds(view([S], unknown=1), Bid(2, S)).holds == pytest.approx(1 / 6)


def test_odds_of_an_unknown_super_die() -> None:
    v = view([3], unknown_super=1)
    assert bid_odds(v, Bid(3, 3)).holds == pytest.approx(1 / 3)
    assert bid_odds(v, Bid(2, 3)).holds == pytest.approx(1 / 3)
    assert bid_odds(v, Bid(2, 3)).exact == pytest.approx(0.0)


def test_odds_binomial_values() -> None:
    v = view([2], unknown=3)
    # number bid needing 2 of 3 unknown dice: 3 p^2 (1-p) + p^3 with p = 1/3
    assert bid_odds(v, Bid(3, 2)).holds == pytest.approx(3 / 9 * 2 / 3 + 1 / 27)
    assert bid_odds(v, Bid(3, 2)).exact == pytest.approx(3 / 9 * 2 / 3)
    assert bid_odds(v, Bid(3, S)).holds == pytest.approx(1 / 216)


@pytest.mark.parametrize("face", [2, S])
def test_exact_probabilities_sum_to_one(face: int) -> None:
    v = view([2, S, 4], others=[2], unknown=7, unknown_super=1)
    dist = actual_distribution(v, Bid(1, face))
    assert sum(dist.values()) == pytest.approx(1.0)
    top = max(dist)
    exacts = [bid_odds(v, Bid(q, face)).exact for q in range(1, top + 2)]
    holds = [bid_odds(v, Bid(q, face)).holds for q in range(1, top + 2)]
    assert count_matching(v.known, Bid(1, face)) >= 1   # so P(actual == 0) = 0
    assert sum(exacts) == pytest.approx(1.0)
    for q in range(1, top + 1):
        assert holds[q - 1] - holds[q] == pytest.approx(exacts[q - 1])


# --------------------------------------------------------------------------
# Errors, robot, move JSON
# --------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: Bid(0, 3), lambda: Bid(-1, 3), lambda: Bid(2, 7), lambda: Bid(2, 0),
    lambda: move_from_json({"bid": {"quantity": 3, "face": 6}}),
    lambda: move_from_json({"bid": {"quantity": "x", "face": 3}}),
    lambda: move_from_json({"bid": {"quantity": 3}}),
    lambda: move_from_json({"bid": {"quantity": 0, "face": 3}}),
    lambda: move_from_json({"challenge": False}),
    lambda: move_from_json({"bid": {"quantity": 3, "face": 3}, "expose": [9]}),
])
def test_malformed_moves(make: object) -> None:
    with pytest.raises(MalformedMove):
        make()   # type: ignore[operator]


def test_malformed_and_illegal_are_distinct() -> None:
    assert issubclass(MalformedMove, RulesError) and issubclass(IllegalMove, RulesError)
    assert not issubclass(MalformedMove, IllegalMove)
    assert not issubclass(IllegalMove, MalformedMove)
    with pytest.raises(IllegalMove) as err:
        Ladder(25).check(Bid(6, 5), Bid(6, 3))
    assert not isinstance(err.value, MalformedMove)


def random_position(seed: int, rules: RuleSet = POSTAL_RULES) -> PostalState:
    rng = random.Random(seed)
    stream = DiceStream(seed_from_number(seed))
    state = new_game(stream, rules)
    for _ in range(rng.randrange(0, 6)):
        moves: dict[int, Move] = {}
        for seat, k in state.due().items():
            bids = [m for m in state.legal_moves(k) if isinstance(m, BidMove)]
            moves[seat] = bids[min(len(bids) - 1, rng.randrange(4))] if bids else CHALLENGE
        state, _ = apply_turn(state, moves, stream)
    return state


@pytest.mark.parametrize("seed", range(12))
def test_robot_returns_a_legal_move_and_is_deterministic(seed: int) -> None:
    for rules in (POSTAL_RULES, RuleSet(expose=False, star_bids=False),
                  RuleSet(super_die=True, exact_rule=ExactRule.CHALLENGER_GIVES)):
        state = random_position(seed, rules)
        for seat, k in state.due().items():
            v = state.seat_view(seat, k)
            move = choose_move(v, random.Random(seed))
            assert state.check_move(seat, move) == k
            bare = move if isinstance(move, ChallengeMove) else BidMove(move.bid)
            assert bare in state.legal_moves(k)
            assert choose_move(v, random.Random(seed)) == move
            if isinstance(move, BidMove) and move.expose:
                assert rules.expose
            legal = state.legal_moves(k)
            assert random_move(legal, random.Random(seed)) == \
                random_move(legal, random.Random(seed))
            assert random_move(legal, random.Random(seed)) in legal


def test_robot_challenges_at_the_top() -> None:
    state = position(turn=3, bids={5: [(5, Bid(5, 4)), (1, Bid(5, 5))]})
    assert choose_move(state.seat_view(2, 5), random.Random(1)) == CHALLENGE


@pytest.mark.parametrize("move", [
    BidMove(Bid(3, 4)), BidMove(Bid(2, S)), BidMove(Bid(7, 1), (1, S, 1)),
    BidMove(Bid(1, S), (S,)), CHALLENGE,
])
def test_move_json_round_trip(move: Move) -> None:
    data = move_to_json(move)
    assert move_from_json(data) == move
    if isinstance(move, BidMove) and move.bid.is_star:
        assert data["bid"]["face"] == "*"
    if isinstance(move, ChallengeMove):
        assert data == {"challenge": True}
