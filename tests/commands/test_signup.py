"""The sign-up commands (pbem.commands.signup) through the registry, from strangers and
players: LIST, JOIN, CONFIRM, LEAVE, WATCH, UNWATCH on a real SQLite file database."""

from __future__ import annotations

import re

import pytest
from sqlmodel import Session, select

from pbem.games.records import find_game, players_of
from pbem.runner.server import Server
from pbem.store.models import Watcher
from pbem.store.work import Work
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, last_text
from testkit.deskrun import player, referee

ANN = "ann@example.org"


def code_in(text: str) -> str:
    found = re.search(r"CONFIRM ([0-9a-f]{10})", text)
    assert found is not None, text
    return found.group(1)


def emails(server: Server) -> list[str]:
    with Work(server.engine) as session:
        return [p.email for p in players_of(session, find_game(session, "g1"))]


def test_list_shows_the_games_open_for_sign_up(server: Server) -> None:
    referee(server, "NEWGAME g1 OPEN")
    assert player(server, ANN, "LIST") == ["game list sent (1 open, 0 to watch)"]
    assert "g1" in last_text(server, ANN)


def test_join_then_confirm_seats_the_stranger(server: Server) -> None:
    referee(server, "NEWGAME g1 OPEN")
    assert player(server, ANN, "JOIN g1 Ann") == [f"pending sign-up of {ANN} to g1: code sent"]
    assert emails(server) == []                    # nothing before the confirmation
    player(server, ANN, f"CONFIRM {code_in(last_text(server, ANN))}")
    assert emails(server) == [ANN]


@pytest.mark.parametrize(("setup", "line", "said"), [
    ("NEWGAME g1", "JOIN g1", "game g1 is not open for sign-up"),
    ("NEWGAME g1 OPEN", "JOIN nosuch", "there is no game called 'nosuch'"),
    ("NEWGAME g1 OPEN", "CONFIRM 0123456789",
     "that code does not match a sign-up from your address (or it expired)"),
    ("NEWGAME g1 OPEN", "UNWATCH g1", "you do not watch g1"),
])
def test_refusals_quote_the_line_and_give_the_fix(server: Server, setup: str, line: str,
                                                  said: str) -> None:
    referee(server, setup)
    with pytest.raises(Refusal) as refused:
        player(server, ANN, line)
    problem = refused.value.problems[0]
    assert (problem.line_no, problem.line, problem.message) == (1, line, said)


def test_a_game_that_is_not_there_is_refused_with_the_list_as_the_fix(server: Server) -> None:
    with pytest.raises(Refusal) as refused:
        player(server, ANN, "WATCH nosuch")
    assert refused.value.problems[0].hint == ("send LIST for the games open for sign-up and "
                                              "those you may WATCH")


def test_watch_and_unwatch(server: Server) -> None:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), "START g1")
    player(server, ANN, "WATCH g1")
    player(server, ANN, f"CONFIRM {code_in(last_text(server, ANN))}")
    with Session(server.engine) as session:
        assert [w.email for w in session.exec(select(Watcher))] == [ANN]
    assert player(server, ANN, "UNWATCH g1") == [f"{ANN} stopped watching g1"]
    with Session(server.engine) as session:
        assert session.exec(select(Watcher)).all() == []


def test_leave_before_the_start_needs_the_players_own_lines(server: Server) -> None:
    referee(server, "NEWGAME g1", f"ADD g1 {PLAYERS[0]}", f"ADD g1 {PLAYERS[1]}")
    with pytest.raises(Refusal, match="needs to know who you are"):
        player(server, PLAYERS[0], "LEAVE g1")            # a stranger's mail: no GAME/KEY
    assert player(server, PLAYERS[0], "LEAVE g1", game="g1") == [f"{PLAYERS[0]} left g1"]
    assert emails(server) == [PLAYERS[1]]
