"""The turn in play: the orders in for it (read, written and deleted by Core statements,
kept right in a transaction's memo), the seats still owing one, and what a transaction
knows of a game (GameFacts), read once and handed down.

Works inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Generic, NamedTuple, TypeVar, overload

from sqlalchemy import Text, bindparam, cast, func, insert
from sqlalchemy import select as sa_select
from sqlmodel import col, delete, select

from pbem.games.records import (
    PLAYER_READ,
    id_of,
    known_players,
    players_of,
    read_game,
    remember_players,
)
from pbem.games.states import load_state, remember_moves
from pbem.kinds import GameKind, kind_of
from pbem.kinds.options import GameOptions, options_of
from pbem.store.engines import core_read
from pbem.store.models import Game, Move, PendingOrder, Player
from pbem.store.rows import (
    GAME_COLUMNS,
    PLAYER_COLUMNS,
    GameRow,
    GameView,
    PlayerRow,
    game_row,
)
from pbem.store.work import Work

S = TypeVar("S")   # a kind's state
M = TypeVar("M")   # a kind's move


def _orders_key(game: GameView) -> tuple[str, int | None, int]:
    return ("orders", game.id, game.turn)


# The orders of the turn in play are read, written and deleted as Core statements (each
# order of a mail is read, written and, at the turn's end, deleted: as ORM work that was a
# quarter of a mail's handling), read as plain rows (OrderIn), not objects: the statements
# that write keep the memo right themselves.
class OrderIn(NamedTuple):
    """An order in for the turn in play: a row of pending_order, as read (no ORM object:
    building one cost more than reading the row)."""

    id: int
    game_id: int
    turn: int
    seat: int
    move_json: str
    by: str
    inbound_id: int | None
    created_at: datetime


_TURN_ORDERS = select(*(getattr(PendingOrder, name) for name in OrderIn._fields)).where(
    col(PendingOrder.game_id) == bindparam("game"), col(PendingOrder.turn) == bindparam("turn"))
_ADD_ORDER = insert(PendingOrder).returning(col(PendingOrder.id))
_DROP_ORDERS = delete(PendingOrder).where(
    col(PendingOrder.id).in_(bindparam("ids", expanding=True)))


def remember_orders(session: Work, game: GameView, orders: list[OrderIn]) -> None:
    """The orders of the turn in play as a write just left them (a unit of work's memo)."""
    session.memo[_orders_key(game)] = orders


def pending_orders(session: Work, game: GameView) -> dict[int, OrderIn]:
    """The orders in for the turn in play, by seat (read once a transaction): plain rows,
    changed by ``record_order`` and ``drop_orders``."""
    key = _orders_key(game)
    rows = session.recall(key)
    if rows is None:
        rows = [OrderIn(*row) for row in core_read(
            session, _TURN_ORDERS, {"game": game.id, "turn": game.turn})]
        session.memo[key] = rows
    return {r.seat: r for r in rows}


def drop_orders(session: Work, game: GameView, seats: Iterable[int] | None = None, *,
                facts: GameFacts[S, M] | None = None) -> None:
    """Delete the orders of ``seats`` (None: all) for the turn in play (``facts``: the
    transaction's, which it keeps right)."""
    orders = facts.orders if facts is not None else pending_orders(session, game)
    chosen = None if seats is None else set(seats)
    gone = {o.id for seat, o in orders.items() if chosen is None or seat in chosen}
    if gone:
        session.flush()   # what the session holds goes first, as it would in a flush
        session.connection().execute(_DROP_ORDERS, {"ids": sorted(gone)})
        remember_orders(session, game, [o for o in orders.values() if o.id not in gone])
        if facts is not None:
            for seat in [s for s, o in facts.orders.items() if o.id in gone]:
                del facts.orders[seat]


def missing_seats(session: Work, game: GameView, state: object | None = None) -> list[int]:
    """The seats that owe an order this turn and have none in (state: if already loaded)."""
    if state is None:
        state = load_state(session, game)
    return sorted(set(kind_of(game).due_seats(state)) - set(pending_orders(session, game)))


def record_order(session: Work, game: GameView, seat: int, move: M, *, now: datetime,
                 inbound_id: int | None, by: str = "player",
                 facts: GameFacts[Any, M] | None = None) -> OrderIn | None:
    """Store seat's order for the turn in play; return the order it replaces, if any
    (``facts``: the transaction's, which it keeps right)."""
    replaced = (facts.orders if facts is not None else pending_orders(session, game)).get(seat)
    if replaced is not None:
        drop_orders(session, game, [seat], facts=facts)
    kind = facts.kind if facts is not None else kind_of(game)
    values: dict[str, Any] = {"game_id": id_of(game), "turn": game.turn, "seat": seat,
              "move_json": json.dumps(kind.move_to_json(move)), "by": by,
              "inbound_id": inbound_id, "created_at": now}
    session.flush()
    order_id = session.connection().execute(_ADD_ORDER, values).scalar_one()
    assert order_id is not None
    # the memo as it now is: the next look at the orders reads nothing
    orders = facts.orders if facts is not None else pending_orders(session, game)
    orders[seat] = OrderIn(id=order_id, **values)
    remember_orders(session, game, list(orders.values()))
    return replaced


# --- what a transaction knows of a game -----------------------------------------------------

@dataclass
class GameFacts(Generic[S, M]):
    """What one transaction knows of a game: read once (``facts_of``) by the step that
    needs them and handed down explicitly, so that no step below asks again. What changes
    them in the transaction keeps them right: record_order and drop_orders (``facts=``),
    the turn played (pbem.services.turns.resolve_turn: ``state``). A command that changes
    the options or the seats reads them anew."""

    game: GameRow                    # as the transaction has written it
    kind: GameKind[S, M]
    options: GameOptions
    players: list[PlayerRow]         # every player, replaced ones too (players_of)
    orders: dict[int, OrderIn]       # the orders in for the turn in play, by seat
    state: S | None                  # the turn in play's state (None: not started)

    @property
    def seated(self) -> dict[int, PlayerRow]:
        """seat -> the player who holds it now (as ``seated``)."""
        return {p.seat: p for p in self.players if p.seat is not None and p.active}

    def missing(self) -> list[int]:
        """The seats that owe an order this turn and have none in (as missing_seats)."""
        return sorted(set(self.kind.due_seats(self.started)) - set(self.orders))

    @property
    def started(self) -> S:
        """The turn in play's state, of a game that has started."""
        assert self.state is not None, f"game {self.game.name} has not started"
        return self.state


@overload
def facts_of(session: Work, game: GameView, kind: GameKind[S, M]) -> GameFacts[S, M]: ...
@overload
def facts_of(session: Work, game: GameView, kind: None = None) -> GameFacts[Any, Any]: ...
def facts_of(session: Work, game: GameView,
             kind: GameKind[S, M] | None = None) -> GameFacts[S, M] | GameFacts[Any, Any]:
    """Read what the transaction knows of ``game`` (its ``kind``: if the caller has it;
    without it, the kind looked up by name, whose state and move no caller knows)."""
    if kind is None:
        return facts_of(session, game, kind_of(game))
    players = players_of(session, game)
    started = game.started_at is not None
    state = (load_state(session, game, kind=kind,
                        seats=len({p.seat for p in players if p.seat is not None}))
             if started else None)
    return GameFacts(game_row(game), kind, options_of(game), players,
                     pending_orders(session, game) if started else {}, state)


# --- a game read with what a handling reads of it -------------------------------------------
#
# A player's mail reads its game, then (once a transaction) its players, the orders in for
# its turn and its recorded moves: four statements, each a round trip and SQLAlchemy's
# execution around it. ``game_at_hand`` reads all four in one: the game's row, and beside
# it the three others' rows as JSON arrays (scalar subqueries: SQLite's json_group_array,
# PostgreSQL's json_agg, as text), put in the transaction's memo where players_of,
# pending_orders and moves_before find them. Values come back as JSON has them: a boolean
# as 0/1 on SQLite, a float without its point on PostgreSQL, a time as ISO text (without
# its zone on SQLite, in the session's on PostgreSQL); each is made what the plain read
# gives (``_player``, ``_order``). The arrays' order is not
# promised by either database: the rows are sorted as the plain reads order them.

_ACTIVE_AT, _DAYS_AT = PLAYER_COLUMNS.index("active"), PLAYER_COLUMNS.index("absent_days_used")


def _rows_of(dialect: str, columns: Sequence[Any], *where: Any) -> Any:
    """A scalar subquery of the game's rows of ``columns`` (where ``where``) as one JSON
    array of arrays, text on either database ("[]" or NULL when there are none)."""
    rows: Any = (func.json_group_array(func.json_array(*columns)) if dialect == "sqlite"
                 else cast(func.json_agg(func.json_build_array(*columns)), Text))
    return sa_select(rows).where(*where).correlate(Game).scalar_subquery()


@lru_cache(maxsize=8)
def _game_at_hand(dialect: str, by: str) -> Any:
    """The game (by id or name) with its players, orders in and moves, for ``dialect``."""
    players = _rows_of(dialect, PLAYER_READ, col(Player.game_id) == col(Game.id))
    orders = _rows_of(dialect, [getattr(PendingOrder, name) for name in OrderIn._fields],
                      col(PendingOrder.game_id) == col(Game.id),
                      col(PendingOrder.turn) == col(Game.turn))
    moves = _rows_of(dialect, [col(Move.turn), col(Move.seat), col(Move.move_json)],
                     col(Move.game_id) == col(Game.id))
    return sa_select(*(getattr(Game, name) for name in GAME_COLUMNS), players, orders,
                     moves).where(getattr(Game, by) == bindparam("key"))


def _player(values: list[Any]) -> PlayerRow:
    values[_ACTIVE_AT], values[_DAYS_AT] = bool(values[_ACTIVE_AT]), float(values[_DAYS_AT])
    return PlayerRow(*values)


def _order(values: list[Any]) -> OrderIn:
    values[-1] = _utc(datetime.fromisoformat(values[-1]))   # created_at
    return OrderIn(*values)


def _utc(when: datetime) -> datetime:
    """A time as its column's type reads it (sqlmodel's UTCDateTime): in UTC, a time
    stored without its zone (SQLite's) taken as UTC."""
    return when.replace(tzinfo=UTC) if when.utcoffset() is None else when.astimezone(UTC)


def game_at_hand(session: Work, game_id: int | None = None,
                 name: str | None = None) -> GameRow | None:
    """The game of that id (or ``name``) as a row, read now, with its players, the orders in
    for its turn and its moves put in the transaction's memo, by one statement; None if
    there is none. A transaction that has read its players already (a group of a game's
    mails, pbem.runner.referee) reads the game alone (records.read_game), by id (a name
    read before is kept with its id: a game keeps its name)."""
    known = game_id if game_id is not None else session.recall(("game named", name))
    if known is not None and known_players(session, known) is not None:
        return read_game(session, known)
    by, key = ("id", game_id) if game_id is not None else ("name", name)
    statement = _game_at_hand(session.connection().dialect.name, by)
    row = core_read(session, statement, {"key": key}).first()
    if row is None:
        return None
    at = len(GAME_COLUMNS)
    game = GameRow(*row[:at])
    session.memo[("game named", game.name)] = game.id
    players, orders, moves = (json.loads(value or "[]") for value in row[at:])
    remember_players(session, game.id, sorted(
        (_player(p) for p in players), key=lambda p: (p.entrant, p.id)))
    remember_orders(session, game, [_order(o) for o in orders])
    remember_moves(session, game, sorted(tuple(m) for m in moves))
    return game
