"""Helpers for the referee's-desk tests (options, deadlines, schedule, sign-up, seats and
turns): a server on SQLite with the .eml outbox and a controllable clock (no sleeps), mail
in, mail out, referee commands by mail, by Referee.admin and by `pbem admin` as a
subprocess. The `clock` and `server` fixtures built from these are in tests/conftest.py."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from pbem.config import Settings
from pbem.demo.robot_client import parse_mail
from pbem.games.records import find_game, players_of, seated
from pbem.games.states import load_state
from pbem.kinds import kind_of
from pbem.runner.server import Server
from pbem.store.models import Game, Move
from pbem.store.rows import PlayerRow
from pbem.store.work import Work
from testkit.stored import outbound_rows

SERVER = "bluff@example.org"
REFEREE = "referee@example.org"
REFEREE_KEY = "desk-sekrit"
PLAYERS = [f"p{i}@example.org" for i in range(1, 6)]
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)   # where a Clock starts
_ids = itertools.count(1)


class Clock:
    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> datetime:
        self.now += timedelta(**kwargs)
        return self.now


def make_server(tmp_path: Path, clock: Clock, **settings: object) -> Server:
    base = {"database": f"sqlite:///{tmp_path / 'pbem.db'}", "address": SERVER,
            "referee": REFEREE, "referee_key": REFEREE_KEY, "outbox_dir": tmp_path / "outbox",
            # the reports queued with the turn, whatever the default (tests/services/
            # test_drafts.py asks for the composer, started at a tick's first turn)
            "compose_apart": False, "composer_from_turn": 1}
    return Server(Settings(**{**base, **settings}), clock=clock)  # type: ignore[arg-type]


# --- mail in, mail out ---------------------------------------------------------------------

def mail(sender: str, body: str, *, subject: str = "orders",
         in_reply_to: str | None = None) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = SERVER
    msg["Subject"] = subject
    msg["Message-ID"] = f"<desk-{next(_ids)}@client.example>"
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
        msg["References"] = in_reply_to
    msg.set_content(body)
    return msg.as_bytes(policy=policy.SMTP)


def deliver(server: Server, raw: bytes) -> None:
    assert server.referee.store_inbound(raw, source="smtp")
    server.referee.process_pending()


def send(server: Server, sender: str, body: str, **kw: str) -> str:
    """A mail from sender; returns the text of the last mail back to them."""
    deliver(server, mail(sender, body, **kw))
    return last_text(server, sender)


def referee_mail(server: Server, *lines: str) -> str:
    """Referee commands by mail; returns the text of the answer."""
    return send(server, REFEREE, "\n".join([f"KEY {REFEREE_KEY}", *lines]))


def order(server: Server, email: str, *lines: str, name: str = "g1") -> str:
    """A fresh mail with GAME + KEY and the order lines; returns the answer's text."""
    return send(server, email, "\n".join([f"GAME {name}", f"KEY {key_of(server, email, name)}",
                                          *lines]) + "\n")


def outbox_rows(server: Server, to: str | None = None) -> list[Any]:
    """The queued mail (to ``to``), oldest first: outbound_mail's columns and raw."""
    return [r for r in outbound_rows(server.engine) if to is None or to in r.rcpts_json]


def outbox(server: Server, to: str | None = None) -> list[EmailMessage]:
    return [parse_mail(r.raw) for r in outbox_rows(server, to)]


def text_of(message: EmailMessage) -> str:
    body = message.get_body(("plain",))
    assert body is not None
    return " ".join(body.get_content().split())   # unwrapped, so phrases match


def last_text(server: Server, to: str) -> str:
    return text_of(outbox(server, to)[-1])


def subjects(server: Server, to: str | None = None) -> list[str]:
    return [str(m["Subject"]) for m in outbox(server, to)]


# --- referee commands from the shell -------------------------------------------------------

def admin(server: Server, line: str) -> str:
    """A referee command line through Referee.admin (in this process)."""
    return "\n".join(server.referee.admin(line.split()))


def write_config(tmp_path: Path) -> Path:
    """tmp_path/pbem.toml for the test's database and outbox."""
    path = tmp_path / "pbem.toml"
    path.write_text(f'[server]\ndatabase = "sqlite:///{tmp_path / "pbem.db"}"\n'
                    f'address = "{SERVER}"\nreferee = "{REFEREE}"\n'
                    f'referee_key = "{REFEREE_KEY}"\noutbox_dir = "{tmp_path / "outbox"}"\n',
                    encoding="utf-8")
    return path


def cli(tmp_path: Path, *words: str) -> subprocess.CompletedProcess[str]:
    """`pbem admin -c pbem.toml WORDS` as a subprocess on the test's database."""
    toml = tmp_path / "pbem.toml"
    if not toml.exists():
        write_config(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    return subprocess.run([sys.executable, "-m", "pbem.cli", "admin", "-c", str(toml), *words],
                          capture_output=True, text=True, timeout=120, env=env, check=False)


# --- games ---------------------------------------------------------------------------------

def new_game(server: Server, options: str = "", name: str = "g1",
             players: list[str] = PLAYERS) -> None:
    admin(server, f"NEWGAME {name} SEED 3 {options}".strip())
    for i, p in enumerate(players, start=1):
        admin(server, f"ADD {name} {p} Name{i}")


def started_game(server: Server, options: str = "", name: str = "g1") -> None:
    new_game(server, options, name)
    admin(server, f"START {name}")


def game_row(server: Server, name: str = "g1") -> Game:
    with Session(server.engine) as session:
        game = find_game(session, name)
        session.expunge(game)
        return game


def game_turn(server: Server) -> int:
    return game_row(server).turn


def player(server: Server, email: str, name: str = "g1") -> PlayerRow:
    with Work(server.engine) as session:
        return next(p for p in players_of(session, find_game(session, name))
                    if p.email == email)


def key_of(server: Server, email: str, name: str = "g1") -> str:
    return player(server, email, name).key


def seat_of(server: Server, email: str) -> int:
    seat = player(server, email).seat
    assert seat is not None
    return seat


def by_seat(server: Server) -> dict[int, PlayerRow]:
    with Work(server.engine) as session:
        return seated(session, find_game(session, "g1"))


def state_of(server: Server) -> Any:
    with Work(server.engine) as session:
        return load_state(session, find_game(session, "g1"))


def moves_of(server: Server, turn: int | None = None) -> list[dict[str, Any]]:
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        rows = session.exec(select(Move).where(Move.game_id == game.id)
                            .order_by(col(Move.turn), col(Move.seat)))
        return [{"turn": r.turn, "seat": r.seat, "by": r.by, "move": json.loads(r.move_json),
                 "rerolled": json.loads(r.rerolled_json)}
                for r in rows if turn is None or r.turn == turn]


def raise_line(server: Server, seat: int) -> str:
    """A legal order line for seat now: the lowest raise (or a challenge)."""
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        kind = kind_of(game)
        move = kind.standing_move(load_state(session, game), seat, "RAISE")
        return kind.describe_move(move)
