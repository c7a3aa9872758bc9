"""The web pages (pbem.web) on real games played through the referee: what each page and
its JSON twin show (checked against the database and the JSON Schema), what they never
show, caching, private links, verification, and every kind of bad request.

The app runs in-process here (Starlette's test client, the real ASGI app on the real
SQLite file); tests/web/test_web_browser.py drives `pbem web` in Chromium.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from pbem.config import ConfigError, Settings, WebSettings, load_settings
from pbem.games.records import find_game, players_of, read_players
from pbem.kinds.verify import check_record
from pbem.rules.classic import hand_label as classic_hand_label
from pbem.rules.dice import DiceStream, face_json
from pbem.services.export import schema
from pbem.services.replay import replay_steps
from pbem.store.models import Game, Player
from pbem.store.rows import PlayerRow
from pbem.store.work import Work
from pbem.web import create_app
from pbem.web.database import DatabaseNotReady, open_read_only
from pbem.web.page_data import GamePage, IndexPage, PrivatePage, ReplayPage
from pbem.web.pages import game_page, index_page, private_page, replay_page
from testkit.desk import PLAYERS, Clock, admin, make_server, order, outbox
from testkit.shapes import shape_problems
from testkit.web import (
    NEWBIE,
    SECRET,
    Site,
    days_ago,
    email_of_seat,
    new_game,
    players_named,
    seat_holder,
    state,
    stopped_clock,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

SCHEMA = schema("web-api.schema.json")   # its kinds: the registered ones


def valid(data: Any, name: str) -> list[str]:
    """The schema's complaints about data as the named page ([] when it is valid)."""
    schema = {"$ref": f"#/$defs/{name}", "$defs": SCHEMA["$defs"]}
    return [f"{list(e.path)}: {e.message[:160]}"
            for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]


def settings_of(site: Site, **web: Any) -> Settings:
    settings = load_settings(site.config, env={"PBEM_WEB_SECRET": SECRET})
    return dataclasses.replace(settings, web=dataclasses.replace(settings.web, **web))


@pytest.fixture(scope="module")
def client(site: Site) -> Iterator[TestClient]:
    with TestClient(create_app(settings_of(site), clock=stopped_clock())) as c:
        yield c


def keys_of(site: Site) -> list[str]:
    with Session(site.server.engine) as session:
        return [p.key for p in session.exec(select(Player))]


def game_json(client: TestClient, name: str) -> dict[str, Any]:
    answer = client.get(f"/api/games/{name}")
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


# --- the index -----------------------------------------------------------------------------------

def test_the_index_lists_running_open_and_finished_games(client: TestClient) -> None:
    data = client.get("/api/games").json()
    assert valid(data, "index") == []
    sections = {s["name"]: [g["game"] for g in s["games"]] for s in data["sections"]}
    assert sections == {"running": ["postal-1"], "open": ["open-1"],
                        "finished": ["cup-1", "classic-1"]}   # the latest first
    rows = {g["game"]: g for s in data["sections"] for g in s["games"]}
    assert rows["postal-1"]["players"] == 5 and rows["postal-1"]["turn"] == 3
    assert rows["postal-1"]["deadline"] == "2026-12-03T12:00:00Z"
    assert rows["open-1"]["join"] == "JOIN open-1 <your name>" and rows["open-1"]["players"] == 1
    assert rows["classic-1"]["kind"] == "classic" and rows["cup-1"]["kind_title"] == "Cup of Bluff"
    assert data["server_address"] == "bluff@example.org"
    html = client.get("/").text
    assert "JOIN open-1 &lt;your name&gt;" in html and "bluff@example.org" in html
    assert all(f'href="/games/{g}"' in html for g in rows)


def test_the_index_is_paged(site: Site) -> None:
    with TestClient(create_app(settings_of(site, page_size=1), clock=stopped_clock())) as c:
        first = c.get("/api/games?section=finished&page=1").json()
        second = c.get("/api/games?section=finished&page=2").json()
        (s1,), (s2,) = first["sections"], second["sections"]
        assert s1["total"] == s2["total"] == 2 and s1["pages"] == 2
        assert {s1["games"][0]["game"], s2["games"][0]["game"]} == {"classic-1", "cup-1"}
        assert s1["next"] == "/list/finished?page=2" and s2["prev"] == "/list/finished?page=1"
        assert 'href="/list/finished?page=2"' in c.get("/").text
        assert "classic-1" in c.get("/list/finished?page=2").text + c.get("/list/finished").text
        assert c.get("/list/finished?page=3").status_code == 404
        for bad in ("0", "abc", "-1", "9" * 30):
            answer = c.get(f"/list/finished?page={bad}")
            assert answer.status_code == 400 and "page must be a whole number" in answer.text
        assert c.get("/list/everything").status_code == 404


# --- a game's public page ------------------------------------------------------------------------

def test_the_game_page_shows_the_bids_and_no_hidden_die(site: Site, client: TestClient) -> None:
    data = game_json(client, "postal-1")
    assert valid(data, "game") == []
    postal = state(site.server, "postal-1")
    for table, minigame in zip(data["tables"], postal.minigames, strict=True):
        assert [(b["seat"], b["turn"], b["quantity"], b["face"]) for b in table["bids"]] == [
            (b.seat, b.turn, b.bid.quantity, face_json(b.bid.face)) for b in minigame.bids]
        for cup in table["cups"]:
            assert cup["hidden"] is None and cup["hidden_super"] is None
            dice = minigame.cup(cup["seat"])
            assert cup["hidden_count"] == len(dice.hidden)
            assert cup["exposed"] == [face_json(d.face) for d in dice.exposed]
    # whose order is awaited, not what it is
    assert data["orders_in"] == [1] and data["awaited"] == [2, 3, 4, 5]
    page = client.get("/games/postal-1").text
    assert "Waiting for the order of" in page and "order in" in page
    cups = re.findall(r'<td class="cup" data-seat="(\d)">(.*?)</td>', page, re.DOTALL)
    assert len(cups) == 25   # five seats in five running mini-games: only blanks and exposed
    for _seat, cup in cups:
        assert 'class="die plain' not in cup and 'class="die hidden' in cup
    for secret in [find_seed(site, "postal-1"), *keys_of(site)]:
        assert secret not in page and secret not in json.dumps(data)
    said = players_named(site.server, "postal-1")[3] + " (player 3)"
    assert {"from": said, "text": "Good luck, everyone."} in [
        {"from": t["from"], "text": t["text"]} for t in data["talk"]]
    assert data["names"]["2"] == "Newbie"   # seat 2 was replaced


def find_seed(site: Site, name: str) -> str:
    with Session(site.server.engine) as session:
        return find_game(session, name).seed_hex


def test_a_finished_game_shows_standings_seed_and_its_verification(client: TestClient) -> None:
    for name, unit in (("classic-1", "Dice left"), ("cup-1", "Points")):
        data = game_json(client, name)
        assert valid(data, "game") == []
        assert data["standings"][0]["rank"] == 1 and data["seed"] is not None
        assert data["verification"]["ok"] is True
        assert data["verification"]["lines"][0].startswith(f"OK: game {name} (")
        assert data["links"]["replay"] == f"/games/{name}/replay/0"
        page = client.get(f"/games/{name}").text.replace("<wbr>", "")   # its break chances
        assert unit in page and data["seed"] in page and "The game is over" in page
        record = client.get(f"/games/{name}/record.json")
        assert record.headers["content-disposition"] == f'attachment; filename="{name}.json"'
        assert check_record(record.json()).ok
    classic = game_json(client, "classic-1")
    assert [t["title"] for t in classic["tables"]][-1] == "Round 1"
    assert all(t["challenge"]["cups"] for t in classic["tables"])   # every round's cups, lifted
    assert any(t["text"] == "I hold <b>three</b> stars.\nOr do I?" for t in classic["talk"])
    assert "I hold &lt;b&gt;three&lt;/b&gt; stars." in client.get("/games/classic-1").text


def test_a_game_open_for_sign_up_shows_the_join_line(client: TestClient) -> None:
    data = game_json(client, "open-1")
    assert valid(data, "game") == [] and data["join"] == "JOIN open-1 <your name>"
    assert data["players"] == [{"seat": None, "name": "Early", "due": False, "order_in": False,
                                "awaited": False}]
    assert data["tables"] == [] and data["seed"] is None
    assert "JOIN open-1 &lt;your name&gt;" in client.get("/games/open-1").text


def test_records_and_replays_wait_for_the_end_of_the_game(client: TestClient) -> None:
    for url in ("/games/postal-1/record.json", "/games/postal-1/replay/0",
                "/api/games/postal-1/replay/1", "/games/open-1/record.json"):
        answer = client.get(url)
        assert answer.status_code == 404 and "not over" in answer.text


# --- caching -------------------------------------------------------------------------------------

def test_etags_change_with_the_turn_the_orders_and_the_talk(site: Site, client: TestClient) -> None:
    first = client.get("/games/postal-1")
    etag = first.headers["etag"]
    assert etag.startswith('"postal-1-t3-') and first.headers["cache-control"] == \
        "public, max-age=60"
    again = client.get("/games/postal-1", headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert client.get("/api/games/postal-1").headers["etag"] != etag   # the JSON twin's own
    order(site.server, email_of_seat(site.server, "postal-1", 4), "SAY Hmm.", name="postal-1")
    talked = client.get("/games/postal-1", headers={"if-none-match": etag})
    assert talked.status_code == 200 and talked.headers["etag"] != etag and "Hmm." in talked.text
    finished = client.get("/games/classic-1")
    assert finished.headers["cache-control"] == "public, max-age=86400"
    assert client.get("/games/classic-1", headers={
        "if-none-match": f'W/{finished.headers["etag"]}'}).status_code == 304
    index = client.get("/")
    assert client.get("/", headers={"if-none-match": index.headers["etag"]}).status_code == 304



def test_a_running_game_s_etag_turns_with_the_minute(site: Site) -> None:
    """Its deadline reads "in 2 hours" or "(passed)": a copy from the minute before is
    stale. (Why the other tests stop the clock: a minute turning between two reads of a
    page gives it a new ETag, and a revalidation 200 where the test wants 304.)"""
    now = [datetime.now(UTC).replace(second=59, microsecond=900_000)]
    with TestClient(create_app(settings_of(site), clock=lambda: now[0])) as c:
        etag = c.get("/games/postal-1").headers["etag"]
        assert c.get("/games/postal-1", headers={"if-none-match": etag}).status_code == 304
        now[0] += timedelta(seconds=0.2)          # the next minute
        turned = c.get("/games/postal-1", headers={"if-none-match": etag})
        assert turned.status_code == 200 and turned.headers["etag"] != etag
        finished = c.get("/games/classic-1").headers["etag"]   # an ended game's stays
        now[0] += timedelta(minutes=5)
        assert c.get("/games/classic-1", headers={"if-none-match": finished}).status_code == 304

# --- a player's private page ---------------------------------------------------------------------

def test_a_private_link_shows_that_seat_its_dice_odds_key_and_orders(site: Site,
                                                                      client: TestClient) -> None:
    answer = client.get("/api" + site.link("postal-1", 4))
    assert answer.status_code == 200 and answer.headers["cache-control"] == "private, no-store"
    data = answer.json()
    assert valid(data, "private") == [] and valid(data, "game") != []
    postal = state(site.server, "postal-1")
    for table, minigame in zip(data["tables"], postal.minigames, strict=True):
        for cup in table["cups"]:
            if cup["seat"] == 4:
                assert cup["mine"] and cup["hidden"] == [face_json(d.face)
                                                         for d in minigame.cup(4).hidden]
            else:
                assert cup["hidden"] is None
    me = data["you"]
    holder = next(p for p in players_of_game(site, "postal-1") if p.seat == 4)
    assert me["key_line"] == f"KEY {holder.key}" and me["seat"] == 4
    assert me["due"].startswith(("bid or challenge in mini-game", "open mini-game"))
    due_table = data["tables"][postal.due()[4] - 1]
    assert due_table["odds"] is not None and 0 <= due_table["odds"]["holds"] <= 1
    assert me["orders"][0]["lines"] == ["CHALLENGE"]
    assert "mailto:bluff@example.org?subject=" in me["orders"][1]["mailto"]
    assert f"GAME%20postal-1%0D%0AKEY%20{holder.key}%0D%0ABID%20" in me["orders"][1]["mailto"]
    page = client.get(site.link("postal-1", 4)).text
    assert f"KEY {holder.key}" in page and "You are <strong>player 4" in page
    assert 'href="mailto:bluff@example.org?subject=' in page


def players_of_game(site: Site, name: str) -> list[PlayerRow]:
    with Work(site.server.engine) as session:
        return players_of(session, find_game(session, name))


def test_a_private_link_fails_for_another_seat_after_expiry_and_after_replacement(
        site: Site, client: TestClient) -> None:
    link = site.link("postal-1", 1)
    head, mac = link.rsplit(".", 1)
    game_id, seat, player_id, stamp = head.removeprefix("/p/").split(".")
    cases = {
        f"/p/{game_id}.2.{player_id}.{stamp}.{mac}": (403, "Not a valid link"),   # another seat
        f"/p/{game_id}.{seat}.{player_id}.{int(stamp) + 1}.{mac}": (403, "Not a valid link"),
        f"{head}.{'A' * 22}": (403, "Not a valid link"),                           # forged
        site.link("postal-1", 1, days=30, now=days_ago(31)): (410, "expired"),
        site.link("postal-1", 2, player=site.replaced): (410, "no longer works"),  # replaced
        "/p/not-a-token": (404, "Not a valid link"),
        "/p/" + "9" * 500: (404, "Not a valid link"),
    }
    for url, (status, words) in cases.items():
        for prefix in ("", "/api"):
            answer = client.get(prefix + url)
            assert answer.status_code == status, (url, answer.text)
            assert words in answer.text and "Traceback" not in answer.text
    assert valid(client.get("/api" + site.link("postal-1", 2, player=site.replaced)).json(),
                 "error") == []
    # the new player of seat 2 has a link of their own
    assert client.get(site.link("postal-1", 2)).status_code == 200
    assert NEWBIE not in client.get(site.link("postal-1", 2)).text   # no address is shown
    # without a secret the server has no private pages at all
    with TestClient(create_app(settings_of(site, secret=""), clock=stopped_clock())) as c:
        answer = c.get(link)
        assert answer.status_code == 404 and "Private pages are off" in answer.text


# --- the replay ----------------------------------------------------------------------------------

def test_the_replay_shows_every_die_from_the_seed(site: Site, client: TestClient) -> None:
    seed = bytes.fromhex(find_seed(site, "classic-1"))
    start = client.get("/api/games/classic-1/replay/0").json()
    assert valid(start, "replay") == [] and start["moves"] == [] and start["prev"] is None
    (round_1,) = start["tables"]
    for cup in round_1["cups"]:   # rolled from the seed, checked here without the app's code
        assert cup["hidden"] == [face_json(f) for f in
                                 DiceStream(seed).dice(classic_hand_label(1, cup["seat"]), 2)]
    last = start["last"]
    assert last == site.turns["classic-1"]
    end = client.get(f"/api/games/classic-1/replay/{last}").json()
    record = client.get("/games/classic-1/record.json").json()
    assert end["next"] is None and [
        {"rank": s["rank"], "seat": s["seat"], "score": s["score"]} for s in end["standings"]
    ] == [{"rank": s["rank"], "seat": s["seat"], "score": s["score"]}   # pbem.record/2 adds
          for s in record["result"]["standings"]]                      # the dice held
    step = client.get("/api/games/classic-1/replay/1").json()
    assert [m["seat"] for m in step["moves"]] == [1] and step["notes"]
    names = players_named(site.server, "classic-1")
    assert step["moves"][0]["name"] == names[1]
    for bad in ("/games/classic-1/replay/999", "/games/classic-1/replay/x",
                "/games/classic-1/replay/-1", "/games/nope/replay/0"):
        assert client.get(bad).status_code == 404
    cup = client.get("/api/games/cup-1/replay/1").json()
    assert valid(cup, "replay") == [] and cup["tables"][0]["roll"] is not None


def test_the_pages_data_has_the_shape_page_data_names(site: Site) -> None:
    """Every page's data as pbem.web.pages builds it, against its TypedDict
    (pbem.web.page_data): mypy checks the code against the names, this the data."""
    settings, now = settings_of(site), datetime.now(UTC)
    with Session(site.server.engine) as session:
        assert shape_problems(index_page(session, settings, now), IndexPage) == []
        for name in ("classic-1", "cup-1", "postal-1", "open-1"):
            game = find_game(session, name)
            assert shape_problems(game_page(session, game, settings, now), GamePage) == [], name
            seated = [p for p in read_players(session, game) if p.seat is not None and p.active]
            for player in seated[:2]:
                page = private_page(session, game, player, settings, now, now)
                assert shape_problems(page, PrivatePage) == [], name
            if game.status == "over":
                steps = replay_steps(session, game)
                names = {p.seat: p.name for p in seated if p.seat is not None}
                for step in (0, 1, len(steps) - 1):
                    page = replay_page(game, steps, step, names, None)
                    assert shape_problems(page, ReplayPage) == [], (name, step)


# --- verify a record -----------------------------------------------------------------------------

def test_verify_accepts_an_honest_record_and_rejects_a_tampered_one(client: TestClient) -> None:
    record = client.get("/games/cup-1/record.json").json()
    honest = client.post("/api/verify", content=json.dumps(record),
                         headers={"content-type": "application/json"}).json()
    assert valid(honest, "verify") == [] and honest["ok"] is True
    assert honest["lines"] == list(check_record(record).lines)
    tampered = json.loads(json.dumps(record))
    tampered["result"]["standings"][0]["score"] += 1
    answer = client.post("/verify", files={"record": ("cup-1.json", json.dumps(tampered),
                                                      "application/json")})
    assert answer.status_code == 200 and "does not check out" in answer.text
    assert "FAIL: the recorded result does not match a recount" in answer.text
    moved = json.loads(json.dumps(record))
    moved["moves"][0]["move"] = moved["moves"][1]["move"]
    verdict = client.post("/api/verify", files={"record": ("x.json", json.dumps(moved))}).json()
    assert verdict["ok"] is False and verdict["lines"][0].startswith("FAIL: turn 1")
    pasted = client.post("/verify", data={"text": json.dumps(record)})
    assert pasted.status_code == 200 and "The record checks out" in pasted.text
    postal = client.get("/games/classic-1/record.json").json()
    postal["seed"] = "00" * 32
    assert "FAIL: the seed does not match the commitment" in client.post(
        "/api/verify", content=json.dumps(postal)).json()["lines"]


@pytest.mark.parametrize("body, status, words", [
    (b'{"format": "pbem.record/1",\n "kind": }', 400, "not valid JSON: Expecting value at line 2"),
    (b"\xff\xfe{}", 400, "not UTF-8"),
    (b"[1, 2, 3]", 422, "not a game record"),
    (b"{}", 422, "not a game record"),
    (b'{"format": "pbem.record/1", "kind": "cup"}', 200, "FAIL: the seed is not revealed yet"),
    (b"[" * 100_000 + b"]" * 100_000, 400, "JSON"),
    (b"   ", 400, "Nothing to verify"),
])
def test_verify_says_clearly_what_is_wrong_with_an_upload(client: TestClient, body: bytes,
                                                          status: int, words: str) -> None:
    for url, files in (("/api/verify", None), ("/verify", {"record": ("r.json", body)})):
        answer = (client.post(url, files=files) if files
                  else client.post(url, content=body, headers={"content-type": "application/json"}))
        assert answer.status_code == status, answer.text[:300]
        assert words.lower() in answer.text.lower() and "Traceback" not in answer.text


def test_verify_refuses_a_huge_upload_before_reading_it(client: TestClient) -> None:
    huge = b" " * 400_000   # the site's limit is 300,000 bytes
    answer = client.post("/api/verify", content=huge, headers={"content-type": "application/json"})
    assert answer.status_code == 413 and "at most 300,000 bytes" in answer.json()["message"]

    def chunks() -> Iterator[bytes]:   # no Content-Length: counted while it arrives
        for _ in range(40):
            yield b" " * 10_000
    answer = client.post("/api/verify", content=chunks(),
                         headers={"content-type": "application/json"})
    assert answer.status_code == 413
    answer = client.post("/verify", files={"record": ("big.json", huge)})
    assert answer.status_code == 413 and "Too large" in answer.text
    answer = client.post("/api/verify", content=b"<xml/>", headers={"content-type": "text/xml"})
    assert answer.status_code == 415


# --- bad requests --------------------------------------------------------------------------------

@pytest.mark.parametrize("path, status", [
    ("/games/nope", 404), ("/api/games/nope", 404), ("/games/NOPE", 404),
    ("/games/%2e%2e%2f%2e%2e%2fpbem.toml", 404), ("/games/..%2f..%2fetc%2fpasswd", 404),
    ("/games/" + "a" * 5000, 404), ("/static/../pbem.toml", 404), ("/static/nothing.css", 404),
    ("/games/g%00", 404), ("/p/", 404), ("/nowhere", 404), ("/api/nowhere", 404),
    ("/games/classic-1/replay/99999999999", 404), ("/games/classic-1/record.json/x", 404),
])
def test_odd_paths_get_a_clear_4xx_page(client: TestClient, path: str, status: int) -> None:
    answer = client.get(path)
    assert answer.status_code == status
    assert "Traceback" not in answer.text and "File \"" not in answer.text
    if path.startswith("/api/"):
        assert valid(answer.json(), "error") == []
    else:
        assert 'id="error-message"' in answer.text and answer.headers["cache-control"] == "no-store"
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_pages_only_show_games(client: TestClient) -> None:
    for method, path in (("POST", "/games/classic-1"), ("DELETE", "/api/games/classic-1"),
                         ("PUT", "/verify"), ("GET", "/api/verify")):
        answer = client.request(method, path)
        assert answer.status_code == 405 and "Traceback" not in answer.text


def test_a_broken_game_row_is_a_plain_500_page(tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock())
    admin(server, "NEWGAME broken-1 RULES classic")
    for i, email in enumerate(PLAYERS[:2], start=1):
        admin(server, f"ADD broken-1 {email} B{i}")
    admin(server, "START broken-1")
    admin(server, "NEWGAME fine-1")
    with Session(server.engine) as session:   # a row damaged behind the server's back
        game = find_game(session, "broken-1")
        game.rules_json = "{not json"
        session.add(game)
        session.commit()
    with TestClient(create_app(server.settings)) as c:
        answer = c.get("/games/broken-1")
        assert answer.status_code == 500 and "Something went wrong" in answer.text
        assert "Traceback" not in answer.text and "JSONDecodeError" not in answer.text
        assert c.get("/games/fine-1").status_code == 200   # the others still work


# --- read only, settings, start-up ---------------------------------------------------------------

def test_the_web_app_cannot_write_to_the_database(site: Site) -> None:
    engine = open_read_only(f"sqlite:///{site.folder / 'pbem.db'}")
    with Session(engine) as session:
        game = session.exec(select(Game).where(Game.name == "classic-1")).one()
        game.status = "cancelled"
        session.add(game)
        with pytest.raises(OperationalError, match="readonly|read-only|query_only"):
            session.commit()
    with Session(site.server.engine) as session:
        assert find_game(session, "classic-1").status == "over"


def test_the_web_app_refuses_a_database_the_server_has_not_set_up(tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotReady, match="no database at"):
        open_read_only(f"sqlite:///{tmp_path / 'missing.db'}")
    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(DatabaseNotReady, match="pbem serve or pbem tick"):
        open_read_only(f"sqlite:///{tmp_path / 'empty.db'}")


def test_web_settings_come_from_the_file_and_the_secret_from_the_environment(
        tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[web]\nport = 9000\nbase_url = "https://bluff.example.org"\n'
                    'link_days = 7\nsecret = "from-file"\n', encoding="utf-8")
    web = load_settings(path, env={}).web
    assert (web.port, web.base_url, web.link_days, web.secret) == (
        9000, "https://bluff.example.org", 7, "from-file")
    assert load_settings(path, env={"PBEM_WEB_SECRET": "from-env"}).web.secret == "from-env"
    assert load_settings(None, env={}).web.secret == "" and load_settings(None, env={}).web.port \
        == 8080
    path.write_text("[web]\nsecrets = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[web\]"):
        load_settings(path, env={})


def test_pbem_web_says_so_when_there_is_no_database(tmp_path: Path) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text(f'[server]\ndatabase = "sqlite:///{tmp_path / "none.db"}"\n',
                      encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    done = subprocess.run([sys.executable, "-m", "pbem.cli", "web", "-c", str(config),
                           "--port", "1"], capture_output=True, text=True, timeout=60, env=env,
                          check=False)
    assert done.returncode == 2 and "there is no database at" in done.stderr
    assert "pbem serve or pbem tick" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "none.db").exists()   # the web pages never create one


def test_every_report_carries_a_working_private_link(tmp_path: Path) -> None:
    clock = Clock()
    web = WebSettings(base_url="https://bluff.example.org", secret=SECRET, link_days=10)
    server = make_server(tmp_path, clock, web=web)
    new_game(server, "g1", "RULES classic english DICE 2", 3)
    admin(server, "START g1")

    def links() -> dict[int, str]:
        """seat -> the private link of its holder's latest report (text and HTML agree)."""
        found = {}
        for seat in (1, 2, 3):
            holder = seat_holder(server, "g1", seat)
            report = [m for m in outbox(server, holder.email)
                      if "report" in str(m["Subject"])][-1]
            text = report.get_body(("plain",)).get_content()   # type: ignore[union-attr]
            html = report.get_body(("html",)).get_content()    # type: ignore[union-attr]
            assert "Game page: https://bluff.example.org/games/g1" in text
            (url,) = re.findall(r"https://bluff\.example\.org/p/\S+", text)
            assert f'href="{url}"' in html and "keep the link to yourself" in text
            found[seat] = url.removeprefix("https://bluff.example.org")
        return found

    first = links()
    with TestClient(create_app(server.settings, clock=clock)) as c:
        for seat, path in first.items():
            page = c.get(path)
            assert page.status_code == 200 and f"You are <strong>player {seat}" in page.text
        clock.advance(days=11)
        assert c.get(first[1]).status_code == 410   # expired
        admin(server, "PROCESS g1")                 # a new report, a new link
        fresh = links()
        assert fresh[1] != first[1] and c.get(fresh[1]).status_code == 200
        admin(server, "REPLACE g1 2 newbie@example.org Newbie")
        assert c.get(fresh[2]).status_code == 410   # the seat changed hands
        newest = links()
        page = c.get(newest[2])
        assert page.status_code == 200 and "Newbie" in page.text
