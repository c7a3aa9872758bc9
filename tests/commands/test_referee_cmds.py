"""The referee's game commands (pbem.commands.referee_cmds) through the registry: NEWGAME,
ADD, START, STATUS, PROCESS, LIST, RETRY on a real SQLite file database."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from pbem.games.records import find_game, players_of
from pbem.runner.server import Server
from pbem.store.work import Work
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, moves_of, raise_line, seat_of, subjects
from testkit.deskrun import referee


def new_game(server: Server, *options: str) -> None:
    referee(server, " ".join(["NEWGAME g1 SEED 3", *options]))
    referee(server, *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)))


def test_newgame_and_add_store_the_game_and_its_players(server: Server) -> None:
    new_game(server)
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        assert (game.status, game.kind) == ("new", "postal")
        assert [p.email for p in players_of(session, game)] == PLAYERS


def test_start_deals_and_mails_every_player_a_report(server: Server) -> None:
    new_game(server)
    out = referee(server, "START g1")
    assert len(out) == 1 and "g1" in out[0]
    with Session(server.engine) as session:
        assert find_game(session, "g1").status == "running"
    assert all(any("turn 1" in s for s in subjects(server, p)) for p in PLAYERS)


def test_status_and_list_say_where_the_game_stands(server: Server) -> None:
    new_game(server)
    referee(server, "START g1")
    status = referee(server, "STATUS g1")[0]
    assert "turn 1" in status and "running" in status
    assert "g1" in referee(server, "LIST")[0]


def test_process_resolves_the_turn_with_the_robot_for_missing_orders(server: Server) -> None:
    new_game(server)
    referee(server, "START g1")
    referee(server, f"ORDER g1 {seat_of(server, PLAYERS[0])} "
                    f"{raise_line(server, seat_of(server, PLAYERS[0]))}")
    referee(server, "PROCESS g1")
    assert {m["by"] for m in moves_of(server, turn=1)} == {"referee", "robot"}


def test_a_refusal_quotes_the_referees_line(server: Server) -> None:
    with pytest.raises(Refusal) as refused:
        referee(server, "START nosuch")
    problem = refused.value.problems[0]
    assert (problem.line_no, problem.line) == (1, "START nosuch")
    assert problem.message == "there is no game called 'nosuch'"
    assert str(refused.value) == "START nosuch: there is no game called 'nosuch'"


def test_the_commands_of_one_run_stop_at_the_first_refusal(server: Server) -> None:
    new_game(server)
    with pytest.raises(Refusal) as refused:
        referee(server, "NEWGAME g2", f"ADD g2 {PLAYERS[0]}", f"ADD g2 {PLAYERS[0]}", "LIST")
    assert refused.value.problems[0].line_no == 3
    assert str(refused.value) == f"ADD g2 {PLAYERS[0]}: {PLAYERS[0]} plays in 'g2' already"
    with Session(server.engine) as session:   # nothing of the run was committed
        with pytest.raises(Refusal, match="no game called 'g2'"):
            find_game(session, "g2")
