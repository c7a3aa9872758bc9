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
from dataclasses import dataclass
from itertools import groupby
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from pbem.kinds import GameKind, kind_named, kind_of
from pbem.models import Game, Move, PendingOrder, Player
from pbem.rules.dice import DiceStream, commitment
from pbem.rules.moves import move_from_json
from pbem.rules.record import GameRecord, RecordedMove, draw_seats, result_json
from pbem.rules.ruleset import RuleSet
from pbem.security import new_key


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
    """seat -> the player who holds it now (a replaced player no longer does)."""
    return {p.seat: p for p in players_of(session, game) if p.seat is not None and p.active}


def entrants_of(session: Session, game: Game) -> list[Player]:
    """One player per entrant, in sign-up order: a replacement (REPLACE) takes the place of
    the player it replaces, so the seat draw of the record still checks."""
    places: dict[int, Player] = {}
    for p in players_of(session, game):
        if p.entrant not in places or p.active:
            places[p.entrant] = p
    return list(places.values())


def seat_count(session: Session, game: Game) -> int:
    return len({p.seat for p in players_of(session, game) if p.seat is not None})


def stream_of(game: Game) -> DiceStream:
    return DiceStream(bytes.fromhex(game.seed_hex))


def rules_of(game: Game) -> RuleSet:
    return RuleSet.from_json(json.loads(game.rules_json))


def recorded_moves(session: Session, game: Game) -> list[RecordedMove]:
    rows = session.exec(select(Move).where(Move.game_id == game.id)
                        .order_by(col(Move.turn), col(Move.seat)))
    return [RecordedMove(r.turn, r.seat, r.minigame, move_from_json(json.loads(r.move_json)),
                         r.by, tuple(json.loads(r.rerolled_json))) for r in rows]


def load_state(session: Session, game: Game) -> Any:
    """The kind's state now: the start rebuilt from the seed, then every recorded turn."""
    kind = kind_of(game)
    stream = stream_of(game)
    state = kind.start(json.loads(game.rules_json), stream, seat_count(session, game))
    rows = session.exec(select(Move).where(Move.game_id == game.id)
                        .order_by(col(Move.turn), col(Move.seat)))
    for _, group in groupby(rows, key=lambda r: r.turn):
        moves = {r.seat: kind.move_from_json(json.loads(r.move_json)) for r in group}
        state = kind.apply(state, moves, stream).state
    return state


def create_game(session: Session, name: str, *, seed: bytes, now: datetime,
                turn_hours: float | None = None, rules: RuleSet | None = None,
                kind: str = "postal", rules_json: dict[str, Any] | None = None) -> Game:
    if session.exec(select(Game).where(Game.name == name)).first() is not None:
        raise GameError(f"a game called '{name}' exists already")
    kind_named(kind)
    if rules_json is None:
        rules_json = (rules or RuleSet()).to_json()
    game = Game(name=name, kind=kind, rules_json=json.dumps(rules_json),
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
    most = kind_of(game).max_players
    if len(players) >= most:
        raise GameError(f"game '{game.name}' has its {most} players already")
    key, key_hash = new_key()
    player = Player(game_id=game.id, entrant=len(players) + 1, email=email,
                    name=name or email.partition("@")[0], key=key, key_hash=key_hash)
    session.add(player)
    session.flush()
    return player


def start_game(session: Session, game: Game, now: datetime) -> None:
    if game.status != "new":
        raise GameError(f"game '{game.name}' has started already")
    players = players_of(session, game)
    kind = kind_of(game)
    if not kind.min_players <= len(players) <= kind.max_players:
        wanted = (f"{kind.min_players}" if kind.min_players == kind.max_players
                  else f"{kind.min_players} to {kind.max_players}")
        raise GameError(f"a game of {kind.title} needs {wanted} players; '{game.name}' has "
                        f"{len(players)}")
    for player, seat in zip(players, draw_seats(stream_of(game), len(players))):
        player.seat = seat
        session.add(player)
    game.status = "running"
    game.turn = 1
    game.started_at = now
    game.deadline = next_deadline(game, now)
    session.add(game)


def next_deadline(game: Game, now: datetime) -> datetime | None:
    """A turn begins now: its deadline (turn length, fixed hour; pbem.deadlines)."""
    from pbem.deadlines import start_turn_clock
    return start_turn_clock(game, now)


def pending_orders(session: Session, game: Game) -> dict[int, PendingOrder]:
    rows = session.exec(select(PendingOrder).where(PendingOrder.game_id == game.id,
                                                   PendingOrder.turn == game.turn))
    return {r.seat: r for r in rows}


def missing_seats(session: Session, game: Game, state: Any | None = None) -> list[int]:
    """The seats that owe an order this turn and have none in (state: if already loaded)."""
    if state is None:
        state = load_state(session, game)
    return sorted(set(kind_of(game).due(state)) - set(pending_orders(session, game)))


def record_order(session: Session, game: Game, seat: int, move: Any, *, now: datetime,
                 inbound_id: int | None, by: str = "player") -> PendingOrder | None:
    """Store seat's order for the turn in play; return the order it replaces, if any."""
    earlier = pending_orders(session, game).get(seat)
    replaced = None
    if earlier is not None:
        replaced = PendingOrder(**earlier.model_dump())
        session.delete(earlier)
        session.flush()
    session.add(PendingOrder(game_id=game.id, turn=game.turn, seat=seat,
                             move_json=json.dumps(kind_of(game).move_to_json(move)), by=by,
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
    played_for: dict[int, Any]   # seat -> the move made for a missing order
    played_by: dict[int, str]    # seat -> "standing" (their DEFAULT) or "robot"
    state: Any                   # the kind's state after the turn
    notes: list[str]             # what happened, for the report


POLICIES = ("ROBOT", "CHALLENGE", "RAISE")


def game_policy(game: Game) -> str:
    """The game's missing-order policy (NEWGAME option), ROBOT unless set."""
    policy = str(json.loads(game.options_json or "{}").get("policy", "robot")).upper()
    return policy if policy in POLICIES else "ROBOT"


def missing_move(game: Game, kind: GameKind, state: Any, seat: int,
                 player: Player | None) -> tuple[Any, str]:
    """The move for a seat without an order: its standing order, the game's policy, the robot."""
    if player is not None and (player.default_order or "").upper() == "ROBOT":
        return kind.robot_move(state, seat, robot_rng(game, game.turn, seat)), "robot"
    for policy, by in ((player.default_order if player else None, "standing"),
                       (game_policy(game), "policy")):
        if policy and policy.upper() in ("CHALLENGE", "RAISE"):
            move = kind.standing_move(state, seat, policy.upper())
            if move is not None:
                return move, by
    return kind.robot_move(state, seat, robot_rng(game, game.turn, seat)), "robot"


def resolve_turn(session: Session, game: Game, now: datetime) -> TurnOutcome:
    """Apply the turn's orders (missing ones are played for the player) and advance."""
    if game.status != "running":
        raise GameError(f"game '{game.name}' is not running")
    kind = kind_of(game)
    state = load_state(session, game)
    orders = pending_orders(session, game)
    holders = seated(session, game)
    moves: dict[int, Any] = {}
    by: dict[int, str] = {}
    played_for: dict[int, Any] = {}
    for seat in sorted(kind.due(state)):
        order = orders.get(seat)
        if order is not None:
            moves[seat] = kind.move_from_json(json.loads(order.move_json))
            by[seat] = order.by
        else:
            moves[seat], by[seat] = missing_move(game, kind, state, seat, holders.get(seat))
            played_for[seat] = moves[seat]
    resolution = kind.apply(state, moves, stream_of(game))
    for seat, move in moves.items():
        session.add(Move(game_id=game.id, turn=game.turn, seat=seat,
                         minigame=kind.place(state, seat),
                         move_json=json.dumps(kind.move_to_json(move)), by=by[seat],
                         rerolled_json=json.dumps(resolution.extras.get(seat, [])),
                         created_at=now))
    for order in orders.values():
        session.delete(order)
    game.turn += 1
    if kind.over(resolution.state):
        game.status = "over"
        game.ended_at = now
        game.deadline = None
    else:
        game.deadline = next_deadline(game, now)
    session.add(game)
    session.flush()
    return TurnOutcome(played_for, {s: by[s] for s in played_for}, resolution.state,
                       resolution.notes)


def export_record(session: Session, game: Game) -> GameRecord:
    """The postal game's record (pbem.bluff.record/1, checked by `pbem verify`)."""
    players = entrants_of(session, game)
    state = load_state(session, game) if game.status in ("running", "over") else None
    over = state is not None and state.game_over
    return GameRecord(
        game=game.name, rules=rules_of(game), commitment=game.commitment,
        entrants=[p.name for p in players], seats=[p.seat or 0 for p in players],
        moves=recorded_moves(session, game), seed=game.seed_hex if over else None,
        result=result_json(state) if over and state is not None else None)


def export_json(session: Session, game: Game) -> dict[str, Any]:
    """Any game's record as JSON: the postal record, or the generic one of other kinds."""
    if game.kind == "postal":
        return export_record(session, game).to_json()
    kind = kind_of(game)
    players = entrants_of(session, game)
    state = load_state(session, game) if game.status in ("running", "over") else None
    over = state is not None and kind.over(state)
    rows = session.exec(select(Move).where(Move.game_id == game.id)
                        .order_by(col(Move.turn), col(Move.seat)))
    return {
        "format": "pbem.record/1", "kind": game.kind, "game": game.name,
        "rules": json.loads(game.rules_json), "commitment": game.commitment,
        "seed": game.seed_hex if over else None,
        "players": [{"entrant": p.entrant, "name": p.name, "seat": p.seat} for p in players],
        "moves": [{"turn": r.turn, "seat": r.seat, "by": r.by, "move": json.loads(r.move_json),
                   **({"dealt": json.loads(r.rerolled_json)} if r.rerolled_json != "[]" else {})}
                  for r in rows],
        "result": {"standings": kind.standings(state)} if over and state is not None else None,
    }


def player_view(game: Game, players: dict[int, Player], state: Any,
                seat: int | None) -> dict[str, Any]:
    """The JSON view of the game for one seat (None: the public view)."""
    kind = kind_of(game)
    rules_part = kind.view(state, seat)
    per_seat = rules_part.pop("virtual_dice", None)
    player = players.get(seat) if seat is not None else None
    # the kind may list the seats itself (dice counts ...): the names are added to its list
    kind_rows = {row.get("seat"): row for row in rules_part.pop("players", None) or []}
    listed = []
    for s in sorted(players):
        entry: dict[str, Any] = {"number": s, "name": players[s].name}
        if per_seat is not None:
            entry["virtual_dice"] = per_seat[str(s)]
        entry.update({k: v for k, v in kind_rows.get(s, {}).items() if k != "name"})
        listed.append(entry)
    return {
        "format": "pbem.bluff.view/1" if game.kind == "postal" else f"pbem.{game.kind}.view/1",
        "game": game.name,
        "turn": game.turn,
        "deadline": game.deadline.strftime("%Y-%m-%dT%H:%M:%SZ") if game.deadline else None,
        "you": seat,
        "key": player.key if player is not None else None,
        "players": listed,
        **rules_part,
        "commitment": game.commitment,
    }
