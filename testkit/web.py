"""Helpers for the web tests: real games played through the referee (the desk kit's server
on SQLite), `pbem web` run as a real process on a loopback port, and headless Chromium.

The site: a finished classic game with table talk, a finished Cup of Bluff game, a
running postal game (turn 3, one order in, table talk, seat 2 replaced) and a game
open for sign-up. The web process reads the same database file.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session

from pbem.games.records import find_game, players_of, seated
from pbem.games.states import load_state
from pbem.kinds import kind_of
from pbem.runner.server import Server
from pbem.store.rows import PlayerRow
from pbem.store.work import Work
from pbem.text.links import key_generation, private_link
from testkit.desk import PLAYERS, REFEREE, REFEREE_KEY, SERVER, Clock, admin, make_server, order

SECRET = "web-test-secret"
NEWBIE = "newbie@example.org"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


# --- games ----------------------------------------------------------------------------------

def new_game(server: Server, name: str, options: str, players: int) -> None:
    admin(server, f"NEWGAME {name} SEED 3 {options}".strip())
    for i, email in enumerate(PLAYERS[:players], start=1):
        admin(server, f"ADD {name} {email} Name{i}")


def status_of(server: Server, name: str) -> str:
    with Session(server.engine) as session:
        return find_game(session, name).status


def play_out(server: Server, name: str, most: int = 3000) -> int:
    """PROCESS the game until it is over (the robot plays every missing order)."""
    turns = 0
    while status_of(server, name) == "running":
        admin(server, f"PROCESS {name}")
        turns += 1
        assert turns < most, f"{name} did not end in {most} turns"
    return turns


def seat_holder(server: Server, name: str, seat: int) -> PlayerRow:
    with Work(server.engine) as session:
        return seated(session, find_game(session, name))[seat]


def email_of_seat(server: Server, name: str, seat: int) -> str:
    return seat_holder(server, name, seat).email


def raise_line(server: Server, name: str, seat: int) -> str:
    """A legal order line for seat now: the lowest raise."""
    with Work(server.engine) as session:
        game = find_game(session, name)
        kind = kind_of(game)
        move = kind.standing_move(load_state(session, game), seat, "RAISE")
        return kind.describe_move(move)


def state(server: Server, name: str) -> Any:
    with Work(server.engine) as session:
        return load_state(session, find_game(session, name))


@dataclass
class Site:
    server: Server
    folder: Path
    config: Path
    replaced: PlayerRow               # the postal game's seat 2 before REPLACE
    turns: dict[str, int] = field(default_factory=dict)

    def link(self, game: str, seat: int, *, days: float = 30, player: PlayerRow | None = None,
             now: datetime | None = None) -> str:
        """The private link a report would carry (path only)."""
        holder = player or seat_holder(self.server, game, seat)
        with Session(self.server.engine) as session:
            game_id = find_game(session, game).id
        assert game_id is not None and holder.id is not None
        url = private_link("http://x", SECRET, days, game_id=game_id, seat=seat,
                           player_id=holder.id, generation=key_generation(holder.key_hash,
                                                                          holder.key),
                           now=now or datetime.now(UTC))
        assert url is not None
        return url.removeprefix("http://x")


def stopped_clock() -> Callable[[], datetime]:
    """The real time now, standing still, for a web app under test: a page's ETag holds
    the minute (its deadlines read "in 2 hours"), so a test that asks for a page again
    with its ETag must not see the minute turn in between."""
    now = datetime.now(UTC)
    return lambda: now


def write_config(folder: Path, port: int) -> Path:
    path = folder / "pbem.toml"
    path.write_text(
        f'[server]\ndatabase = "sqlite:///{folder / "pbem.db"}"\naddress = "{SERVER}"\n'
        f'referee = "{REFEREE}"\nreferee_key = "{REFEREE_KEY}"\n'
        f'outbox_dir = "{folder / "outbox"}"\n\n'
        f'[web]\nport = {port}\nbase_url = "http://127.0.0.1:{port}"\nlink_days = 30\n'
        f'max_upload_bytes = 300000\n', encoding="utf-8")
    return path


def build_site(folder: Path) -> Site:
    clock = Clock()
    server = make_server(folder, clock)
    turns = {}
    new_game(server, "classic-1", "RULES classic english DICE 2", 4)
    admin(server, "START classic-1")
    admin(server, "PROCESS classic-1")
    order(server, PLAYERS[0], "SAY I hold <b>three</b> stars.\nSAY Or do I?", name="classic-1")
    turns["classic-1"] = play_out(server, "classic-1") + 1
    new_game(server, "cup-1", "RULES cup", 4)
    admin(server, "START cup-1")
    turns["cup-1"] = play_out(server, "cup-1")
    new_game(server, "postal-1", "DEADLINE 48", 5)
    admin(server, "START postal-1")
    admin(server, "PROCESS postal-1")
    admin(server, "PROCESS postal-1")
    answer = order(server, email_of_seat(server, "postal-1", 1), raise_line(server, "postal-1", 1),
                   name="postal-1")
    assert "accepted" in answer.lower() or "confirm" in answer.lower(), answer
    order(server, email_of_seat(server, "postal-1", 3), "SAY Good luck, everyone.",
          name="postal-1")
    replaced = seat_holder(server, "postal-1", 2)
    admin(server, f"REPLACE postal-1 2 {NEWBIE} Newbie")
    admin(server, "NEWGAME open-1 OPEN AUTOSTART RULES classic")
    admin(server, f"ADD open-1 {PLAYERS[4]} Early")
    server.engine.dispose()
    return Site(server, folder, write_config(folder, free_port()), replaced, turns)


# --- `pbem web` as a process ----------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class WebProcess:
    """`pbem web -c pbem.toml` on a loopback port; its log goes to a file."""

    def __init__(self, config: Path, log: Path, secret: str = SECRET) -> None:
        text = config.read_text()
        self.port = int(text.split("[web]\nport = ")[1].split("\n")[0])
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
        env["PBEM_WEB_SECRET"] = secret
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pbem.cli", "web", "-c", str(config), "--port", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"pbem web exited: {log.read_text()}")
            try:
                # it answers: up (the site's referee does not tick, so /healthz says
                # 503, the server unwell, as often as 200)
                if httpx.get(self.base + "/healthz", timeout=1).status_code in (200, 503):
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"pbem web did not answer: {log.read_text()}")

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


# --- Chromium -------------------------------------------------------------------------------

def chromium_path() -> str:
    """Debian's chromium; missing, the browser tests skip, except under CI, where they fail."""
    found = shutil.which("chromium")
    if found is None:
        message = "Chromium is not installed (apt-get install chromium): the browser tests need it"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


def record_of(base: str, game: str) -> dict[str, Any]:
    answer = httpx.get(f"{base}/games/{game}/record.json", timeout=30)
    assert answer.status_code == 200
    data: dict[str, Any] = json.loads(answer.text)
    return data


def players_named(server: Server, game: str) -> dict[int, str]:
    with Work(server.engine) as session:
        return {p.seat: p.name for p in players_of(session, find_game(session, game))
                if p.seat is not None and p.active}


def days_ago(days: float) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)
