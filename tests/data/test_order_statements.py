"""The statements of a player's order mail, pinned (issue 50).

- an order mail's handling transaction reads its game, the game's players, the orders in
  for its turn and its recorded moves by ONE statement (pbem.games.turn_in_play.
  game_at_hand), whether it replies to its report or names its game by GAME and KEY; no
  other statement reads them, the turn it completes included (the moves it records join
  the memo: pbem.games.states.record_moves);
- an order's transaction has no more statements than it had when this was pinned (7; 16
  for the order that plays the turn, its report queued with it), on a real SQLite file;
- what that one statement reads (as JSON, on SQLite and on PostgreSQL) is what the plain
  reads of the players, the orders and the moves give, value for value and type for type.
  (PostgreSQL's group of a game's mails: tests/data/test_lane_groups.py.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlmodel import select

from pbem.games.records import find_game, players_of, read_players, update_players
from pbem.games.states import moves_before
from pbem.games.turn_in_play import game_at_hand, pending_orders
from pbem.runner.server import Server
from pbem.store.models import Player
from pbem.store.work import Work
from testkit.desk import (
    PLAYERS,
    Clock,
    admin,
    deliver,
    game_turn,
    key_of,
    mail,
    make_server,
    outbox_rows,
    raise_line,
    seat_of,
    send,
    started_game,
)

ORDER_STATEMENTS = 7           # an order that completes no turn (BEGIN and COMMIT apart)
TURN_ORDER_STATEMENTS = 16     # the order that plays the turn, its reports with it
_FROM = re.compile(r"\bFROM (\w+)")
_INNER = re.compile(r"\([^()]*\)")   # an innermost bracket: a subquery, a call


def transactions(server: Server) -> tuple[list[list[str]], Any]:
    """Every transaction's statements (BEGIN to COMMIT or ROLLBACK), as a list the
    listeners fill; and the function that removes them."""
    seen: list[list[str]] = [[]]

    def statement(conn, cursor, sql, params, context, many) -> None:  # noqa: ANN001
        seen[-1].append(" ".join(sql.split()))

    def ended(conn) -> None:  # noqa: ANN001
        seen.append([])

    listeners = [("before_cursor_execute", statement), ("commit", ended),
                 ("rollback", ended)]
    for name, listener in listeners:
        event.listen(server.engine, name, listener)

    def remove() -> None:
        for name, listener in listeners:
            event.remove(server.engine, name, listener)
    return seen, remove


def order_transaction(seen: list[list[str]]) -> list[str]:
    """The one transaction that recorded an order."""
    found = [t for t in seen if any(s.startswith("INSERT INTO pendingorder") for s in t)]
    assert len(found) == 1, found
    return found[0]


def read_from(statement: str) -> str | None:
    """The table a SELECT reads from, its subqueries' apart."""
    if not statement.startswith("SELECT"):
        return None
    while _INNER.search(statement):
        statement = _INNER.sub(" ", statement)
    found = _FROM.search(statement)
    return found.group(1) if found else None


def reads_of(statements: list[str], table: str) -> list[str]:
    return [s for s in statements if read_from(s) == table]


def assert_one_read_of_the_game(statements: list[str]) -> None:
    games = reads_of(statements, "game")
    assert len(games) == 1, games
    assert all(f"FROM {t} " in games[0] for t in ("player", "pendingorder", "move"))
    for table in ("player", "pendingorder", "move"):
        assert reads_of(statements, table) == [], table


def test_an_order_replying_to_its_report_reads_its_game_by_one_statement(
        tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock())
    started_game(server)
    lines = {email: raise_line(server, seat_of(server, email)) for email in PLAYERS}
    reports = {email: [r for r in outbox_rows(server, email) if r.kind == "report"][-1]
               for email in PLAYERS}
    for n, email in enumerate(PLAYERS, start=1):   # a whole turn: the fifth plays it
        seen, remove = transactions(server)
        try:
            deliver(server, mail(email, lines[email] + "\n",
                                 in_reply_to=reports[email].message_id))
        finally:
            remove()
        handled = order_transaction(seen)
        assert_one_read_of_the_game(handled)
        assert len(handled) <= (ORDER_STATEMENTS if n < 5 else TURN_ORDER_STATEMENTS), handled
    assert game_turn(server) == 2
    with Work(server.engine) as session:   # every order applied once: the turn's five moves
        assert len([m for m in moves_before(session, find_game(session, "g1")) if m[0] == 1]) == 5


def test_an_order_naming_its_game_reads_it_by_one_statement(tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock())
    started_game(server)
    email = PLAYERS[0]
    body = f"GAME g1\nKEY {key_of(server, email)}\n{raise_line(server, seat_of(server, email))}\n"
    seen, remove = transactions(server)
    try:
        assert "order" in send(server, email, body).lower()
    finally:
        remove()
    handled = order_transaction(seen)
    assert_one_read_of_the_game(handled)
    assert len(handled) <= ORDER_STATEMENTS, handled


def test_the_game_read_at_hand_gives_what_the_plain_reads_give(database: str,
                                                               tmp_path: Path) -> None:
    """Players with a language, a zone, days away and one replaced (a boolean, a float and
    the addresses' choices as JSON gives them), orders in with their times, and a turn's
    moves: read by the one statement, then each by its own read in a transaction of its
    own. ``game_at_hand`` of a game that is not there: None."""
    server = make_server(tmp_path, Clock(), database=database)
    started_game(server)
    admin(server, "PROCESS g1")   # turn 1's moves recorded: the game at turn 2
    admin(server, "REPLACE g1 2 newbie@example.org Newbie")
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        first = next(p for p in players_of(session, game) if p.seat == 1)
        update_players(session, game, {first.id: {"language": "de", "timezone": "Europe/Prague",
                                                  "absent_days_used": 1.5}})
        session.commit()
    for email in PLAYERS[2:4]:
        body = (f"GAME g1\nKEY {key_of(server, email)}\n"
                f"{raise_line(server, seat_of(server, email))}\n")
        send(server, email, body)   # (one of them in German: seat 1's language)
    with Work(server.engine) as session:
        game_id = find_game(session, "g1").id
        at_hand = game_at_hand(session, game_id)
        assert at_hand is not None and at_hand.turn == 2
        players, orders = players_of(session, at_hand), pending_orders(session, at_hand)
        moves = moves_before(session, at_hand)
        assert game_at_hand(session, name="g1") == at_hand
        assert game_at_hand(session, game_id + 1) is None
        assert game_at_hand(session, name="nothing") is None
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        assert players == read_players(session, game)
        assert orders == pending_orders(session, game) and len(orders) == 2
        assert [tuple(m) for m in moves] == [tuple(m) for m in moves_before(session, game)]
        assert len(moves) == 5
        assert len(session.exec(select(Player)).all()) == len(players) == 6
    assert [p.active for p in players].count(False) == 1
    for player in players:
        assert type(player.active) is bool and type(player.absent_days_used) is float
    assert next(p for p in players if p.seat == 1).chosen == ("de", "Europe/Prague")
    assert {type(o.created_at).__name__ for o in orders.values()} == {"datetime"}
