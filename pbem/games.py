"""Game operations on the database: create, seat, start, take orders, resolve turns.

The state of a game is never stored: it is rebuilt from the seed and the
recorded moves (pbem.rules.record.replay), so the record is the one source
of truth. Every function here works inside the caller's transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from pbem.models import Game, Move, PendingOrder, Player
from pbem.rules.dice import DiceStream, commitment
from pbem.rules.moves import BidMove, move_from_json, move_to_json
from pbem.rules.moves import Move as RulesMove
from pbem.rules.postal import PLAYERS, BidPlaced, PostalState, apply_turn
from pbem.rules.record import GameRecord, RecordedMove, draw_seats, replay, result_json
from pbem.rules.robot import choose_move
from pbem.rules.ruleset import RuleSet
from pbem.rules.view import holdings


class GameError(Exception):
    """A referee or player request that cannot be done (said to them politely)."""


def find_game(session: Session, name: str) -> Game:
    game = session.exec(select(Game).where(Game.name == name)).first()
    if game is None:
        raise GameError(f"there is no game called '{name}'")
    return game


def players_of(session: Session, game: Game) -> list[Player]:
    return list(session.exec(select(Player).where(Player.game_id == game.id)
                             .order_by(col(Player.entrant))))


def seated(session: Session, game: Game) -> dict[int, Player]:
    return {p.seat: p for p in players_of(session, game) if p.seat is not None}


def stream_of(game: Game) -> DiceStream:
    return DiceStream(bytes.fromhex(game.seed_hex))


def rules_of(game: Game) -> RuleSet:
    return RuleSet.from_json(json.loads(game.rules_json))


def recorded_moves(session: Session, game: Game) -> list[RecordedMove]:
    rows = session.exec(select(Move).where(Move.game_id == game.id)
                        .order_by(col(Move.turn), col(Move.seat)))
    return [RecordedMove(r.turn, r.seat, r.minigame, move_from_json(json.loads(r.move_json)),
                         r.by, tuple(json.loads(r.rerolled_json))) for r in rows]


def load_state(session: Session, game: Game) -> PostalState:
    return replay(rules_of(game), stream_of(game), recorded_moves(session, game))


def create_game(session: Session, name: str, *, seed: bytes, now: datetime,
                turn_hours: float | None = None, rules: RuleSet | None = None) -> Game:
    if session.exec(select(Game).where(Game.name == name)).first() is not None:
        raise GameError(f"a game called '{name}' exists already")
    game = Game(name=name, rules_json=json.dumps((rules or RuleSet()).to_json()),
                seed_hex=seed.hex(), commitment=commitment(seed), turn_hours=turn_hours,
                created_at=now)
    session.add(game)
    session.flush()
    return game


def add_player(session: Session, game: Game, email: str, name: str) -> Player:
    if game.status != "new":
        raise GameError(f"game '{game.name}' has started: players can no longer be added")
    players = players_of(session, game)
    email = email.lower()
    if any(p.email == email for p in players):
        raise GameError(f"{email} plays in '{game.name}' already")
    if len(players) >= PLAYERS:
        raise GameError(f"game '{game.name}' has its {PLAYERS} players already")
    player = Player(game_id=game.id, entrant=len(players) + 1, email=email,
                    name=name or email.partition("@")[0], key=secrets.token_hex(8))
    session.add(player)
    session.flush()
    return player


def start_game(session: Session, game: Game, now: datetime) -> None:
    if game.status != "new":
        raise GameError(f"game '{game.name}' has started already")
    players = players_of(session, game)
    if len(players) != PLAYERS:
        raise GameError(f"a postal game needs {PLAYERS} players; '{game.name}' has {len(players)}")
    for player, seat in zip(players, draw_seats(stream_of(game), len(players))):
        player.seat = seat
        session.add(player)
    game.status = "running"
    game.turn = 1
    game.started_at = now
    game.deadline = next_deadline(game, now)
    session.add(game)


def next_deadline(game: Game, now: datetime) -> datetime | None:
    return None if game.turn_hours is None else now + timedelta(hours=game.turn_hours)


def pending_orders(session: Session, game: Game) -> dict[int, PendingOrder]:
    rows = session.exec(select(PendingOrder).where(PendingOrder.game_id == game.id,
                                                   PendingOrder.turn == game.turn))
    return {r.seat: r for r in rows}


def record_order(session: Session, game: Game, seat: int, move: RulesMove, *, now: datetime,
                 inbound_id: int | None, by: str = "player") -> PendingOrder | None:
    """Store seat's order for the turn in play; return the order it replaces, if any."""
    earlier = pending_orders(session, game).get(seat)
    replaced = None
    if earlier is not None:
        replaced = PendingOrder(**earlier.model_dump())
        session.delete(earlier)
        session.flush()
    session.add(PendingOrder(game_id=game.id, turn=game.turn, seat=seat,
                             move_json=json.dumps(move_to_json(move)), by=by,
                             inbound_id=inbound_id, created_at=now))
    session.flush()
    return replaced


def robot_rng(game: Game, turn: int, seat: int) -> random.Random:
    """The robot's choices come from the seed too, so a replay makes the same ones."""
    digest = hmac.new(bytes.fromhex(game.seed_hex), f"robot/{turn}/{seat}".encode(),
                      hashlib.sha256).digest()
    return random.Random(int.from_bytes(digest, "big"))


@dataclass
class TurnOutcome:
    played_for: dict[int, RulesMove]       # seat -> move the robot made for a missing order
    state: PostalState


def resolve_turn(session: Session, game: Game, now: datetime) -> TurnOutcome:
    """Apply the turn's orders (the robot plays for missing ones) and advance."""
    if game.status != "running":
        raise GameError(f"game '{game.name}' is not running")
    state = load_state(session, game)
    orders = pending_orders(session, game)
    moves: dict[int, RulesMove] = {}
    by: dict[int, str] = {}
    played_for: dict[int, RulesMove] = {}
    for seat, minigame in state.due().items():
        order = orders.get(seat)
        if order is not None:
            moves[seat] = move_from_json(json.loads(order.move_json))
            by[seat] = order.by
        else:
            moves[seat] = played_for[seat] = choose_move(
                state.seat_view(seat, minigame), robot_rng(game, game.turn, seat))
            by[seat] = "robot"
    after, events = apply_turn(state, moves, stream_of(game))
    dealt = {e.seat: e.rerolled for e in events if isinstance(e, BidPlaced)}
    due = state.due()
    for seat, move in moves.items():
        session.add(Move(game_id=game.id, turn=game.turn, seat=seat, minigame=due[seat],
                         move_json=json.dumps(move_to_json(move)), by=by[seat],
                         rerolled_json=json.dumps(list(dealt.get(seat, ())) if
                                                  isinstance(move, BidMove) else []),
                         created_at=now))
    for order in orders.values():
        session.delete(order)
    game.turn = after.turn
    if after.game_over:
        game.status = "over"
        game.ended_at = now
        game.deadline = None
    else:
        game.deadline = next_deadline(game, now)
    session.add(game)
    session.flush()
    return TurnOutcome(played_for, after)


def export_record(session: Session, game: Game) -> GameRecord:
    players = players_of(session, game)
    state = load_state(session, game) if game.status in ("running", "over") else None
    over = state is not None and state.game_over
    return GameRecord(
        game=game.name, rules=rules_of(game), commitment=game.commitment,
        entrants=[p.name for p in players], seats=[p.seat or 0 for p in players],
        moves=recorded_moves(session, game), seed=game.seed_hex if over else None,
        result=result_json(state) if over and state is not None else None)


def player_view(game: Game, players: dict[int, Player], state: PostalState,
                seat: int | None) -> dict[str, Any]:
    """The pbem.bluff.view/1 document for one seat (None: the public view)."""
    rules_part = holdings(state, seat)
    virtual = rules_part.pop("virtual_dice")
    player = players.get(seat) if seat is not None else None
    return {
        "format": "pbem.bluff.view/1",
        "game": game.name,
        "turn": state.turn,
        "deadline": game.deadline.strftime("%Y-%m-%dT%H:%M:%SZ") if game.deadline else None,
        "you": seat,
        "key": player.key if player is not None else None,
        "players": [{"number": s, "name": players[s].name, "virtual_dice": virtual[str(s)]}
                    for s in sorted(players)],
        **rules_part,
        "commitment": game.commitment,
    }
