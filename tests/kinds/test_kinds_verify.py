"""The generic record (pbem.record/2) of classic and Cup of Bluff games: export, schema,
`pbem verify`, and what the verifier catches; the robots that play from report.json."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pbem.demo.robot_client import client_order_lines
from pbem.games.lifecycle import add_player, create_game, start_game
from pbem.kinds import kind_named
from pbem.kinds.classic import CLASSIC, client_seat_view
from pbem.kinds.cup import CUP, client_state
from pbem.kinds.verify import check_record, recount, verify_generic
from pbem.mail.text import BodyLine
from pbem.orders.commands import PLAYER_COMMANDS
from pbem.orders.parsing import parse_text
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.rules.postal_record import GameRecord, verify
from pbem.rules.robot import choose_move
from pbem.services.export import export_json, schema
from pbem.services.turns import resolve_turn
from pbem.store.db import open_database
from pbem.store.work import Work
from pbem.text.i18n import translator
from pbem.text.wording import say

SCHEMA = schema("game-record-generic.schema.json")
POSTAL_SCHEMA = schema("game-record.schema.json")
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def played_record(tmp_path: Path, kind: str, words: list[str], players: int,
                  seed: int, policy: str | None = None) -> dict[str, Any]:
    """A whole game on SQLite, every move played at the deadline (by the robot, or
    by the game's missing-order policy)."""
    engine = open_database(f"sqlite:///{tmp_path / f'{kind}-{seed}.db'}")
    with Work(engine) as session:
        game = create_game(session, f"{kind}-{seed}", seed=seed_from_number(seed), now=NOW,
                           kind=kind, rules_json=kind_named(kind).parse_options(words))
        if policy is not None:
            game.options_json = json.dumps({"policy": policy})
        for i in range(players):
            add_player(session, game, f"p{i + 1}@example.org", f"P{i + 1}")
        start_game(session, game, NOW)
        for _ in range(2000):
            if game.status == "over":
                break
            resolve_turn(session, game, NOW)
        assert game.status == "over"
        session.commit()
        return export_json(session, game)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("records")
    return {"classic": played_record(tmp, "classic", ["DICE", "2"], 4, 7),
            "czech": played_record(tmp, "classic", ["czech", "DICE", "2"], 3, 8),
            "anniversary": played_record(tmp, "classic", ["anniversary", "DICE", "3"], 3, 9),
            "cup": played_record(tmp, "cup", [], 4, 11),
            "raise": played_record(tmp, "classic", ["DICE", "2"], 3, 12, policy="raise"),
            "postal": played_record(tmp, "postal", [], 5, 13, policy="challenge")}


@pytest.mark.parametrize("name", ["classic", "czech", "anniversary", "cup", "raise"])
def test_exports_verify_and_follow_the_schema(records: dict[str, Any], name: str) -> None:
    record = records[name]
    jsonschema.validate(record, SCHEMA)
    assert {m["by"] for m in record["moves"]} == ({"policy"} if name == "raise" else {"robot"})
    assert record["format"] == "pbem.record/2" and record["seed"] is not None
    assert verify_generic(record) == []
    assert recount(record) == record["result"]


def test_postal_record_with_policy_moves_follows_its_schema(records: dict[str, Any]) -> None:
    """A move played by the game's missing-order policy is recorded as by "policy"."""
    record = records["postal"]
    assert record["format"] == "pbem.bluff.record/1"
    assert "policy" in {m["by"] for m in record["moves"]}
    jsonschema.validate(record, POSTAL_SCHEMA)
    assert verify(GameRecord.from_json(record)) == []


def test_czech_rules_json_keeps_its_six_player_key(records: dict[str, Any]) -> None:
    assert "dice_if_six_players" in records["classic"]["rules"]
    assert records["czech"]["rules"]["dice_if_six_players"] is None   # DICE 2 replaced it
    words = CLASSIC.parse_options(["czech"])
    assert words["dice_if_six_players"] == 5


def test_schema_refuses_a_stray_key(records: dict[str, Any]) -> None:
    bad = copy.deepcopy(records["cup"])
    bad["moves"][0]["move"]["extra"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
    bad = copy.deepcopy(records["classic"])
    bad["rules"]["dice_per_player"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


def tampered(record: dict[str, Any], change) -> list[str]:  # type: ignore[no-untyped-def]
    bad = copy.deepcopy(record)
    change(bad)
    return verify_generic(bad)


def _other_seed(r: dict[str, Any]) -> None:
    r["seed"] = seed_from_number(1).hex()


def _swap_seats(r: dict[str, Any]) -> None:
    r["players"][0]["seat"], r["players"][1]["seat"] = (r["players"][1]["seat"],
                                                        r["players"][0]["seat"])


def _better_result(r: dict[str, Any]) -> None:
    r["result"]["standings"][-1]["score"] += 1


def _drop_last_turn(r: dict[str, Any]) -> None:
    last = r["moves"][-1]["turn"]
    r["moves"] = [m for m in r["moves"] if m["turn"] != last]


def _skip_a_turn(r: dict[str, Any]) -> None:
    for m in r["moves"]:
        if m["turn"] >= 3:
            m["turn"] += 1


def _wrong_seat(r: dict[str, Any]) -> None:
    m = r["moves"][1]
    m["seat"] = m["seat"] % 4 + 1


def _more_rules_dice(r: dict[str, Any]) -> None:
    r["rules"]["dice_per_player"] = 3


@pytest.mark.parametrize("change, message", [
    (_other_seed, "the seed does not match the commitment"),
    (lambda r: r.update(seed=None), "the seed is not revealed yet"),
    (lambda r: r.update(seed="zz"), "the seed is not valid"),
    (_swap_seats, "the seat draw does not follow from the seed"),
    (_better_result, "the recorded result does not match a recount"),
    (_drop_last_turn, "the game is not over"),
    (_skip_a_turn, "the record jumps from turn 3 to turn 4"),
    (_wrong_seat, "was due but has no move"),
    (lambda r: r.update(kind="chess"), "unknown game kind 'chess'"),
    (lambda r: r.update(format="pbem.bluff.record/1"), "not a pbem.record/2 or pbem.record/1 record"),
])
def test_the_verifier_catches(records: dict[str, Any], change, message: str) -> None:  # type: ignore[no-untyped-def]
    for name in ("classic", "cup"):
        problems = tampered(records[name], change)
        assert any(message in p for p in problems), (name, problems)


def test_an_illegal_move_is_caught(records: dict[str, Any]) -> None:
    def classic_opening_challenge(r: dict[str, Any]) -> None:
        r["moves"][0]["move"] = {"challenge": True}

    problems = tampered(records["classic"], classic_opening_challenge)
    assert problems and "turn 1: seat 1" in problems[-1] and "must BID" in problems[-1]

    def cup_announce_to_self(r: dict[str, Any]) -> None:
        r["moves"][0]["move"] = {"move": "announce", "total": 10, "guesser": 1}

    problems = tampered(records["cup"], cup_announce_to_self)
    assert problems and "the Guesser must be another player" in problems[-1]


def test_a_changed_rule_breaks_the_replay(records: dict[str, Any]) -> None:
    assert tampered(records["classic"], _more_rules_dice)


def test_pbem_verify_command(records: dict[str, Any], tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(records["cup"]))
    done = subprocess.run([sys.executable, "-m", "pbem.cli", "verify", str(good)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("OK: game cup-11 (Cup of Bluff)") and "points" in done.stdout
    copy_ = copy.deepcopy(records["classic"])
    _better_result(copy_)
    bad.write_text(json.dumps(copy_))
    done = subprocess.run([sys.executable, "-m", "pbem.cli", "verify", str(bad)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "FAIL: the recorded result" in done.stdout


# --- robots at the other end of the mail -------------------------------------


def _view(kind: Any, state: Any, seat: int, fmt: str) -> dict[str, Any]:
    """The report.json as a player gets it (the server adds format and you; through JSON)."""
    return json.loads(json.dumps({"format": fmt, "you": seat, **kind.view(state, seat)}))


def _parse(lines: list[str], kind: Any) -> Any:
    parsed = parse_text([BodyLine(i, t) for i, t in enumerate(lines, 1)],
                        kind.commands + tuple(c for c in PLAYER_COMMANDS
                                              if c.name not in ("BID", "CHALLENGE", "EXPOSE")))
    assert not parsed.problems, lines
    return parsed.orders


@pytest.mark.parametrize("words, players, seed", [
    (["DICE", "3"], 4, 1), (["anniversary"], 3, 2), (["german", "STARS", "off"], 5, 3),
    (["czech"], 6, 4)])
def test_classic_client_sees_what_the_seat_sees(words: list[str], players: int,
                                                seed: int) -> None:
    """From report.json alone the client rebuilds the seat's knowledge: its robot picks
    the very move the kind's robot would, and the order lines it writes are taken."""
    stream = DiceStream(seed_from_number(seed))
    state = CLASSIC.start(CLASSIC.parse_options(words), stream, players)
    rng = random.Random(seed)
    for _ in range(300):
        if CLASSIC.over(state):
            break
        (seat,) = CLASSIC.due(state)
        view = _view(CLASSIC, state, seat, "pbem.classic.view/1")
        mine = client_seat_view(view)
        theirs = state.seat_view(seat)
        assert sorted(d.face for d in mine.own.dice) == sorted(d.face for d in theirs.own.dice)
        assert (mine.unknown_plain, mine.unknown_super, mine.current, mine.rules) == (
            theirs.unknown_plain, theirs.unknown_super, theirs.current, theirs.rules)
        assert mine.ladder.bids == theirs.ladder.bids
        r = rng.random()
        move = choose_move(theirs, random.Random(r))
        lines = client_order_lines(view, random.Random(r))
        taken = CLASSIC.take_order(state, seat, _parse(lines, CLASSIC))
        assert taken.move == move
        for other in state.seats_in:
            if other != seat:
                assert client_order_lines(_view(CLASSIC, state, other,
                                                "pbem.classic.view/1"), rng) == []
        state = CLASSIC.apply(state, {seat: move}, stream).state
    assert CLASSIC.over(state)


@pytest.mark.parametrize("players, seed", [(3, 1), (4, 2), (5, 3)])
def test_cup_client_plays_legal_moves_from_its_view(players: int, seed: int) -> None:
    stream = DiceStream(seed_from_number(seed))
    state = CUP.start(CUP.parse_options([]), stream, players)
    rng = random.Random(seed)
    kinds_of_move = set()
    for _ in range(2000):
        if CUP.over(state):
            break
        (seat,) = CUP.due(state)
        view = _view(CUP, state, seat, "pbem.cup.view/1")
        seen = client_state(view)
        assert (seen.centre, seen.holdings, seen.phase, seen.claim) == (
            state.centre, state.holdings, state.phase, state.claim)
        assert seen.roll == (state.roll if seat == state.bluffer else ())
        lines = client_order_lines(view, rng)
        taken = CUP.take_order(state, seat, _parse(lines, CUP))
        kinds_of_move.add(type(taken.move).__name__)
        for other in state.seats:
            if other != seat:
                assert client_order_lines(_view(CUP, state, other, "pbem.cup.view/1"),
                                          rng) == []
        state = CUP.apply(state, {seat: taken.move}, stream).state
    assert CUP.over(state)
    assert {"Announce", "Answer"} <= kinds_of_move


def test_client_refuses_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="cannot play"):
        client_order_lines({"format": "pbem.chess.view/1"}, random.Random(1))


def test_a_replaced_player_shares_the_entrant_and_seat(records: dict[str, Any]) -> None:
    """export_json lists every player row: one REPLACEd keeps its entrant and seat."""
    record = copy.deepcopy(records["cup"])
    record["players"].append({**record["players"][1], "name": "Newcomer"})
    jsonschema.validate(record, SCHEMA)
    assert verify_generic(record) == []
    record["players"][-1]["seat"] = record["players"][0]["seat"]
    assert "entrant 2 is listed with two seats" in verify_generic(record)


def test_dealt_dice_are_in_the_record_and_checked_against_the_seed(
        records: dict[str, Any]) -> None:
    dealt = [m for m in records["cup"]["moves"] if m.get("dealt")]
    assert dealt, "the Bluffer's rolls are recorded"
    bad = copy.deepcopy(records["cup"])
    move = next(m for m in bad["moves"] if m.get("dealt"))
    move["dealt"] = list(reversed(move["dealt"])) if len(set(map(str, move["dealt"]))) > 1 \
        else [99]
    problems = verify_generic(bad)
    assert any("do not follow from the seed" in p for p in problems), problems


def test_a_postal_record_s_ok_line_says_its_standings_in_words(
        records: dict[str, Any]) -> None:
    """The postal OK line names each place as the other kinds' lines do ("1. seat 2 (5
    virtual dice)"), in the reader's language: it printed a Python list before."""
    verdict = check_record(records["postal"])
    assert verdict.ok
    (line,) = verdict.lines
    standings = records["postal"]["result"]["standings"]
    first = min(standings, key=lambda s: s["rank"])
    assert f"1. seat {first['seat']} ({first['virtual_dice']} virtual di" in str(line)
    assert "{" not in str(line) and "'rank'" not in str(line)
    german = say(line.message, translator("de"))   # a Told: its Message said in German
    assert f"1. Spieler {first['seat']} (" in german and "seat" not in german, german
