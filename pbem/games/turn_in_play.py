"""The turn in play: the orders in for it (read, written and deleted by Core statements,
kept right in a transaction's memo), the seats still owing one, and what a transaction
knows of a game (GameFacts), read once and handed down.

Works inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar, overload

from sqlalchemy import bindparam, insert
from sqlmodel import col, delete, select

from pbem.games.records import id_of, players_of
from pbem.games.states import load_state
from pbem.kinds import GameKind, kind_of
from pbem.kinds.options import GameOptions, options_of
from pbem.store.engines import core_read
from pbem.store.models import PendingOrder
from pbem.store.rows import (
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


def _remember_orders(session: Work, game: GameView, orders: list[OrderIn]) -> None:
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
        _remember_orders(session, game, [o for o in orders.values() if o.id not in gone])
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
    _remember_orders(session, game, list(orders.values()))
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
