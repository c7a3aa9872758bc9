"""The referee's clock commands (pbem.commands.schedule) through the registry: DEADLINE,
EXTEND, PAUSE, RESUME, WAIT, REMOVE, CANCEL on a real SQLite file database."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pbem.games.records import find_game, players_of
from pbem.kinds.options import options_of
from pbem.runner.server import Server
from pbem.store.work import Work
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, T0, Clock, game_row, last_text
from testkit.deskrun import referee


def started(server: Server) -> None:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), "START g1")


def test_deadline_sets_this_turns_deadline_and_tells_the_players(server: Server,
                                                                   clock: Clock) -> None:
    started(server)
    out = referee(server, "DEADLINE g1 +24")
    assert out == [f"game g1: deadline of turn 1 set to {(T0 + timedelta(hours=24)):%Y-%m-%d %H:%M} UTC"]
    assert game_row(server).deadline == (T0 + timedelta(hours=24))
    assert "deadline" in last_text(server, PLAYERS[0]).lower()


def test_extend_moves_the_deadline_later(server: Server) -> None:
    started(server)
    referee(server, "DEADLINE g1 +24")
    before = game_row(server).deadline
    assert referee(server, "EXTEND g1 6")[0].startswith("game g1: extended by 6 hours")
    after = game_row(server).deadline
    assert before is not None and after == before + timedelta(hours=6)


def test_pause_then_resume_keeps_the_time_that_was_left(server: Server, clock: Clock) -> None:
    started(server)
    referee(server, "DEADLINE g1 +24")
    assert referee(server, "PAUSE g1") == ["game g1 paused (24.0 hours left)"]
    assert game_row(server).status == "paused"
    clock.advance(hours=100)
    out = referee(server, "RESUME g1")[0]
    assert out.startswith("game g1 resumed; deadline")
    assert game_row(server).deadline == (clock.now + timedelta(hours=24))
    with pytest.raises(Refusal, match="RESUME g1: "):
        referee(server, "RESUME g1")


def test_wait_is_an_option_of_the_game(server: Server) -> None:
    started(server)
    assert referee(server, "WAIT g1 on") == ["game g1: WAIT on"]
    assert options_of(game_row(server)).wait


def test_remove_takes_an_entrant_off_before_the_start(server: Server) -> None:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)))
    assert "removed from g1" in referee(server, f"REMOVE g1 {PLAYERS[4]}")[0]
    with Work(server.engine) as session:
        assert [p.email for p in players_of(session, find_game(session, "g1"))] == PLAYERS[:4]


def test_cancel_ends_the_game_and_tells_its_players(server: Server) -> None:
    started(server)
    assert referee(server, "CANCEL g1") == ["game g1 cancelled; 5 players told"]
    assert game_row(server).status == "cancelled"
    assert "cancel" in last_text(server, PLAYERS[2]).lower()
