"""A known player's desk commands (pbem.commands.player_desk) through the registry: SAY,
ABSENT, DEFAULT, HISTORY, ORDERS, RECORD on a real SQLite file database."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from pbem.runner.server import Server
from pbem.store.models import Absence, TalkMessage
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, last_text, subjects
from testkit.desk import player as player_row
from testkit.deskrun import player, referee

ANN, BOB = PLAYERS[0], PLAYERS[1]


@pytest.fixture
def started(server: Server) -> Server:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), "START g1")
    return server


def test_say_relays_every_say_line_of_the_mail_once(started: Server) -> None:
    out = player(started, ANN, "SAY Nobody has", "SAY three stars.", game="g1")
    assert out == [f"{ANN} said 23 characters in g1", "relayed with the first SAY line"]
    assert subjects(started, BOB)[-1] == "[bluff g1] table talk from Name1"
    assert "Nobody has three stars." in last_text(started, BOB)
    with Session(started.engine) as session:
        assert [t.text for t in session.exec(select(TalkMessage))] == [
            "Nobody has\nthree stars."]


def test_absent_notes_the_days_and_none_clears_them(started: Server) -> None:
    out = player(started, ANN, "ABSENT 2026-12-10 2026-12-12", game="g1")
    assert out == [f"{ANN} away 2026-12-10 to 2026-12-12"]
    with Session(started.engine) as session:
        assert len(session.exec(select(Absence)).all()) == 1
    assert player(started, ANN, "ABSENT NONE", game="g1") == [f"absences of {ANN} cleared"]
    with Session(started.engine) as session:
        assert session.exec(select(Absence)).all() == []


def test_default_sets_the_standing_order(started: Server) -> None:
    assert player(started, ANN, "DEFAULT CHALLENGE", game="g1") == [
        f"standing order of {ANN} in g1: CHALLENGE"]
    assert player_row(started, ANN).default_order == "CHALLENGE"
    player(started, ANN, "DEFAULT NONE", game="g1")
    assert player_row(started, ANN).default_order is None


def test_history_and_orders_answer_the_player(started: Server) -> None:
    assert player(started, ANN, "HISTORY", game="g1") == ["history sent (0 lines)"]
    assert "No move has been played yet." in last_text(started, ANN)
    assert player(started, ANN, "ORDERS", game="g1") == ["orders sent"]
    assert "you have no order in yet" in last_text(started, ANN)


def test_record_of_a_running_game_is_refused_with_the_line(started: Server) -> None:
    with pytest.raises(Refusal) as refused:
        player(started, ANN, "RECORD g1")            # anyone may ask; the game is not over
    problem = refused.value.problems[0]
    assert (problem.line_no, problem.line) == (1, "RECORD g1")
    assert problem.message.startswith("game g1 is not over")


def test_desk_commands_need_a_known_player(started: Server) -> None:
    for line in ("SAY hi", "ABSENT NONE", "DEFAULT RAISE", "HISTORY", "ORDERS"):
        with pytest.raises(Refusal, match="needs to know who you are"):
            player(started, ANN, line)
