"""The referee's seat commands (pbem.commands.seats) through the registry: PREVIEW,
ORDER, REPLACE, RESEND on a real SQLite file database."""

from __future__ import annotations

import pytest

from pbem.runner.server import Server
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, by_seat, moves_of, outbox_rows, raise_line, seat_of, subjects
from testkit.deskrun import referee


def started(server: Server) -> None:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), "START g1")


def test_preview_stores_nothing(server: Server) -> None:
    started(server)
    sent = len(outbox_rows(server))
    out = referee(server, "PREVIEW g1")[0]
    assert out.startswith("game g1, turn 1: if the turn were resolved now")
    assert "(no order: " in out and "turn 2 would begin" in out
    assert moves_of(server) == [] and len(outbox_rows(server)) == sent


def test_order_records_a_pending_order_on_the_players_behalf(server: Server) -> None:
    started(server)
    seat = seat_of(server, PLAYERS[1])
    out = referee(server, f"ORDER g1 {seat} {raise_line(server, seat)}")[0]
    assert f"order for player {seat}" in out
    assert "the referee entered your order" in subjects(server, PLAYERS[1])[-1]


@pytest.mark.parametrize(("line", "said"), [
    ("ORDER g1 9 CHALLENGE", "ORDER g1 9 CHALLENGE: game 'g1' has no player in seat 9"),
    ("ORDER g1 {seat} BID 3 sevens", "ORDER g1 {seat} BID 3 sevens: 'BID 3 sevens': 'sevens' "
     "is not a die face (a face is 1 to 5 (or one..five, 1s..5s) or star / *)"),
])
def test_order_refusals_quote_the_referees_line(server: Server, line: str, said: str) -> None:
    started(server)
    seat = seat_of(server, PLAYERS[1])
    with pytest.raises(Refusal) as refused:
        referee(server, line.format(seat=seat))
    assert refused.value.problems[0].line == line.format(seat=seat)
    assert str(refused.value) == said.format(seat=seat)


def test_an_illegal_order_is_the_kinds_refusal_with_the_referees_line(server: Server) -> None:
    started(server)
    # every seat but the opener's (postal: all five move each turn) may not challenge yet
    seat = seat_of(server, PLAYERS[1])
    with pytest.raises(Refusal) as refused:
        referee(server, f"ORDER g1 {seat} EXPOSE 3")
    problem = refused.value.problems[0]
    assert problem.line == f"ORDER g1 {seat} EXPOSE 3" and problem.hint


def test_replace_gives_the_seat_to_a_new_player(server: Server) -> None:
    started(server)
    seat = seat_of(server, PLAYERS[2])
    out = referee(server, f"REPLACE g1 {seat} new@example.org Newcomer")[0]
    assert f"Newcomer <new@example.org> replaces Name3 <{PLAYERS[2]}>" in out
    assert by_seat(server)[seat].email == "new@example.org"
    assert any("turn 1" in s for s in subjects(server, "new@example.org"))


def test_resend_sends_the_latest_report_again(server: Server) -> None:
    started(server)
    seat = seat_of(server, PLAYERS[3])
    before = len(outbox_rows(server, PLAYERS[3]))
    assert referee(server, f"RESEND g1 {seat}")[0].startswith(
        "game g1: latest report sent again to player ")
    assert len(outbox_rows(server, PLAYERS[3])) == before + 1
