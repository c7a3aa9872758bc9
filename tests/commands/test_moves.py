"""A player's move order and STATUS (pbem.commands.moves): the move phase read with the
registry's tables, on a real SQLite file database."""

from __future__ import annotations

import pytest

from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.runner.server import Server
from pbem.store.work import Work
from pbem.text.errors import Refusal
from testkit.desk import (
    PLAYERS,
    game_turn,
    last_text,
    order,
    outbox_rows,
    raise_line,
    seat_of,
    started_game,
    subjects,
)
from testkit.deskrun import moves, player, referee

ANN = PLAYERS[0]


def pending(server: Server) -> dict[int, str]:
    with Work(server.engine) as session:
        return {s: o.by for s, o in pending_orders(session, find_game(session, "g1")).items()}


@pytest.fixture
def started(server: Server) -> Server:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), "START g1")
    return server


def test_a_move_is_recorded_and_confirmed(started: Server) -> None:
    seat = seat_of(started, ANN)
    line = raise_line(started, seat)
    out = moves(started, ANN, line)
    assert out.startswith("order accepted: ") and out.endswith(f"(game g1, turn 1, seat {seat})")
    assert pending(started) == {seat: "player"}
    text = last_text(started, ANN)
    assert subjects(started, ANN)[-1] == "[bluff g1] turn 1: order received" and line in text


def test_the_last_order_due_resolves_the_turn(started: Server) -> None:
    for email in PLAYERS:
        moves(started, email, raise_line(started, seat_of(started, email)))
    assert game_turn(started) == 2


@pytest.mark.parametrize(("lines", "said", "line_no"), [
    (("CHALLENGE", "CHALLENGE"), "one move a turn: your mail has more than one BID or "
     "CHALLENGE", 2),
    (("EXPOSE 3",), "EXPOSE goes with a BID in the same mail, never alone", 1),
    (("hello there",), "I found no order in your mail; this line is not an order of "
     "postal Bluff", 1),   # the line that came closest, quoted
])
def test_move_refusals_name_the_game_and_quote_the_line(started: Server, lines: tuple[str, ...],
                                                        said: str, line_no: int | None) -> None:
    with pytest.raises(Refusal) as refused:
        moves(started, ANN, *lines)
    assert refused.value.game == "g1"
    problem = refused.value.problems[0]
    assert problem.message == said and problem.line_no == line_no


def test_status_sends_the_latest_report_again(started: Server) -> None:
    before = len(outbox_rows(started, ANN))
    assert player(started, ANN, "STATUS", game="g1") == ["status sent"]
    assert len(outbox_rows(started, ANN)) == before + 1


def test_status_before_the_start_is_refused(server: Server) -> None:
    referee(server, "NEWGAME g1", f"ADD g1 {ANN}")
    with pytest.raises(Refusal, match="game g1 has not started"):
        player(server, ANN, "STATUS", game="g1")


def test_another_kinds_order_gets_one_answer_quoting_it(server: Server) -> None:
    """Cup of Bluff and `BID 4 fives`: one problem, the line quoted, why, and the fix (not
    "I found no order" and "this line is not an order" apart)."""
    started_game(server, "RULES cup", name="c1")
    answer = order(server, PLAYERS[0], "BID 4 fives", name="c1")
    said = "> line 3: BID 4 fives I found no order in your mail; BID is not an order of " \
           "Cup of Bluff Fix: write one order a line, e.g. ANNOUNCE"
    assert said in answer
    assert answer.count("I found no order") == 1 and answer.count("Fix:") == 1
    assert answer.count("BID 4 fives") == 1
