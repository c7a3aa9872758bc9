"""A game kind defined only here, as python-chess defines a variant (its KingOfTheHill):
sudden-death Bluff, classic Bluff that ends at the first challenge.

Registered with ``pbem.kinds.register`` it plays a whole game over the real mail stack
(Dovecot IMAP in, SMTP out), with reports from the generic template (it has none of its
own), an export that `pbem verify`'s check passes, and the web pages (the game, a seat's
private page with its orders, the replay), with no change to pbem outside pbem/kinds/ and
templates/.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sqlmodel import Session

from pbem.games import find_game, seated
from pbem.kinds import JSON, KINDS, JSONMap, Viewer, register
from pbem.kinds.classic import ClassicKind
from pbem.kinds.verify import check_record
from pbem.links import key_generation, private_link
from pbem.robot_client import client_order_lines
from pbem.rules.classic import ClassicState
from pbem.services.export import export_json
from testkit.e2e import SCHEMA, Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3"]
GAME = "sudden-1"
SECRET = "toy-web-secret"


class SuddenDeath(ClassicKind):
    """Classic Bluff to the first challenge: whoever has lost dice in it has lost."""

    name = "sudden"
    title = "sudden-death Bluff"
    report_template = "generic_report"

    def describe_rules(self, rules: JSONMap) -> str:
        return "sudden-death " + super().describe_rules(rules)

    def over(self, state: ClassicState) -> bool:
        return bool(state.finished) or state.game_over

    def standings(self, state: ClassicState) -> list[dict[str, int]]:
        left = {s: state.hand(s).value for s in state.seats}
        return sorted(({"rank": 1 + sum(v > left[s] for v in left.values()), "seat": s,
                        "score": left[s]} for s in state.seats),
                      key=lambda row: (row["rank"], row["seat"]))

    def view(self, state: ClassicState, seat: int | None) -> JSON:
        return {**super().view(state, seat), "game_over": self.over(state)}

    def web_tables(self, state: ClassicState, viewer: Viewer) -> list[JSON]:
        tables = super().web_tables(state, viewer)   # not the next round's fresh dice
        return [t for t in tables if t["status"] == "ended"] if self.over(state) else tables


SUDDEN = SuddenDeath()


@pytest.fixture
def sudden() -> Iterator[SuddenDeath]:
    register(SUDDEN)
    yield SUDDEN
    del KINDS[SUDDEN.name]   # the other tests see the three kinds of pbem only


def check_view(user: str, msg: Any, view: Mapping[str, Any]) -> None:
    assert view["format"] == "pbem.sudden.view/1"
    assert "BLUFF BY MAIL -- game sudden-1" in text_of(msg)   # the generic report


def web_client(table: Table) -> Any:
    from starlette.testclient import TestClient

    from pbem.web import create_app
    settings = table.server.settings
    return TestClient(create_app(dataclasses.replace(
        settings, web=dataclasses.replace(settings.web, secret=SECRET))))


def private_path(table: Table, seat: int) -> str:
    with Session(table.server.engine) as session:
        game = find_game(session, GAME)
        player = seated(session, game)[seat]
        assert game.id is not None and player.id is not None
        url = private_link("http://x", SECRET, 30, game_id=game.id, seat=seat,
                           player_id=player.id,
                           generation=key_generation(player.key_hash, player.key),
                           now=datetime.now(UTC))
    assert url is not None
    return url.removeprefix("http://x")


def test_a_name_belongs_to_one_kind() -> None:
    classic = KINDS["classic"]
    with pytest.raises(ValueError, match="'classic' exists already"):
        register(ClassicKind())
    assert register(classic) is classic and KINDS["classic"] is classic   # again: no change


def test_registering_puts_the_kind_in_the_table(sudden: SuddenDeath) -> None:
    assert KINDS["sudden"] is sudden and sudden.view_format == "pbem.sudden.view/1"


def test_a_toy_kind_plays_by_mail_and_shows_in_reports_export_and_web(
        sudden: SuddenDeath, mailstack: Any, tmp_path: Path) -> None:
    with Table(mailstack, tmp_path, PLAYERS, check=check_view) as table:
        table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED 4 RULES sudden DICE 2"))
        table.server.tick()
        (started,) = table.referee.new_mail()
        said = " ".join(text_of(started).split())
        assert f"game {GAME}" in said and "sudden-death" in said and "started" in said, said
        seat_of = table.first_reports_in()

        # a seat's private page offers its orders as mails, from the kind's moves
        with web_client(table) as client:
            to_move = table.latest["p1"][1]["to_move"]
            mine = client.get("/api" + private_path(table, to_move)).json()["you"]
            assert mine["orders"] and mine["orders"][0]["lines"][0].startswith("BID ")
            assert "GAME%20sudden-1" in mine["orders"][0]["mailto"]

        rng = random.Random(7)
        for _, views in table.turns(limit=60):
            (mover,) = {v["to_move"] for v in views.values()}
            for user, (msg, view) in sorted(table.latest.items()):
                lines = client_order_lines(view, rng)   # the robot player finds the kind by format
                assert bool(lines) == (seat_of[user] == mover)
                if lines:
                    table.reply(user, lines, msg)
        table.check_the_mail(refusals=0)

        # one challenge ended it: its losers rank below the others
        final = table.views()["p1"]
        assert final["last_round"] is not None and final["last_round"]["round"] == 1
        losers = {row["seat"] for row in final["last_round"]["losses"] if row["lost"] > 0}
        ranks = {s["seat"]: s["rank"] for s in final["standings"]}
        assert losers and all(ranks[s] > 1 for s in losers)
        assert "THE GAME IS OVER" in text_of(table.latest["p2"][0])

        # the export: the generic record, by the kind, and it verifies
        with Session(table.server.engine) as session:
            record = export_json(session, find_game(session, GAME))
        schema = json.loads(SCHEMA.read_text())   # it names pbem's kinds; the shape is all
        schema["properties"]["kind"]["enum"].append(sudden.name)
        jsonschema.validate(record, schema)
        assert record["kind"] == "sudden" and len(record["moves"]) == table.turn - 1
        assert [{k: s[k] for k in ("rank", "seat", "score")} for s in final["standings"]] == \
            record["result"]["standings"]
        verdict = check_record(record)
        assert verdict.ok and "(sudden-death Bluff)" in verdict.lines[0], verdict.lines

        # the web pages: the game, its replay, its record
        with web_client(table) as client:
            page = client.get(f"/api/games/{GAME}").json()
            assert (page["kind"], page["kind_title"], page["status"]) == (
                "sudden", "sudden-death Bluff", "over")
            assert page["tables"] and all(t["status"] == "ended" for t in page["tables"])
            assert page["verification"]["ok"] and page["standings"][0]["rank"] == 1
            html = client.get(f"/games/{GAME}")
            assert html.status_code == 200 and "sudden-death Bluff" in html.text
            replay = client.get(f"/api/games/{GAME}/replay/1").json()
            assert replay["kind"] == "sudden" and replay["moves"]
            assert client.get(f"/games/{GAME}/replay/{table.turn - 1}").status_code == 200
            assert client.get(f"/games/{GAME}/record.json").json() == record
