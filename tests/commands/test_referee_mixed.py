"""A mail with a move and desk commands (SAY, DEFAULT): both are done, or neither."""

from __future__ import annotations

from sqlmodel import select

from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.runner.server import Server
from pbem.store.models import Player, TalkMessage
from pbem.store.work import Work
from tests.runner.test_referee import (  # noqa: F401
    clock,
    deliver,
    key_and_seat,
    last_text,
    mail,
    server,
    started_game,
)


def test_a_move_with_say_and_default_does_all_three(server: Server) -> None:
    started_game(server)
    key, seat = key_and_seat(server, "p1@example.org")
    deliver(server, mail("p1@example.org",
                         f"GAME g1\nKEY {key}\nBID 1 three\nSAY good luck all\nDEFAULT CHALLENGE\n"))
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        assert seat in pending_orders(session, game)
        assert [t.text for t in session.exec(select(TalkMessage))] == ["good luck all"]
        me = session.exec(select(Player).where(Player.email == "p1@example.org")).one()
        assert me.default_order == "CHALLENGE"


def test_a_refused_move_undoes_the_desk_commands_of_the_same_mail(server: Server) -> None:
    started_game(server)
    key, seat = key_and_seat(server, "p1@example.org")
    # turn 1: every player opens a mini-game, so CHALLENGE is refused
    deliver(server, mail("p1@example.org",
                         f"GAME g1\nKEY {key}\nSAY watch this\nDEFAULT RAISE\nCHALLENGE\n"))
    assert "nothing was applied" in last_text(server, "p1@example.org").lower() or \
        "no bid yet" in last_text(server, "p1@example.org")
    with Work(server.engine) as session:
        assert seat not in pending_orders(session, find_game(session, "g1"))
        assert list(session.exec(select(TalkMessage))) == []
        me = session.exec(select(Player).where(Player.email == "p1@example.org")).one()
        assert me.default_order is None
