"""The game record: building, JSON round trip, the JSON schema, replay and verify."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from pbem.rules import (
    CHALLENGE,
    POSTAL_RULES,
    Bid,
    BidMove,
    DiceStream,
    ExactRule,
    GameRecord,
    PostalState,
    RecordedMove,
    RuleSet,
    apply_turn,
    choose_move,
    commitment,
    new_game,
    replay,
    seed_from_number,
    verify,
)
from pbem.rules.bid_moves import Move
from pbem.rules.postal import BidPlaced, Event
from pbem.rules.postal_record import RECORD_FORMAT, draw_seats, result_json

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schema" / "game-record.schema.json"
NAMES = ["Ann", "Bob", "Carl", "Dora", "Eve"]

Chooser = Callable[[PostalState, int, int, random.Random], Move]


def random_chooser(state: PostalState, seat: int, k: int, rng: random.Random) -> Move:
    """A random low raise (often with an expose) or, one time in four, a challenge."""
    legal = state.legal_moves(k)
    bids = [m for m in legal if isinstance(m, BidMove)]
    if not bids or (legal[-1] == CHALLENGE and rng.random() < 0.25):
        return CHALLENGE
    bid = bids[min(len(bids) - 1, rng.randrange(6))].bid
    hidden = [d.face for d in state.minigame(k).cup(seat).hidden]
    if state.rules.expose and len(hidden) > 1 and rng.random() < 0.4:
        return BidMove(bid, tuple(rng.sample(hidden, rng.randrange(1, len(hidden)))))
    return BidMove(bid)


def robot_chooser(state: PostalState, seat: int, k: int, rng: random.Random) -> Move:
    return choose_move(state.seat_view(seat, k), rng)


def record_move(turn: int, seat: int, k: int, move: Move, events: list[Event],
                by: str = "player") -> RecordedMove:
    dealt = next((e.rerolled for e in events if isinstance(e, BidPlaced) and e.seat == seat), ())
    return RecordedMove(turn, seat, k, move, by, dealt)


def play_record(number: int, rules: RuleSet = POSTAL_RULES, *,
                chooser: Chooser = random_chooser, turns: int | None = None
                ) -> tuple[GameRecord, PostalState]:
    """Play game `number` (all of it, or `turns` turns) as the referee would record it."""
    seed = seed_from_number(number)
    stream = DiceStream(seed)
    rng = random.Random(number)
    record = GameRecord(game=f"test-{number}", rules=rules, commitment=commitment(seed),
                        entrants=list(NAMES), seats=draw_seats(stream, len(NAMES)))
    state = new_game(stream, rules)
    while not state.game_over and (turns is None or state.turn <= turns):
        due = state.due()
        moves = {seat: chooser(state, seat, k, rng) for seat, k in sorted(due.items())}
        turn = state.turn
        state, events = apply_turn(state, moves, stream)
        record.moves += [record_move(turn, seat, due[seat], move, events,
                                     by="robot" if seat == 5 else "player")
                         for seat, move in sorted(moves.items())]
    if state.game_over:
        record.seed = seed.hex()
        record.result = result_json(state)
    return record, state


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


RULE_SETS = [
    POSTAL_RULES,
    RuleSet(super_die=True, exact_rule=ExactRule.CHALLENGER_GIVES, board_cap=20),
    RuleSet(star_bids=False, expose=False, exact_rule=ExactRule.EVERYONE),
]


@pytest.mark.parametrize("rules", RULE_SETS)
@pytest.mark.parametrize("number", [1, 2, 3])
def test_finished_records_match_the_schema(validator: Any, rules: RuleSet, number: int) -> None:
    for chooser in (random_chooser, robot_chooser):
        record, _state = play_record(number, rules, chooser=chooser)
        data = json.loads(json.dumps(record.to_json()))
        validator.validate(data)
        assert data["format"] == RECORD_FORMAT
        assert data["result"] is not None and data["seed"] is not None
        assert verify(record) == []


def test_records_have_exposes_stars_and_challenges(validator: Any) -> None:
    records = [play_record(n)[0].to_json() for n in range(7, 17)]
    moves = [m for data in records for m in data["moves"]]
    assert any("expose" in m and "rerolled" in m for m in moves)
    assert any(m["bid"]["face"] == "*" for m in moves if "bid" in m)
    for data in records:
        assert sum(1 for m in data["moves"] if m.get("challenge")) == 5
        validator.validate(data)


@pytest.mark.parametrize("turns", [0, 1, 3])
def test_unfinished_records_match_the_schema(validator: Any, turns: int) -> None:
    record, state = play_record(11, turns=turns)
    assert not state.game_over
    data = json.loads(json.dumps(record.to_json()))
    validator.validate(data)
    assert data["seed"] is None and data["result"] is None
    assert verify(record) != []   # nothing to verify before the seed is out


@pytest.mark.parametrize("change", [
    lambda d: d.update(format="pbem.bluff.record/2"),
    lambda d: d.update(commitment="XYZ"),
    lambda d: d.update(seed="abc"),
    lambda d: d["players"].pop(),
    lambda d: d["players"][0].update(seat=6),
    lambda d: d["moves"][0].update(bid={"quantity": 0, "face": 3}),
    lambda d: d["moves"][0].update(bid={"quantity": 1, "face": 6}),
    lambda d: d["moves"][0].update(challenge=True),
    lambda d: d["moves"][0].update(by="nobody"),
    lambda d: d["moves"][0].pop("turn"),
    lambda d: d["moves"][-1].update(challenge=False),
    lambda d: d["rules"].update(exact_rule="bidder"),
    lambda d: d["result"]["virtual_dice"].pop("3"),
    lambda d: d.update(extra=1),
])
def test_schema_rejects_broken_records(validator: Any, change: Callable[[Any], None]) -> None:
    record, _ = play_record(5)
    data = copy.deepcopy(record.to_json())
    validator.validate(data)
    change(data)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_schema_rejects_an_expose_without_its_reroll(validator: Any) -> None:
    record, _ = play_record(7)
    data = record.to_json()
    move = next(m for m in data["moves"] if "expose" in m)
    del move["rerolled"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


@pytest.mark.parametrize("turns", [None, 2])
def test_json_round_trip(turns: int | None) -> None:
    record, _ = play_record(3, RULE_SETS[1], turns=turns)
    text = json.dumps(record.to_json())
    again = GameRecord.from_json(json.loads(text))
    assert again == record
    assert again.to_json() == record.to_json()


def test_from_json_refuses_another_format() -> None:
    record, _ = play_record(3, turns=1)
    data = record.to_json()
    data["format"] = "something/else"
    with pytest.raises(ValueError):
        GameRecord.from_json(data)


def test_replay_rebuilds_every_position() -> None:
    seed = seed_from_number(9)
    stream = DiceStream(seed)
    rng = random.Random(9)
    state = new_game(stream)
    positions = [state]
    moves: list[RecordedMove] = []
    while not state.game_over:
        due = state.due()
        chosen = {s: random_chooser(state, s, k, rng) for s, k in due.items()}
        turn = state.turn
        state, events = apply_turn(state, chosen, stream)
        moves += [record_move(turn, s, due[s], m, events) for s, m in chosen.items()]
        positions.append(state)
    assert replay(POSTAL_RULES, stream, moves) == state
    for t, position in enumerate(positions, start=1):
        assert replay(POSTAL_RULES, stream, moves, upto_turn=t) == position


def test_the_schema_documents_the_stream() -> None:
    """The construction the schema describes gives the dice of the hand labels."""
    schema = json.loads(SCHEMA_PATH.read_text())
    assert "HMAC-SHA256" in schema["description"]
    assert "hand/k/s" in schema["description"] and "reroll/k/s/n" in schema["description"]
    seed = seed_from_number(4)
    digest = hmac.new(seed, b"hand/1/1/0", hashlib.sha256).digest()
    faces = [b % 6 + 1 for b in digest if b < 252][:5]
    state = new_game(DiceStream(seed))
    assert [d.face for d in state.minigame(1).cup(1).hidden] == faces
    assert commitment(seed) == hashlib.sha256(seed).hexdigest()


def test_verify_refuses_a_second_move_of_a_seat_in_a_turn() -> None:
    record, _ = play_record(7)
    first = record.moves[0]
    record.moves.insert(0, RecordedMove(first.turn, first.seat, first.minigame,
                                        BidMove(Bid(25, 5)), first.by))
    assert any("more than one move" in p for p in verify(record))


def test_verify_refuses_a_reroll_without_an_expose() -> None:
    record, _ = play_record(7)
    i = next(i for i, m in enumerate(record.moves)
             if isinstance(m.move, BidMove) and not m.move.expose)
    m = record.moves[i]
    record.moves[i] = RecordedMove(m.turn, m.seat, m.minigame, m.move, m.by, (2, 3))
    assert any("re-roll" in p for p in verify(record))


def test_verify_names_each_kind_of_tampering() -> None:
    record, _ = play_record(8)
    assert verify(record) == []
    bad = copy.deepcopy(record)
    bad.seed = seed_from_number(9).hex()
    assert "the seed does not match the commitment" in verify(bad)
    bad = copy.deepcopy(record)
    bad.seats = bad.seats[1:] + bad.seats[:1]
    assert "the seat draw does not follow from the seed" in verify(bad)
    bad = copy.deepcopy(record)
    assert bad.result is not None
    bad.result["virtual_dice"]["1"] += 1
    assert "the recorded result does not match a recount" in verify(bad)
    bad = copy.deepcopy(record)
    bad.moves = bad.moves[:-1]
    assert verify(bad) != []
