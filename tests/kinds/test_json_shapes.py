"""The JSON each kind writes has the shape its TypedDict names (pbem.kinds.views,
pbem.kinds.tables, the rules' moves and records): mypy checks the code against the names,
these tests the data against them, over games the robots play. A key a kind adds or drops
without its type saying so fails here."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.kinds import KINDS, PUBLIC, REVEAL, AnyKind, Viewer
from pbem.kinds.generic_record import Entrant, GameRows, GenericRecord, MoveRow
from pbem.kinds.tables import BluffTable, ClassicScore, CupScore, CupTable, PostalScore
from pbem.kinds.views import (
    ClassicRules,
    ClassicView,
    CupExtras,
    CupRules,
    CupView,
    PostalExtras,
    PostalView,
)
from pbem.rules.bid_moves import MoveJSON as BidMoveJSON
from pbem.rules.cupofbluff_moves import MoveJSON as CupMoveJSON
from pbem.rules.dice import DiceStream, commitment, seed_from_number
from pbem.rules.postal_record import PostalRecordJSON
from pbem.rules.ruleset import RulesJSON
from testkit.shapes import shape_problems


@dataclass(frozen=True)
class Shapes:
    rules: Any
    view: Any
    extras: Any           # None: the kind adds nothing to its reports ({})
    move: Any
    record: Any
    table: Any
    score: Any


SHAPES = {
    "postal": Shapes(RulesJSON, PostalView, PostalExtras, BidMoveJSON, PostalRecordJSON,
                     BluffTable, PostalScore),
    "classic": Shapes(ClassicRules, ClassicView, None, BidMoveJSON, GenericRecord,
                      BluffTable, ClassicScore),
    "cup": Shapes(CupRules, CupView, CupExtras, CupMoveJSON, GenericRecord, CupTable,
                  CupScore),
}
OPTIONS = {"postal": [[]], "classic": [[], ["czech"], ["anniversary", "EXPOSE", "on"]],
           "cup": [[]]}


@dataclass
class Game:
    kind: AnyKind
    state: object
    rows: GameRows
    moves: list[object]


def played(kind: AnyKind, words: list[str], seed: int, players: int, turns: int) -> Game:
    """A game the robots played up to turns turns, with the rows its record is made of."""
    raw = seed_from_number(seed)
    stream = DiceStream(raw)
    rules = kind.parse_options(words)
    state = kind.start(rules, stream, players)
    rng = random.Random(seed)
    rows, moves = [], []
    for turn in range(1, turns + 1):
        if kind.over(state):
            break
        due = {s: kind.robot_move(state, s, rng) for s in kind.due(state)}
        resolution = kind.apply(state, due, stream)
        rows += [MoveRow(turn, s, "robot", json.loads(json.dumps(kind.move_to_json(m))),
                         kind.place(state, s), [int(f) for f in resolution.extras.get(s, [])])
                 for s, m in due.items()]
        moves += due.values()
        state = resolution.state
    entrants = [Entrant(s, f"player {s}", s) for s in range(1, players + 1)]
    return Game(kind, state, GameRows("shapes", json.loads(json.dumps(rules)), raw,
                                      commitment(raw), entrants, rows, True), moves)


@st.composite
def games(draw: st.DrawFn) -> Game:
    name = draw(st.sampled_from(sorted(SHAPES)))
    kind = KINDS[name]
    return played(kind, draw(st.sampled_from(OPTIONS[name])), draw(st.integers(0, 10_000)),
                  draw(st.integers(kind.min_players, kind.max_players)),
                  draw(st.integers(0, 60)))


def assert_fits(value: object, hint: Any) -> None:
    problems = shape_problems(value, hint)
    assert problems == [], problems[:5]


@settings(max_examples=30, deadline=None)
@given(games())
def test_what_a_kind_writes_has_the_shape_its_type_names(game: Game) -> None:
    kind, state = game.kind, game.state
    shapes = SHAPES[kind.name]
    assert_fits(kind.played_rules(game.rows.rules, len(game.rows.entrants)), shapes.rules)
    for move in game.moves:
        assert_fits(kind.move_to_json(move), shapes.move)
    for seat in [None, *range(1, len(game.rows.entrants) + 1)]:
        assert_fits(kind.view(state, seat), shapes.view)
        extras = kind.report_extras(state, seat)
        if shapes.extras is None:
            assert extras == {}
        else:
            assert_fits(extras, shapes.extras)
        for table in kind.web_tables(state, PUBLIC if seat is None else Viewer(seat=seat)):
            assert_fits(table, shapes.table)
    for table in kind.web_tables(state, REVEAL):
        assert_fits(table, shapes.table)
    for score in kind.web_scores(state):
        assert_fits(score, shapes.score)
    assert_fits(kind.record(game.rows, state), shapes.record)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_rules_a_kind_reads_from_its_options_have_their_shape(name: str) -> None:
    kind = KINDS[name]
    for words in OPTIONS[name]:
        assert_fits(kind.parse_options(words), SHAPES[name].rules)


def test_the_check_finds_a_key_too_many_or_missing_and_a_value_of_the_wrong_type() -> None:
    rules = KINDS["classic"].parse_options(["czech"])
    assert shape_problems(rules, ClassicRules) == []
    assert shape_problems({**rules, "colour": "red"}, ClassicRules) == [
        "$: 'colour' is not a key of ClassicRules"]
    missing = {k: v for k, v in rules.items() if k != "expose"}
    assert shape_problems(missing, ClassicRules) == ["$: ClassicRules has no 'expose'"]
    assert shape_problems({**rules, "dice_per_player": True}, ClassicRules) == [
        "$.dice_per_player: True is not <class 'int'>"]
    assert shape_problems({"version": 1}, RulesJSON) != []
