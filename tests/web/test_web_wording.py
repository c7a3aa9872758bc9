"""What the pages say agrees with the reports: the rules named once, an ended game's turns
counted as its final report counts them, a paused game's deadline not shown as running,
an Anniversary table's dice counted as dice."""

from __future__ import annotations

import dataclasses
import re
import warnings
from pathlib import Path

from pbem.config import load_settings
from pbem.web import create_app
from testkit.desk import Clock, admin, make_server, outbox
from testkit.web import SECRET, new_game, play_out, write_config

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient


def visible(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_pages_agree_with_the_reports(tmp_path: Path) -> None:
    clock = Clock()
    server = make_server(tmp_path, clock)
    new_game(server, "ended", "RULES classic german DICE 1", 3)
    admin(server, "START ended")
    turns = play_out(server, "ended")
    new_game(server, "paused", "DEADLINE 48 RULES classic anniversary", 3)
    admin(server, "START paused")
    clock.advance(hours=12)
    admin(server, "PAUSE paused")
    server.engine.dispose()
    texts = [m.get_body(("plain",)).get_content() for m in outbox(server)]  # type: ignore[union-attr]
    said = re.search(r"final report after (\d+) turns?", "".join(texts))
    assert said is not None
    settings = load_settings(write_config(tmp_path, 0), env={"PBEM_WEB_SECRET": SECRET})
    settings = dataclasses.replace(settings, web=dataclasses.replace(settings.web))
    with TestClient(create_app(settings)) as client:
        ended = visible(client.get("/games/ended").text)
        assert f"{said.group(1)} turns played" in ended and turns == int(said.group(1))
        assert "classic Bluff: classic Bluff" not in ended
        assert "classic Bluff, German edition with changes: 1 die each" in ended
        paused = visible(client.get("/games/paused").text)
        assert "classic Bluff, Anniversary edition:" in paused
        assert "deadline" not in paused.split("paused the game")[0].split("Turn 1")[1]
        assert "no deadline runs (1 day 12 hours left when it resumes)" in paused
        assert "15 dice in play (worth 18)" in paused
        index = visible(client.get("/").text)
        row = index.split("paused paused")[1].split("ended")[0] if "paused paused" in index \
            else index.split("paused")[1]
        assert "stopped while paused (1 day 12 hours left)" in row
        data = client.get("/api/games/paused").json()
        assert data["deadline"] is None and data["paused_left"] == "1 day 12 hours"
