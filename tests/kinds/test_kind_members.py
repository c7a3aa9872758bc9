"""What every kind answers for the web pages and the robot players, as properties over
games the robots play: each legal move the private page offers is legal and its order
lines read back to the same move; the public tables never show a hidden die; the view
format leads back to the kind."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.kinds import KINDS, PUBLIC, AnyKind, Viewer, kind_for_view
from pbem.mail.text import BodyLine
from pbem.orders.parsing import parse_text
from pbem.rules.dice import DiceStream, seed_from_number

BUILT_IN = ("postal", "classic", "cup")


def played(kind: AnyKind, seed: int, players: int, turns: int) -> object:
    """The state after the robots played up to turns turns (fewer if the game ends)."""
    stream = DiceStream(seed_from_number(seed))
    state = kind.start(kind.parse_options([]), stream, players)
    rng = random.Random(seed)
    for _ in range(turns):
        if kind.over(state):
            break
        moves = {s: kind.robot_move(state, s, rng) for s in kind.due(state)}
        state = kind.apply(state, moves, stream).state
    return state


@st.composite
def games(draw: st.DrawFn) -> tuple[AnyKind, object]:
    kind = KINDS[draw(st.sampled_from(BUILT_IN))]
    players = draw(st.integers(kind.min_players, kind.max_players))
    return kind, played(kind, draw(st.integers(0, 10_000)), players, draw(st.integers(0, 40)))


@settings(max_examples=60, deadline=None)
@given(games())
def test_the_seats_due_are_those_due_says_what_to_do(game: tuple[AnyKind, object]) -> None:
    """due_seats (a handling's question, asked for each order) names the seats that
    due says what to do, in any state of any kind."""
    kind, state = game
    assert set(kind.due_seats(state)) == set(kind.due(state))


@settings(max_examples=40, deadline=None)
@given(games())
def test_every_offered_move_is_legal_and_its_lines_read_back_to_it(
        game: tuple[AnyKind, object]) -> None:
    kind, state = game
    for seat in kind.due(state) if not kind.over(state) else {}:
        moves = kind.legal_moves(state, seat)
        assert moves, f"seat {seat} is due but has no legal move"
        for move in moves[:12]:
            kind.check(state, seat, move)
            lines = kind.order_lines(move)
            parsed = parse_text([BodyLine(i, t) for i, t in enumerate(lines, 1)], kind.commands)
            assert parsed.problems == []
            assert kind.take_order(state, seat, parsed.orders).move == move, lines
            odds = kind.move_odds(state, seat, move)
            assert odds is None or 0 <= odds["exact"] <= odds["holds"] <= 1


@settings(max_examples=40, deadline=None)
@given(games())
def test_the_public_tables_show_no_hidden_die_and_a_seat_sees_only_its_own(
        game: tuple[AnyKind, object]) -> None:
    kind, state = game
    public = kind.web_tables(state, PUBLIC)
    json.dumps([public, kind.web_scores(state)])     # JSON-ready, as the endpoints send them
    for table in public:
        assert all(cup["hidden"] is None for cup in table.get("cups", []))
        assert not table.get("roll_is_yours")
    for seat in kind.due(state):
        for table in kind.web_tables(state, Viewer(seat=seat)):
            for cup in table.get("cups", []):
                assert (cup["hidden"] is not None) == (cup["seat"] == seat)


@pytest.mark.parametrize("name", BUILT_IN)
def test_a_view_format_leads_back_to_its_kind(name: str) -> None:
    kind = KINDS[name]
    assert kind_for_view(kind.view_format) is kind
    with pytest.raises(KeyError):
        kind_for_view("pbem.chess.view/1")
