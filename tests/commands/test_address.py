"""ADDRESS: a player moves their games to a new mail address, confirmed from there
(pbem.commands.address), through the real handling path on a real SQLite file."""

from __future__ import annotations

import re

from sqlmodel import Session, select

from pbem.runner.server import Server
from pbem.store.models import Player
from testkit.desk import (
    PLAYERS,
    REFEREE,
    admin,
    key_of,
    last_text,
    new_game,
    order,
    outbox,
    send,
    subjects,
    text_of,
)

ANN, BOB = PLAYERS[0], PLAYERS[1]
NEW = "ann.new@example.net"


def setup(server: Server) -> None:
    new_game(server, "", "g1")
    new_game(server, "", "g2", players=[ANN])
    admin(server, "START g1")


def code_sent_to(server: Server, address: str) -> str:
    found = re.search(r"CONFIRM ([0-9a-f]{10})", text_of(outbox(server, address)[-1]))
    assert found, text_of(outbox(server, address)[-1])
    return found[1]


def emails(server: Server) -> dict[str, list[str]]:
    with Session(server.engine) as session:
        rows = session.exec(select(Player)).all()
    games: dict[str, list[str]] = {}
    for p in rows:
        games.setdefault(p.email, []).append(str(p.game_id))
    return games


def test_a_new_address_takes_every_seat_once_its_code_comes_back(server: Server) -> None:
    setup(server)
    key = key_of(server, ANN, "g1")
    answer = order(server, ANN, f"ADDRESS <{NEW}>")
    assert f"A code went to {NEW}" in answer
    assert ANN in emails(server) and NEW not in emails(server)     # nothing moved yet
    assert "please confirm your new address" in subjects(server, NEW)[-1]
    code = code_sent_to(server, NEW)
    # the code is worth nothing from another address, nor wrong from the right one
    send(server, BOB, f"CONFIRM {code}")
    send(server, NEW, "CONFIRM 0123456789")
    assert NEW not in emails(server)
    done = send(server, NEW, f"CONFIRM {code}")
    assert "your games (g1, g2) are played from ann.new@example.net now" in done.lower()
    assert len(emails(server)[NEW]) == 2 and ANN not in emails(server)
    assert f"moved to {NEW}" in last_text(server, ANN)
    assert f"{ANN} is now {NEW}" in subjects(server, REFEREE)[-1]
    # the same key plays from the new address; the old one plays no more
    assert key_of(server, NEW, "g1") == key
    assert "Turn 1" in order(server, NEW, "ORDERS")
    stale = send(server, ANN, f"GAME g1\nKEY {key}\nORDERS")
    assert "Turn 1:" not in stale


def test_a_seat_cannot_move_onto_an_address_that_plays_the_same_game(server: Server) -> None:
    setup(server)
    answer = order(server, ANN, f"ADDRESS {BOB}")
    assert f"{BOB} plays in g1 already" in answer
    assert not [s for s in subjects(server, BOB) if "confirm your new address" in s]


def test_a_malformed_address_is_refused_quoting_the_line(server: Server) -> None:
    setup(server)
    answer = order(server, ANN, "ADDRESS ann at example")
    assert "ADDRESS takes your new mail address" in answer and "ADDRESS ann at example" in answer
    answer = order(server, ANN, "ADDRESS ann@")
    assert "is not a mail address I can write to" in answer
