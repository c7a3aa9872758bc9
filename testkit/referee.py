"""A server on a real SQLite file with the .eml outbox (no mail server needed): a game of five
players started by the referee's commands, mail delivered and handled, the outbox read back."""

from __future__ import annotations

from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from pbem.config import Settings
from pbem.demo.robot_client import parse_mail
from pbem.games.records import find_game, players_of
from pbem.runner.server import Server
from pbem.store.work import Work
from testkit.stored import outbound_rows

REFEREE_KEY = "sekrit-key"
PLAYERS = [f"p{i}@example.org" for i in range(1, 6)]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def mail(sender: str, body: str, *, subject: str = "orders", html: str | None = None,
         headers: dict[str, str] | None = None) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "bluff@example.org"
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{abs(hash((sender, body, subject, str(headers))))}@client.example>"
    for k, v in (headers or {}).items():
        msg[k] = v
    if html is not None and not body:
        msg.set_content(html, subtype="html")
    else:
        msg.set_content(body)
    return msg.as_bytes(policy=policy.SMTP)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> Server:
    settings = Settings(database=f"sqlite:///{tmp_path / 'pbem.db'}", address="bluff@example.org",
                        referee="referee@example.org", referee_key=REFEREE_KEY,
                        outbox_dir=tmp_path / "outbox", compose_apart=False)
    return Server(settings, clock=clock)


def outbox(server: Server, to: str | None = None) -> list[EmailMessage]:
    rows = outbound_rows(server.engine)
    return [parse_mail(r.raw) for r in rows if to is None or to in r.rcpts_json]


def deliver(server: Server, raw: bytes) -> None:
    assert server.referee.store_inbound(raw, source="smtp")
    server.referee.process_pending()


def started_game(server: Server, hours: str = "") -> None:
    lines = [f"NEWGAME g1 SEED 3{' DEADLINE ' + hours if hours else ''}"]
    lines += [f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)] + ["START g1"]
    for line in lines:
        server.referee.admin(line.split())


def key_and_seat(server: Server, email: str) -> tuple[str, int]:
    with Work(server.engine) as session:
        player = next(p for p in players_of(session, find_game(session, "g1")) if p.email == email)
        assert player.seat is not None
        return player.key, player.seat


def last_text(server: Server, to: str) -> str:
    body = outbox(server, to)[-1].get_body(("plain",))
    assert body is not None
    return " ".join(body.get_content().split())   # unwrapped, so phrases match
