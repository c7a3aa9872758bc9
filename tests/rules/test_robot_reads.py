"""Reading the readers: a seat's answers in revealed rounds pick its call model."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.kinds import KINDS
from pbem.kinds.classic import client_seat_view as classic_seat_view
from pbem.kinds.postal import client_seat_view
from pbem.rules import robot_strong
from pbem.rules.dice import DiceStream, Die, seed_from_number
from pbem.rules.dice_cup import Cup
from pbem.rules.ladder import Bid
from pbem.rules.odds import Answer, answers
from pbem.rules.robot import choose_move
from pbem.rules.robot_reads import PRIOR_READER, reader_weight, seat_reader_weight
from pbem.rules.robot_strong import Table


def shown(rows: list[tuple[bool, float]]) -> list[tuple[bool, tuple[tuple[float, float], ...]]]:
    """Answers whose hand a reveal showed: (called, plain odds) -> (called, odds)."""
    return [(called, ((1.0, holds),)) for called, holds in rows]


odds_like = shown([(False, 0.9), (True, 0.35), (False, 0.7), (True, 0.45), (True, 0.3),
                   (False, 0.95), (True, 0.4)])
reader_like = shown([(False, 0.9), (False, 0.35), (False, 0.7), (False, 0.45), (True, 0.05),
                     (False, 0.3), (False, 0.4)])
odds_pairs = st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=1,
                      max_size=4).map(lambda pairs: tuple((w / sum(v for v, _ in pairs)
                                                           if sum(v for v, _ in pairs) else 1.0,
                                                           h) for w, h in pairs))
rows = st.lists(st.tuples(st.booleans(), odds_pairs), max_size=30)


Row = tuple[bool, tuple[tuple[float, float], ...]]


def test_no_answers_leaves_the_prior() -> None:
    assert reader_weight([]) == pytest.approx(PRIOR_READER)
    assert seat_reader_weight((), 3) == pytest.approx(PRIOR_READER)


def test_reader_like_answers_pick_the_reader_model() -> None:
    assert reader_weight(reader_like) > 0.95


def test_odds_like_answers_pick_the_odds_model() -> None:
    assert reader_weight(odds_like) < 0.05


def test_each_seat_is_read_from_its_own_answers() -> None:
    mixed = ([Answer(2, c, o) for c, o in odds_like] + [Answer(4, c, o) for c, o in reader_like])
    assert seat_reader_weight(mixed, 2) < 0.2 < 0.8 < seat_reader_weight(mixed, 4)
    # a seat not yet seen is read from the table's answers, at a share
    readers = [Answer(s, c, o) for s in (2, 4) for c, o in reader_like]
    assert PRIOR_READER < seat_reader_weight(readers, 3) < seat_reader_weight(readers, 2)


@given(rows, st.floats(0.25, 0.6))
def test_a_call_at_middling_odds_says_odds_player(seen: list[Row], holds: float) -> None:
    before = reader_weight(seen)
    assert 0.0 <= before <= 1.0
    assert reader_weight([*seen, (True, ((1.0, holds),))]) <= before


@given(rows, st.floats(0.2, 0.5))
def test_a_raise_at_middling_odds_says_reader(seen: list[Row], holds: float) -> None:
    assert reader_weight([*seen, (False, ((1.0, holds),))]) >= reader_weight(seen)


def test_answers_of_a_revealed_round() -> None:
    """Seat 2 raised 2 fours holding two; seat 3 called 3 fours holding none while
    two fours were exposed: its odds were 2 fours or more of 4 unknown dice at 1/3."""
    placed = ((1, Bid(2, 4), ()), (2, Bid(3, 4), ()), (1, Bid(4, 4), (4, 4)))
    table = {1: (Die(4), Die(4), Die(2)), 2: (Die(4), Die(4), Die(1)),
             3: (Die(1), Die(2), Die(3))}
    sizes = {1: 3, 2: 3, 3: 3}
    got = answers(placed, sizes, 3, table)
    assert [a.seat for a in got] == [2, 1, 3] and [a.called for a in got] == [False, False, True]
    assert got[0].odds == ((1.0, 1.0),)                       # it held the 2 fours bid
    assert got[2].odds == ((1.0, pytest.approx(33 / 81)),)
    # seat 1 exposed with its second bid: the hand it answered with was re-rolled, so
    # its answer is weighed over every hand its 3 dice could have been
    assert len(got[1].odds) == 4 and sum(w for w, _ in got[1].odds) == pytest.approx(1.0)


@given(st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.integers(1, 9),
                          st.sampled_from([1, 2, 3, 4, 5])), max_size=8))
def test_answers_of_a_running_round_weigh_every_hand(made: list[tuple[int, int, int]]) -> None:
    placed = tuple((seat, Bid(q, face), ()) for seat, q, face in made)
    got = answers(placed, {1: 3, 2: 3, 3: 3})
    assert len(got) == max(0, len(made) - 1) and not any(a.called for a in got)
    for a in got:
        assert sum(w for w, _ in a.odds) == pytest.approx(1.0)
        assert all(0.0 <= h <= 1.0 for _, h in a.odds)


def play_until_ended(ended: int, seed: int) -> object:
    kind = KINDS["postal"]
    stream = DiceStream(seed_from_number(seed))
    rng = random.Random(seed)
    state = kind.start(kind.parse_options([]), stream, 5)
    while sum(1 for m in state.minigames if m.ended) < ended:
        moves = {seat: kind.robot_move(state, seat, rng, level="strong")
                 for seat in sorted(kind.due(state))}
        state = kind.apply(state, moves, stream).state
    return state


@pytest.mark.parametrize("seed", [7, 8])
def test_the_view_from_report_json_is_the_stand_in_s(seed: int) -> None:
    """The mail client rebuilds the seat's view, answers and own bids too, from the
    report.json the seat gets: the robot plays the same move at either end."""
    kind = KINDS["postal"]
    state = play_until_ended(3, seed)
    assert not kind.over(state)
    for seat, number in state.due().items():
        report = json.loads(json.dumps({**kind.view(state, seat), "you": seat}))
        client = client_seat_view(report, number)
        stand_in = state.seat_view(seat, number)
        assert client.answers
        for field in ("answers", "own_bids", "others", "next_seat", "current", "seat",
                      "virtual_dice", "later"):
            assert getattr(client, field) == getattr(stand_in, field), field
        assert (choose_move(client, random.Random(1), "strong")
                == choose_move(stand_in, random.Random(1), "strong"))


def test_the_robot_reads_the_next_seat_s_answers() -> None:
    state = play_until_ended(3, 7)
    seat, number = next(iter(state.due().items()))
    view = state.seat_view(seat, number)
    assert Table(view).reader == pytest.approx(seat_reader_weight(view.answers, seat % 5 + 1))


@pytest.mark.parametrize("edition", ["english", "anniversary"])
def test_the_classic_view_from_report_json_is_the_stand_in_s(edition: str) -> None:
    """Classic Bluff: the last finished round (its cups shown) and this round's bids,
    as report.json has them, give the client the stand-in's answers."""
    kind = KINDS["classic"]
    stream = DiceStream(seed_from_number(11))
    rng = random.Random(11)
    state = kind.start(kind.parse_options([edition]), stream, 5)
    checked = 0
    while not kind.over(state) and checked < 30:
        for seat in sorted(kind.due(state)):
            report = json.loads(json.dumps(kind.view(state, seat)))
            client = classic_seat_view(report)
            stand_in = state.seat_view(seat)
            for field in ("answers", "own_bids", "others", "next_seat", "current", "seat",
                      "virtual_dice", "later"):
                assert getattr(client, field) == getattr(stand_in, field), field
            checked += bool(client.answers) and state.finished != ()
        moves = {seat: kind.robot_move(state, seat, rng, level="strong")
                 for seat in sorted(kind.due(state))}
        state = kind.apply(state, moves, stream).state
    assert checked >= 10


def test_a_reader_is_misled_by_a_bid_of_a_face_the_robot_lacks() -> None:
    """After a bid of fours a reader takes the robot to hold more fours than it does
    when it holds none, and fewer when it holds nothing but fours."""
    state = play_until_ended(0, 7)
    seat, number = next(iter(state.due().items()))
    view = state.seat_view(seat, number)
    reader_next = replace(view, answers=tuple(Answer(view.next_seat or 0, c, o)
                                              for c, o in reader_like))
    fives = len(view.own.hidden)
    lacking = Table(replace(reader_next, own=Cup(tuple(Die(2) for _ in range(fives)))))
    holding = Table(replace(reader_next, own=Cup(tuple(Die(4) for _ in range(fives)))))
    assert lacking.reader > 0.9 and lacking.misled() > 0.8
    assert lacking.mislead(4) > 0.5 > -0.5 > holding.mislead(4)
    assert holding.mislead(2) > 0.0


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 1000), st.integers(0, 4), st.floats(0.0, 0.5))
def test_the_mislead_term_weighs_a_raise_by_the_reader_weight(seed: int, ended: int,
                                                              share: float) -> None:
    """A raise is worth its priced call plus MISLEAD x how much the next seat reads as a
    reader (nothing up to a weight of a half) x how far the bid misleads a reader;
    nothing is added against an odds player."""
    state = play_until_ended(ended, seed)
    if not state.due():
        return
    seat, number = next(iter(state.due().items()))
    view = state.seat_view(seat, number)
    for answered in ((), tuple(Answer(view.next_seat or 0, c, o) for c, o in odds_like * 4)):
        table = Table(replace(view, answers=answered))
        for bid in view.ladder.raises(view.current)[:6]:
            with_term = table.raise_value(bid)
            old, robot_strong.MISLEAD = robot_strong.MISLEAD, share
            try:
                shared = table.raise_value(bid)
            finally:
                robot_strong.MISLEAD = old
            assert shared - with_term == pytest.approx(
                (share - old) * table.misled() * table.mislead(bid.face), abs=1e-9)
            assert table.misled() == pytest.approx(max(0.0, 2 * table.reader - 1))
            super_die = Table(replace(view, answers=answered,
                                      rules=replace(view.rules, super_die=True)))
            assert super_die.misled() == 0.0
            if answered:
                assert table.reader < 0.05 and table.misled() == 0.0
