"""A game's lane handled several mails a transaction (PostgreSQL: pbem.runner.referee.
Referee.handle_group): one BEGIN and COMMIT, one hold and one ending for the group, each
mail handled as if alone; a mail that fails sends the group back to one mail a
transaction, nothing applied twice. (A kill in the middle of a group: tests/e2e/test_kills.py.)"""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlmodel import Session, col, select

from pbem.runner.server import Server
from pbem.store.models import InboundMail
from testkit.desk import (
    PLAYERS,
    SERVER,
    Clock,
    game_turn,
    key_of,
    mail,
    make_server,
    moves_of,
    outbox_rows,
    raise_line,
    started_game,
)
from testkit.pgstack import PgCluster
from tests.data.test_databases import junk
from tests.data.test_order_statements import read_from

pytestmark = pytest.mark.postgresql


def orders_stored(server: Server, *, talk_after: int | None = None) -> None:
    """Each player's order for the turn stored, not handled (and, after the order of seat
    ``talk_after``, a SAY too long for the index the test adds: a mail that fails)."""
    lines = {seat: raise_line(server, seat) for seat in range(1, 6)}
    for seat, email in enumerate(PLAYERS, start=1):
        body = f"GAME g1\nKEY {key_of(server, email)}\n{lines[seat]}\n"
        assert server.referee.store_inbound(mail(email, body), source="smtp")
        if seat == talk_after:
            msg = EmailMessage()
            msg["From"], msg["To"], msg["Subject"] = email, SERVER, "talk"
            msg["Message-ID"] = "<talk@example.org>"
            msg.set_content(f"GAME g1\nKEY {key_of(server, email)}\nSAY {junk(3000)}\n")
            assert server.referee.store_inbound(msg.as_bytes(policy=policy.SMTP),
                                                source="smtp")


def endings_per_commit(server: Server) -> tuple[list[int], Any]:
    """How many mails' endings (pbem.runner.inbox.finish) each commit wrote, as a list the
    listeners fill; and the function that removes them."""
    ended: list[int] = []
    pending: dict[int, int] = {}

    def statement(conn, cursor, sql, params, context, many) -> None:  # noqa: ANN001
        if sql.startswith("UPDATE inbound_mail SET status=CASE"):
            rows = params if many else [params]
            key = id(conn.connection.dbapi_connection)
            pending[key] = pending.get(key, 0) + sum(1 for p in rows if p["row"])

    def commit(conn) -> None:  # noqa: ANN001
        done = pending.pop(id(conn.connection.dbapi_connection), 0)
        if done:
            ended.append(done)

    event.listen(server.engine, "before_cursor_execute", statement)
    event.listen(server.engine, "commit", commit)

    def remove() -> None:
        event.remove(server.engine, "before_cursor_execute", statement)
        event.remove(server.engine, "commit", commit)
    return ended, remove


def test_a_games_lane_is_handled_in_one_transaction_as_each_mail_alone_would_be(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock(), database=pgcluster.new_database())
    started_game(server)
    answers_before = {p: len(outbox_rows(server, p)) for p in PLAYERS}
    orders_stored(server)
    ended, remove = endings_per_commit(server)
    try:
        assert server.referee.process_pending() == 5
    finally:
        remove()
    assert ended == [5]   # one commit ended the five mails (it was one a mail)
    with Session(server.engine) as session:
        assert set(session.exec(select(InboundMail.status))) == {"done"}
    assert game_turn(server) == 2                  # the fifth order played the turn
    assert len(moves_of(server, 1)) == 5
    for email in PLAYERS:   # each: the answer to its order and the new turn's report
        assert len(outbox_rows(server, email)) == answers_before[email] + 2


def test_a_group_reads_its_games_players_orders_and_moves_once_a_turn(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    """The game's players, orders in and moves are read once a group (the memo's, kept
    right by what writes them, as between two commands of one mail), not once a mail, and
    with the game, by one statement (pbem.games.turn_in_play.game_at_hand); the group's
    other mails read the game alone. Who made the turn's moves, once the fifth order
    played it, is not read back, nor are the moves the turn recorded (the memo's:
    pbem.games.states.record_moves)."""
    server = make_server(tmp_path, Clock(), database=pgcluster.new_database())
    started_game(server)
    orders_stored(server)
    reads: dict[str, int] = {}

    def statement(conn, cursor, sql, params, context, many) -> None:  # noqa: ANN001
        table = read_from(" ".join(sql.split()))
        if table in ("game", "player", "pendingorder", "move"):
            with_rows = table == "game" and "FROM pendingorder" in sql
            key = "game with its rows" if with_rows else table
            reads[key] = reads.get(key, 0) + 1

    event.listen(server.engine, "before_cursor_execute", statement)
    try:
        assert server.referee.process_pending() == 5
    finally:
        event.remove(server.engine, "before_cursor_execute", statement)
    # the players, orders and moves were read 5, 5 and 6 times, then once each; the game
    # alone by each mail's lane given (its GAME line) and by the group's four others
    assert reads == {"game with its rows": 1, "game": 5 + 4}
    assert game_turn(server) == 2 and len(moves_of(server, 1)) == 5


def test_a_mail_that_fails_in_a_group_sends_it_back_to_one_mail_a_transaction(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    """A bug (here: a value past an index's limit) in the third mail of a lane: the group
    is rolled back and its mails handled one at a time; the failing one is kept as
    failed, every other applied once (each order one move, one answer)."""
    server = make_server(tmp_path, Clock(), database=pgcluster.new_database())
    started_game(server)
    with server.engine.begin() as conn:   # SAY keeps 2,000 characters: doubled, past it
        conn.execute(sa.text("CREATE INDEX talk_text ON talk_message ((text || text))"))
    orders_stored(server, talk_after=2)
    ended, remove = endings_per_commit(server)
    try:
        assert server.referee.process_pending() == 6
    finally:
        remove()
    assert ended == [1] * 6   # one mail a transaction after the group failed
    with Session(server.engine) as session:
        mails = list(session.exec(select(InboundMail).order_by(col(InboundMail.id))))[-6:]
    assert [m.status for m in mails] == ["done", "done", "failed", "done", "done", "done"]
    assert game_turn(server) == 2
    assert len(moves_of(server, 1)) == 5           # each order applied once
    answers = [r.inbound_id for r in outbox_rows(server) if r.kind != "report"]
    assert [answers.count(m.id) for m in mails] == [1, 1, 1, 1, 1, 1]   # each answered once
