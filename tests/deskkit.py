"""Helpers for the referee's-desk tests: a server on SQLite with the .eml outbox, a
controllable clock, mail in, mail out, referee commands by mail and by the CLI."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from pbem.config import Settings
from pbem.games import find_game, load_state, players_of, seated
from pbem.kinds import kind_of
from pbem.models import Move, OutboundMail, Player
from pbem.robot_client import parse_mail
from pbem.server import Server

REFEREE = "referee@example.org"
REFEREE_KEY = "desk-sekrit"
PLAYERS = [f"p{i}@example.org" for i in range(1, 6)]
_ids = itertools.count(1)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def make_server(tmp_path: Path, clock: Clock) -> Server:
    settings = Settings(database=f"sqlite:///{tmp_path / 'pbem.db'}", address="bluff@example.org",
                        referee=REFEREE, referee_key=REFEREE_KEY,
                        outbox_dir=tmp_path / "outbox")
    return Server(settings, clock=clock)


def mail(sender: str, body: str, *, subject: str = "orders",
         in_reply_to: str | None = None) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "bluff@example.org"
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


def referee_mail(server: Server, *lines: str) -> str:
    """Referee commands by mail; returns the text of the answer."""
    deliver(server, mail(REFEREE, "\n".join([f"KEY {REFEREE_KEY}", *lines])))
    return last_text(server, REFEREE)


def outbox(server: Server, to: str | None = None) -> list[EmailMessage]:
    return [parse_mail(r.raw) for r in outbox_rows(server, to)]


def outbox_rows(server: Server, to: str | None = None) -> list[OutboundMail]:
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail).order_by(col(OutboundMail.id))).all()
        return [r for r in rows if to is None or to in r.rcpts_json]


def text_of(msg: EmailMessage) -> str:
    body = msg.get_body(("plain",))
    assert body is not None
    return " ".join(body.get_content().split())   # unwrapped, so phrases match


def last_text(server: Server, to: str) -> str:
    return text_of(outbox(server, to)[-1])


def start_game(server: Server, *extra: str) -> None:
    lines = [" ".join(["NEWGAME g1 SEED 3", *extra])]
    lines += [f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)] + ["START g1"]
    for line in lines:
        server.referee.admin(line.split())


def player(server: Server, email: str) -> Player:
    with Session(server.engine) as session:
        found = next(p for p in players_of(session, find_game(session, "g1")) if p.email == email)
        session.expunge(found)
        return found


def by_seat(server: Server) -> dict[int, Player]:
    with Session(server.engine) as session:
        holders = seated(session, find_game(session, "g1"))
        for p in holders.values():
            session.expunge(p)
        return holders


def game_turn(server: Server) -> int:
    with Session(server.engine) as session:
        return find_game(session, "g1").turn


def state_of(server: Server) -> Any:
    with Session(server.engine) as session:
        return load_state(session, find_game(session, "g1"))


def moves_of(server: Server, turn: int | None = None) -> list[dict[str, Any]]:
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        rows = session.exec(select(Move).where(Move.game_id == game.id)
                            .order_by(col(Move.turn), col(Move.seat)))
        return [{"turn": r.turn, "seat": r.seat, "by": r.by, "move": json.loads(r.move_json),
                 "rerolled": json.loads(r.rerolled_json)}
                for r in rows if turn is None or r.turn == turn]


def order(server: Server, email: str, *lines: str) -> str:
    """A fresh mail with GAME + KEY and the order lines; returns the answer's text."""
    key = player(server, email).key
    deliver(server, mail(email, "\n".join(["GAME g1", f"KEY {key}", *lines])))
    return last_text(server, email)


def raise_line(server: Server, seat: int) -> str:
    """A legal order line for seat now: the lowest raise (or a challenge)."""
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        kind = kind_of(game)
        move = kind.standing_move(load_state(session, game), seat, "RAISE")
        return kind.describe_move(move)


def cli(config: Path, *words: str) -> subprocess.CompletedProcess[str]:
    """`pbem admin -c <toml> WORDS` as a process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    return subprocess.run([sys.executable, "-m", "pbem.cli", "admin", "-c", str(config), *words],
                          capture_output=True, text=True, env=env, timeout=120)


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "pbem.toml"
    path.write_text(f'[server]\ndatabase = "sqlite:///{tmp_path / "pbem.db"}"\n'
                    f'address = "bluff@example.org"\nreferee = "{REFEREE}"\n'
                    f'referee_key = "{REFEREE_KEY}"\noutbox_dir = "{tmp_path / "outbox"}"\n',
                    encoding="utf-8")
    return path
