"""pbem.record/2: the records say what the seed dealt with each move, which die an
expose showed, the rules as played, and dice held apart from their value; `pbem verify`
still reads pbem.record/1 (records written by the earlier code, kept in tests/records/)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pbem.kinds.classic import CLASSIC
from pbem.kinds.generic_record import FORMAT
from pbem.kinds.verify import score_words, verify_generic
from pbem.rules.bid_moves import BidMove
from pbem.rules.classic import Hand
from pbem.rules.cupofbluff import roll_label
from pbem.rules.dice import STAR, DiceStream
from pbem.rules.ladder import Bid
from pbem.rules.ruleset import RuleSet
from pbem.services.export import schema
from testkit.reports import Played, play
from tests.rules.test_classic_rules import position

ROOT = Path(__file__).parents[2]
SCHEMA = schema("game-record-generic.schema.json")
OLD = sorted((Path(__file__).parents[1] / "records").glob("*.record1.json"))


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Played]:
    tmp = tmp_path_factory.mktemp("records2")
    return {"cup": play(tmp, "cup", "", 4, 31),
            "anniversary": play(tmp, "classic", "anniversary DICE 3 EXPOSE on", 4, 30),
            "czech-six": play(tmp, "classic", "czech", 6, 33)}


def test_the_records_are_version_2_and_follow_the_schema(games: dict[str, Played]) -> None:
    for name, played in games.items():
        assert played.record["format"] == FORMAT == "pbem.record/2", name
        jsonschema.validate(played.record, SCHEMA)
        assert verify_generic(played.record) == [], name


def test_every_bluffer_roll_is_recorded_with_the_move_it_belongs_to(
        games: dict[str, Played]) -> None:
    record = games["cup"].record
    stream = DiceStream(bytes.fromhex(record["seed"]))
    acts = [m for m in record["moves"] if m["move"]["move"] in ("announce", "steal", "doublet")]
    assert acts and len(acts) == len({m["turn"] for m in acts})
    for number, m in enumerate(acts, start=1):   # Bluffer turn n rolls from its own label
        assert m["dealt"] == list(stream.dice(roll_label(number), 3)), m
    others = [m for m in record["moves"] if m not in acts]
    assert others and not any("dealt" in m for m in others)


def test_classic_records_spell_the_star_as_the_moves_do(games: dict[str, Played]) -> None:
    dealt = [f for m in games["anniversary"].record["moves"] for f in m.get("dealt", [])]
    assert dealt and 6 not in dealt
    assert "*" in json.dumps(dealt) or all(isinstance(f, int) and f <= 5 for f in dealt)
    faces = {json.dumps(f) for m in games["anniversary"].record["moves"]
             for f in m.get("dealt", []) + m["move"].get("expose", [])}
    assert faces <= {"1", "2", "3", "4", "5", '"*"'}


def test_an_expose_records_which_dice_it_showed(games: dict[str, Played]) -> None:
    exposes = [m for m in games["anniversary"].record["moves"] if m["move"].get("expose")]
    assert exposes
    for m in exposes:
        assert [d["face"] for d in m["shown"]] == m["move"]["expose"]
        assert len(m["dealt"]) >= 1
    # the orange die, shown because no plain die shows that face
    state = position(RuleSet(super_die=True, dice_per_player=3), [[2, 4, 5], [1, 1, 3]],
                     supers=[1])
    shown = CLASSIC.apply(state, {1: BidMove(Bid(2, 5), (5,))}, DiceStream(b"\x01" * 32))
    assert shown.record[1]["shown"] == [{"face": 5, "orange": True}]
    plain = position(RuleSet(super_die=True, dice_per_player=3), [[5, 4, 5], [1, 1, 3]],
                     supers=[1])
    shown = CLASSIC.apply(plain, {1: BidMove(Bid(2, 5), (5,))}, DiceStream(b"\x01" * 32))
    assert shown.record[1]["shown"] == [{"face": 5, "orange": False}]
    assert all(f in (1, 2, 3, 4, 5, "*") for f in shown.record[1]["dealt"])


def test_a_tampered_expose_or_roll_is_caught(games: dict[str, Played]) -> None:
    record = copy.deepcopy(games["anniversary"].record)
    move = next(m for m in record["moves"] if m["move"].get("expose"))
    move["shown"][0]["orange"] = not move["shown"][0]["orange"]
    assert any("showed" in p for p in verify_generic(record))
    record = copy.deepcopy(games["cup"].record)
    move = next(m for m in record["moves"] if "dealt" in m)
    del move["dealt"]
    assert any("do not follow from the seed" in p for p in verify_generic(record))


def test_dice_held_and_their_value_are_apart(games: dict[str, Played]) -> None:
    record = games["anniversary"].record
    final = next(m for m in games["anniversary"].mails
                 if m.seat == 1 and "final report" in m.subject)
    players = {p["seat"]: p for p in final.view["players"]}
    for s in record["result"]["standings"]:
        p = players[s["seat"]]
        assert s["dice"] == p["dice"] and s["score"] == p["value"]
        assert p["value"] == p["dice"] + (1 if p["super"] else 0)
    assert "Worth" in final.text
    assert score_words("classic", {"score": 2, "dice": 1}) == "1 die left (worth 2)"
    assert score_words("classic", {"score": 3}) == "3 dice left"          # pbem.record/1
    assert Hand(1, True).count == 2 and Hand(1, True).value == 3


def test_a_six_player_czech_game_says_one_thing_in_report_and_record(
        games: dict[str, Played]) -> None:
    played = games["czech-six"]
    rules = played.record["rules"]
    assert rules["dice_per_player"] == 5 and rules["dice_if_six_players"] is None
    assert rules["exact_rule"] == "nobody"
    for m in played.mails:
        assert m.view["rules"] == rules, m.subject
    first = next(m for m in played.mails if m.turn == 1 and m.seat == 1)
    assert all(p["dice"] == 5 for p in first.view["players"])
    assert "5 dice each" in first.text


@pytest.mark.parametrize("path", OLD, ids=[p.name for p in OLD])
def test_version_1_records_still_verify(path: Path) -> None:
    record = json.loads(path.read_text())
    assert record["format"] == "pbem.record/1"
    jsonschema.validate(record, SCHEMA)
    assert verify_generic(record) == []
    done = subprocess.run([sys.executable, "-m", "pbem", "verify", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.startswith("OK:"), done.stdout + done.stderr
    bad = copy.deepcopy(record)
    move = next(m for m in bad["moves"] if m.get("dealt"))
    move["dealt"] = [99] * len(move["dealt"])
    assert any("do not follow from the seed" in p for p in verify_generic(bad))


def test_version_1_classic_kept_the_star_as_6() -> None:
    record = json.loads((Path(__file__).parents[1] / "records" /
                         "classic-anniversary.record1.json").read_text())
    assert 6 in [f for m in record["moves"] for f in m.get("dealt", [])]
    assert STAR == 6


def test_a_record_whose_rules_are_not_as_played_is_refused(games: dict[str, Played]) -> None:
    """In pbem.record/2 the rules are as played: classic's six-player rule is resolved
    (null) once the game has started. A record that still carries it was written by hand,
    even where its dice come out the same."""
    record = copy.deepcopy(games["anniversary"].record)
    assert record["rules"]["dice_if_six_players"] is None
    record["rules"]["dice_if_six_players"] = 5
    assert verify_generic(record) == [
        "the rules are not as played, as a pbem.record/2 record keeps them: "
        "dice_if_six_players is 5 where the game played null"]
    record["rules"]["dice_if_six_players"] = None
    assert verify_generic(record) == []
