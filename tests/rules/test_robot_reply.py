"""Raises priced by the next seat's actual reply, summed over its hands (robot_reply)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.rules import beliefs, robot_strong
from pbem.rules.bid_moves import BidMove
from pbem.rules.challenge import count_matching
from pbem.rules.dice import FACES
from pbem.rules.ladder import Bid
from pbem.rules.odds import SeatView
from pbem.rules.robot_choice import choose_strong
from pbem.rules.robot_reply import call_chances, hand_columns
from pbem.rules.robot_search import BLUFF_RATE, Player, raise_options, reply
from pbem.rules.robot_strong import Table
from testkit.robot_play import after_raise, postal_played

BENCH = Path(__file__).resolve().parents[2] / "bench"


def views(seed: int, turns: int) -> list[SeatView]:
    state = postal_played(seed, turns)
    return [state.seat_view(seat, number) for seat, number in sorted(state.due().items())]


def brute_call(player: Player, bid: Bid, view: SeatView, hand: beliefs.Hand,
               exposed: list[int], exact_cost: float) -> float:
    """P(the player holding hand calls bid), one hand at a time by robot_search.reply."""
    seen = [exposed[f - 1] + beliefs.matching(hand, f) for f in FACES]
    options = raise_options(view.ladder, bid)
    plain = reply(player, bid, options, seen, False, exact_cost) is None
    bluff = reply(player, bid, options, seen, True, exact_cost) is None
    return (1.0 - BLUFF_RATE) * plain + BLUFF_RATE * bluff


def brute_value(table: Table, bid: Bid, after: bool = False) -> float:
    """Table.exact_raise_value by enumeration: every hand of the next seat, its call
    by robot_search.reply, the other seats' count by the robot's beliefs; with after,
    its raise not called worth Table.after_value."""
    view, nxt = table.view, table.next
    assert nxt is not None
    hands, weights = beliefs.posterior(nxt.hidden_plain, nxt.hidden_super, nxt.bids,
                                       beliefs.BLUFF, view.rules.star_bids)
    known, _, rest = table.counts(bid.face)
    price = table.exact_price()
    replies = price.replies()
    total = 0.0
    options = raise_options(view.ladder, bid)
    for hand, weight in zip(hands, weights):
        x = beliefs.matching(hand, bid.face)
        called = sum(pr * table.outcome(known + x + r, bid.quantity, True)
                     for r, pr in enumerate(rest) if pr > 1e-9)
        seen = [replies.exposed[f - 1] + beliefs.matching(hand, f) for f in FACES]
        for share, player in ((1.0 - table.reader, price.odds_player()),
                              (table.reader, price.reader_player(bid.face))):
            for chance, bluff in ((1.0 - BLUFF_RATE, False), (BLUFF_RATE, True)):
                raised = reply(player, bid, options, seen, bluff, replies.exact_cost)
                if raised is None:
                    total += weight * share * chance * called
                elif after:
                    total += weight * share * chance * price.after_value(
                        bid.face, raised, beliefs.matching(hand, raised.face))
    return total + robot_strong.MISLEAD * table.misled() * table.mislead(bid.face)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 5000), st.integers(0, 25), st.integers(0, 1))
def test_the_exact_price_is_the_sum_over_hands(seed: int, turns: int, after: int) -> None:
    """The price summed in columns equals the sum hand by hand with the reply policy,
    a raise not called worth 0 or the seat after's call on it (REPLY_AFTER)."""
    old, robot_strong.REPLY_AFTER = robot_strong.REPLY_AFTER, after
    try:
        for view in views(seed, turns)[:2]:
            table = Table(view)
            if table.next is None:
                continue
            assert table.exact_price().after is not None
            for bid in view.ladder.raises(view.current)[:40:9]:
                assert table.exact_raise_value(bid) == pytest.approx(
                    brute_value(table, bid, bool(after)), abs=1e-9)
    finally:
        robot_strong.REPLY_AFTER = old


@given(st.integers(0, 5000), st.integers(0, 25))
@settings(max_examples=10, deadline=None)
def test_a_raise_not_called_is_worth_what_a_bystander_gets(seed: int, turns: int) -> None:
    """The seat after calls the next seat's raise at most always: its value lies
    between an exact count's loss to a bystander and the best a bystander gains."""
    for view in views(seed, turns)[:2]:
        table = Table(view)
        price = table.exact_price()
        if price.after is None or table.next is None:
            continue
        most = table.next.hidden_plain + 2 * table.next.hidden_super
        for raised in view.ladder.raises(view.current)[:30:5]:
            for matching in range(most + 1):
                value = price.after_value(raised.face, raised, matching)
                assert -0.25 - 1e-9 <= value <= 0.5 * 30 / 4   # 30 dice at most in play


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.integers(0, 1), st.integers(0, 6),
       st.lists(st.integers(0, 2), min_size=6, max_size=6), st.integers(0, 60),
       st.sampled_from([0.25, 1.0]), st.sampled_from([0.0, 1.0]))
def test_call_chances_follow_the_reply_hand_by_hand(
        plain: int, super_: int, others: int, exposed: list[int], position: int,
        fear: float, exact_cost: float) -> None:
    """Each hand's chance of a call is the reply's: without a bluff, or with one."""
    from pbem.rules.ladder import Ladder
    from pbem.rules.odds import count_distribution
    if plain + super_ == 0:
        return
    ladder = Ladder(20)
    bid = ladder.bids[min(position, len(ladder.bids) - 1)]
    player = Player({f: count_distribution(others, 0, 1 / 6 if f == 6 else 1 / 3)
                     for f in FACES}, fear)
    columns = hand_columns(plain, super_)
    got = call_chances(player, bid, raise_options(ladder, bid), exposed, columns,
                       exact_cost)
    for index, (hand, _) in enumerate(beliefs.hands(plain, super_)):
        seen = [exposed[f - 1] + beliefs.matching(hand, f) for f in FACES]
        options = raise_options(ladder, bid)
        plain_call = reply(player, bid, options, seen, False, exact_cost) is None
        bluff_call = reply(player, bid, options, seen, True, exact_cost) is None
        assert got[index] == pytest.approx((1 - BLUFF_RATE) * plain_call
                                           + BLUFF_RATE * bluff_call)


@pytest.mark.parametrize("seed", [3, 11, 40, 77])
def test_the_next_readers_call_is_bench_readers(seed: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """For the hand the next seat holds, the reader's reply priced here calls the
    robot's raise exactly when bench/readers.py's reader does (without a bluff)."""
    monkeypatch.syspath_prepend(str(BENCH))
    from readers import reader_move  # bench/readers.py

    state = postal_played(seed, 6)
    checked = 0
    for seat, number in sorted(state.due().items()):
        view = state.seat_view(seat, number)
        table = Table(view)
        nxt = table.next
        assert nxt is not None
        for raise_ in view.ladder.raises(view.current)[:12:3]:
            nxt_view = after_raise(state, seat, raise_, seed).seat_view(nxt.seat, number)
            assert nxt_view.current == raise_
            expected = not isinstance(reader_move(nxt_view, random.Random(0)), BidMove)
            hidden = nxt_view.own.hidden
            hand = beliefs.hand_of([d.face for d in hidden if not d.super],
                                   [d.face for d in hidden if d.super])
            found = [h for h, _ in beliefs.hands(nxt.hidden_plain, nxt.hidden_super)]
            exposed = view.others_exposed + view.own.exposed
            chances = call_chances(table.exact_price().reader_player(raise_.face), raise_,
                                   raise_options(view.ladder, raise_),
                                   [count_matching(exposed, Bid(1, f)) for f in FACES],
                                   hand_columns(nxt.hidden_plain, nxt.hidden_super), 1.0, 0.0)
            assert chances[found.index(hand)] == (1.0 if expected else 0.0)
            checked += 1
    assert checked > 0


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 5000), st.integers(0, 25), st.integers(1, 5), st.integers(0, 1))
def test_the_move_is_a_function_of_the_view_and_stream(seed: int, turns: int,
                                                       candidates: int, after: int) -> None:
    """With the exact price on, the same view and stream give the same move, and a
    raise's exact price lies between the worst loss and the best gain."""
    old, robot_strong.EXACT_REPLY = robot_strong.EXACT_REPLY, candidates
    old_after, robot_strong.REPLY_AFTER = robot_strong.REPLY_AFTER, after
    try:
        for view in views(seed, turns):
            move = choose_strong(view, random.Random(seed))
            assert choose_strong(view, random.Random(seed)) == move
            table = Table(view)
            if table.next is not None:
                for bid in view.ladder.raises(view.current)[:6]:
                    assert -13.0 <= table.exact_raise_value(bid) <= 3.0   # 25 dice lost
    finally:
        robot_strong.EXACT_REPLY = old
        robot_strong.REPLY_AFTER = old_after


def test_the_hand_columns_are_keyed_by_ints_and_match_the_hands() -> None:
    columns = hand_columns(5, 0)
    found = beliefs.hands(5, 0)
    assert len(columns) == len(FACES) and all(len(c) == len(found) == 252 for c in columns)
    for index, (hand, _) in enumerate(found):
        assert [c[index] for c in columns] == [beliefs.matching(hand, f) for f in FACES]


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 5000), st.integers(0, 25))
def test_below_the_reader_gate_the_move_is_the_one_move_robots(seed: int,
                                                               turns: int) -> None:
    """EXACT_MIN_READER: where the next seat reads as a reader less than the gate,
    the exact price is not asked and the move is the one-move robot's, draw for draw."""
    saved = (robot_strong.EXACT_REPLY, robot_strong.REPLY_AFTER,
             robot_strong.EXACT_MIN_READER)
    try:
        for view in views(seed, turns):
            robot_strong.EXACT_REPLY = 0
            plain = choose_strong(view, random.Random(seed))
            robot_strong.EXACT_REPLY, robot_strong.REPLY_AFTER = 3, 1
            robot_strong.EXACT_MIN_READER = Table(view).reader + 1e-6
            assert choose_strong(view, random.Random(seed)) == plain
    finally:
        (robot_strong.EXACT_REPLY, robot_strong.REPLY_AFTER,
         robot_strong.EXACT_MIN_READER) = saved
