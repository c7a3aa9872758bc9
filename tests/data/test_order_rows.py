"""A mail's game and players as rows (pbem.store.rows): read once, written by statement.

- a player's order mail reads its game's players once (with what each address chose
  anywhere: the answer's and the reports' language need no read of their own), by the
  statement that reads its game; a turn writes the game by one UPDATE;
- what is written by statement and an ORM object of the same row that the session holds
  (the referee's commands, the clock) never disagree;
- the reader's language and zone from a player's row are the ones Post.reader_of reads.
"""

from __future__ import annotations

import json
from email import message_from_bytes
from pathlib import Path
from typing import Any

from sqlalchemy import event, update
from sqlmodel import col, select

from pbem.games.records import find_game, players_of, read_game, update_players
from pbem.games.turn_in_play import pending_orders
from pbem.runner.server import Server
from pbem.services.turns import TurnChange, settle
from pbem.store.models import Player, TalkMessage
from pbem.store.work import Work
from testkit.desk import (
    PLAYERS,
    Clock,
    game_turn,
    key_of,
    make_server,
    outbox_rows,
    raise_line,
    seat_of,
    send,
    started_game,
)


def _statements(server: Server) -> tuple[list[str], Any]:
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen.append(" ".join(statement.split()))
    event.listen(server.engine, "before_cursor_execute", count)
    return seen, count


def test_an_order_mail_reads_its_players_once_and_its_game_once(tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock())
    started_game(server)
    bodies = {email: f"GAME g1\nKEY {key_of(server, email)}\n"
                     f"{raise_line(server, seat_of(server, email))}\n" for email in PLAYERS}
    seen, count = _statements(server)
    try:
        for email in PLAYERS:   # a whole turn: the last order plays it
            assert "order" in send(server, email, bodies[email]).lower()
    finally:
        event.remove(server.engine, "before_cursor_execute", count)
    assert game_turn(server) == 2
    handled = seen
    player_reads = [s for s in handled if s.startswith("SELECT") and " FROM player " in s]
    game_reads = [s for s in handled if s.startswith("SELECT") and " FROM game " in s]
    assert len(player_reads) == len(PLAYERS)
    assert all("anon_1" in s for s in player_reads)   # with what each address chose
    assert len(game_reads) == len(PLAYERS)
    assert game_reads == player_reads   # one statement (tests/data/test_order_statements.py)
    assert len([s for s in handled if s.startswith("UPDATE game ")]) == 1
    assert [s for s in handled if s.startswith("UPDATE player ")] == []   # nobody missed


def test_a_turn_written_by_statement_agrees_with_the_object_held(tmp_path: Path) -> None:
    """The referee's PROCESS holds the game's object: the turn is written by an UPDATE, and
    the object says what the row says."""
    server = make_server(tmp_path, Clock())
    started_game(server)
    with Work(server.engine) as session:
        game = find_game(session, "g1")   # the object, as a referee's command holds it
        played = settle(session, server.referee.post, TurnChange(game, "process"))
        assert played is not None
        stored = read_game(session, played.facts.game.id)
        assert stored is not None
        assert game.turn == played.facts.game.turn == stored.turn == 2
        assert game.status == stored.status == "running"
        session.commit()
    assert game_turn(server) == 2


def test_players_written_by_statement_keep_the_memo_and_the_objects(tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock())
    started_game(server)
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        held = session.exec(select(Player).where(col(Player.game_id) == game.id,
                                                 col(Player.seat) == 1)).one()
        rows = players_of(session, game)
        others = [p for p in rows if p.id != held.id]
        after = update_players(session, game, {held.id: {"missed_turns": 2},
                                               others[0].id: {"missed_turns": 2},
                                               others[1].id: {"default_order": "RAISE"}})
        assert held.missed_turns == 2                      # the object held agrees
        assert players_of(session, game) == after          # the memo is what was written
        session.forget()
        assert players_of(session, game) == after          # and so is a fresh read
        changed = {p.id for p in after} - {p.id for p in after if p in rows}
        assert changed == {held.id, others[0].id, others[1].id}
        session.commit()


def test_the_reader_from_a_players_row_is_the_one_read(tmp_path: Path) -> None:
    """What an address chose in any game comes with its player's row (PlayerRow.chosen):
    the language and zone of mail to it are those Post.reader_of reads for itself."""
    server = make_server(tmp_path, Clock())
    started_game(server)
    started_game(server, name="g2")
    started_game(server, "LANGUAGE cs", name="g3")
    with Work(server.engine) as session:
        g1, g2 = find_game(session, "g1"), find_game(session, "g2")
        for email, values in ((PLAYERS[0], {"language": "de"}),
                              (PLAYERS[1], {"timezone": "Europe/Prague"}),
                              (PLAYERS[2], {"language": "cs", "timezone": "Asia/Tokyo"})):
            session.execute(update(Player).where(col(Player.game_id) == g2.id,
                                                 col(Player.email) == email).values(values))
        session.execute(update(Player).where(col(Player.game_id) == g1.id,
                                             col(Player.email) == PLAYERS[2])
                        .values(language="en"))
        session.forget()
        post = server.referee.post
        for name in ("g1", "g2", "g3"):
            game = find_game(session, name)
            for player in players_of(session, game):
                assert (post.reader_of(session, player.email, game, player=player,
                                       chosen=player.chosen)
                        == post.reader_of(session, player.email, game, player=player))
        chosen = {p.email: p.chosen for p in players_of(session, g1)}
        assert chosen[PLAYERS[0]] == ("de", None)
        assert chosen[PLAYERS[1]] == (None, "Europe/Prague")
        assert chosen[PLAYERS[2]][1] == "Asia/Tokyo"


def test_the_rows_hold_every_column_of_their_tables() -> None:
    """GameRow and PlayerRow name the tables' columns by hand (a frozen dataclass, for
    mypy); a column added to the model and not to its row would be read by no mail."""
    from pbem.store.models import Game, Player
    from pbem.store.rows import GAME_COLUMNS, PLAYER_COLUMNS

    assert GAME_COLUMNS == tuple(c.name for c in Game.__table__.columns)
    assert PLAYER_COLUMNS == tuple(c.name for c in Player.__table__.columns)


def test_a_move_alone_takes_no_savepoint_and_a_mail_of_more_is_still_all_or_none(
        tmp_path: Path) -> None:
    """A mail of move lines alone runs without a savepoint (two statements an order): its
    refusals all come before its one write. A mail with a desk command as well still runs
    in one, so a refused move takes the desk command's write back with it."""
    server = make_server(tmp_path, Clock())
    started_game(server)
    first, second = PLAYERS[0], PLAYERS[1]
    seen, count = _statements(server)
    try:
        assert "order" in send(server, first, f"GAME g1\nKEY {key_of(server, first)}\n"
                                              f"{raise_line(server, seat_of(server, first))}\n"
                               ).lower()
        assert not [s for s in seen if s.startswith(("SAVEPOINT", "RELEASE"))]
        refused = send(server, second, f"GAME g1\nKEY {key_of(server, second)}\nEXPOSE 3\n")
        assert "EXPOSE goes with a BID" in refused
        seen.clear()
        refused = send(server, second, f"GAME g1\nKEY {key_of(server, second)}\n"
                                       f"SAY the first words\nEXPOSE 3\n")
        assert "EXPOSE goes with a BID" in refused
        assert [s.split()[0] for s in seen if s.startswith(("SAVEPOINT", "ROLLBACK TO"))] \
            == ["SAVEPOINT", "ROLLBACK"]
    finally:
        event.remove(server.engine, "before_cursor_execute", count)
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        assert set(pending_orders(session, game)) == {seat_of(server, first)}
        assert session.exec(select(TalkMessage)).all() == []   # the SAY went with the move


def test_a_turns_reports_are_queued_together_each_row_with_its_own_bytes(
        tmp_path: Path) -> None:
    """The last order of a turn queues the five reports at once: on SQLite their rows in
    one INSERT and their bytes in one executemany (ten statements one by one), their ids
    in seat order as before, each row with its own mail's bytes."""
    server = make_server(tmp_path, Clock())
    started_game(server)
    for email in PLAYERS[:-1]:
        send(server, email, f"GAME g1\nKEY {key_of(server, email)}\n"
                            f"{raise_line(server, seat_of(server, email))}\n")
    last = PLAYERS[-1]
    body = f"GAME g1\nKEY {key_of(server, last)}\n{raise_line(server, seat_of(server, last))}\n"
    before = {row.id for row in outbox_rows(server)}
    seen, count = _statements(server)
    try:
        send(server, last, body)
    finally:
        event.remove(server.engine, "before_cursor_execute", count)
    assert game_turn(server) == 2
    inserts = [s for s in seen if s.startswith(("INSERT INTO outbound_mail",
                                                "INSERT INTO outbound_body"))]
    assert len(inserts) == 4   # the answer's row and bytes; the reports' rows, their bytes
    reports = [row for row in outbox_rows(server) if row.id not in before
               and row.kind == "report"]
    assert [row.seat for row in reports] == sorted(seat_of(server, e) for e in PLAYERS)
    assert [row.id for row in reports] == sorted(row.id for row in reports)
    for row in reports:   # each row's bytes are its own mail's
        mail = message_from_bytes(row.raw)
        assert mail["Message-ID"] == row.message_id
        assert [mail["To"]] == json.loads(row.rcpts_json)
