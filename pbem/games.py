"""Games in the database: the queries, and the changes to a game's stored state.

The state of a game is never stored: it is rebuilt from the seed and the
recorded moves (pbem.rules.postal_record.replay), so the record is the one source
of truth. Every function here works inside the caller's transaction.

The data layer: imports the pure core (kinds, rules, options, deadlines),
the schema (pbem.store.models) and pbem.store.security (new keys); nothing that sends
mail or runs commands.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from itertools import groupby
from typing import Any, Generic, NamedTuple, TypeVar, cast, overload

from sqlalchemy import bindparam, insert, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.orm import aliased
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, delete, select

from pbem.kinds import DEFAULT_KIND, GameKind, kind_named, kind_of
from pbem.kinds.options import GameOptions, options_of
from pbem.rules.dice import DiceStream, commitment
from pbem.rules.postal_record import draw_seats
from pbem.rules.ruleset import RuleSet
from pbem.store.db import core_read
from pbem.store.models import (
    AuditEntry,
    Game,
    Move,
    OutboundMail,
    PendingOrder,
    Player,
    Signup,
    TalkMessage,
    Watcher,
)
from pbem.store.rows import (
    GAME_COLUMNS,
    PLAYER_COLUMNS,
    GameRow,
    GameView,
    PlayerRow,
    PlayerView,
    game_row,
)
from pbem.store.security import new_key
from pbem.store.work import Work
from pbem.text.deadlines import turn_deadline
from pbem.text.errors import Refusal
from pbem.text.wording import _

S = TypeVar("S")   # a kind's state
M = TypeVar("M")   # a kind's move


def id_of(game: GameView) -> int:
    """The id of a stored game (every game here has been flushed)."""
    assert game.id is not None
    return game.id


# --- a transaction's memo, and the states of games --------------------------------------
#
# Within one unit of work (pbem.store.work.Work) the players and the pending orders of a game are
# read once, as rows: what reads or writes them takes the Work. What keeps the memo right is
# said in pbem.store.work: record_order and drop_orders set the orders they wrote,
# update_players the players it wrote, a function that adds or deletes a Player or
# PendingOrder forgets its kind (add_player, remove_entrant here), the transaction's end
# forgets all. What is derived from the players (active, seated) is filtered in Python from
# the same rows.

# --- queries -------------------------------------------------------------------------------

def find_game(session: Session, name: str) -> Game:
    game = session.exec(select(Game).where(Game.name == name)).first()
    if game is None:
        raise Refusal(_("there is no game called '{name}'", name=name))
    return game


# a game and its players as rows (pbem.store.rows), each by a statement built once
_GAME_BY_ID = select(*(getattr(Game, name) for name in GAME_COLUMNS)).where(
    col(Game.id) == bindparam("game"))
_GAME_NAMED = select(*(getattr(Game, name) for name in GAME_COLUMNS)).where(
    col(Game.name) == bindparam("name"))
_OTHER = aliased(Player)


def _chosen(column: str) -> Any:
    """The newest ``column`` (language, timezone) the player's address set in any game."""
    chosen = getattr(_OTHER, column)
    return (sa_select(chosen).where(col(_OTHER.email) == col(Player.email), chosen.is_not(None))
            .order_by(col(_OTHER.id).desc()).limit(1).correlate(Player).scalar_subquery())


_PLAYERS_OF = (sa_select(*(getattr(Player, name) for name in PLAYER_COLUMNS),
                         _chosen("language"), _chosen("timezone"))
               .where(col(Player.game_id) == bindparam("game"))
               .order_by(col(Player.entrant), col(Player.id)))


def read_game(session: Session, game_id: int) -> GameRow | None:
    """The game of that id as a row, read now (one statement)."""
    row = core_read(session, _GAME_BY_ID, {"game": game_id}).first()
    return GameRow(*row) if row is not None else None


def game_named(session: Session, name: str) -> GameRow:
    """The game called ``name`` as a row (a player's mail: its GAME line); refused if none
    (find_game: the object, for the referee's commands)."""
    row = core_read(session, _GAME_NAMED, {"name": name}).first()
    if row is None:
        raise Refusal(_("there is no game called '{name}'", name=name))
    return GameRow(*row)


def read_players(session: Session, game: GameView) -> list[PlayerRow]:
    """Every player of the game (replaced ones too), in sign-up order, read now: for a
    reader that reads them once (a page, a replay); a handling reads ``players_of``."""
    return [PlayerRow(*row) for row in core_read(session, _PLAYERS_OF, {"game": game.id})]


def players_of(session: Work, game: GameView) -> list[PlayerRow]:
    """Every player of the game (replaced ones too), in sign-up order (the memo's: read
    once a transaction, kept right by update_players and forgotten by what adds or
    deletes one)."""
    key = ("players", game.id)
    players = session.recall(key)
    if players is None:
        players = session.memo[key] = read_players(session, game)
    return list(players)


def seated(session: Work, game: GameView) -> dict[int, PlayerRow]:
    """seat -> the player who holds it now (a replaced player no longer does)."""
    return {p.seat: p for p in players_of(session, game) if p.seat is not None and p.active}


def active_players(session: Work, game: GameView) -> list[PlayerRow]:
    return [p for p in players_of(session, game) if p.active]


def entrants_of(session: Session, game: GameView) -> list[PlayerRow]:
    """One player per entrant, in sign-up order: a replacement (REPLACE) takes the place of
    the player it replaces, so the seat draw of the record still checks."""
    places: dict[int, PlayerRow] = {}
    for p in read_players(session, game):
        if p.entrant not in places or p.active:
            places[p.entrant] = p
    return list(places.values())


def seat_count(session: Work, game: GameView) -> int:
    return seats_of(players_of(session, game))


def seats_of(players: Iterable[PlayerView]) -> int:
    """How many seats ``players`` hold (replaced players too: the seat count of the game)."""
    return len({p.seat for p in players if p.seat is not None})


# --- a game's and its players' changes, each written at once by its own statement ---------
#
# A row is never changed in place: a change is written now, by an UPDATE of the columns
# that change, built once for each set of them (what the session holds is flushed first, as
# a flush would order it), and the changed row returned, for the caller to hand on. An
# object of the same row that the session holds (the referee's commands, the clock and the
# admin commands hold the game's) is given the values written (``_held_agree``), so an
# object and a row of one game never disagree.

@lru_cache(maxsize=64)
def _update_of(model: type[Game] | type[Player], names: tuple[str, ...]) -> Any:
    """UPDATE <model's table> SET <names> WHERE id = :row_id, built once for each set of
    names (the values bound as new_<name>)."""
    return (update(model).where(col(model.id) == bindparam("row_id"))
            .values({name: bindparam(f"new_{name}") for name in names}))


def _held_agree(session: Session, model: type[Game] | type[Player], row_id: int,
                changed: Mapping[str, Any]) -> None:
    """An object of that row in the session (its identity map) takes the values written,
    as loaded (set_committed_value: not a change to flush)."""
    held = session.identity_map.get(session.identity_key(model, row_id))
    if held is not None:
        for name, value in changed.items():
            set_committed_value(held, name, value)


def update_game(session: Session, game: GameView, **changes: Any) -> GameRow:
    """Write ``changes`` (columns of game) to the stored game now; the changed row."""
    row = game_row(game)
    changed = {name: value for name, value in changes.items() if getattr(row, name) != value}
    if changed:
        session.flush()
        session.connection().execute(
            _update_of(Game, tuple(sorted(changed))),
            {"row_id": row.id, **{f"new_{name}": value for name, value in changed.items()}})
        _held_agree(session, Game, row.id, changed)
    return replace(row, **changed)


def update_players(session: Work, game: GameView,
                   changes: Mapping[int | None, Mapping[str, Any]]) -> list[PlayerRow]:
    """Write ``changes`` (player id -> the columns changed, to their values) to the stored
    players of ``game`` now: the players that change the same columns by one statement
    (executemany); the memo's players become the changed rows. Returns the game's players
    as they now are."""
    players = players_of(session, game)
    by_id = {p.id: p for p in players}
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for player_id, columns in changes.items():
        assert player_id is not None
        changed = {name: value for name, value in columns.items()
                   if getattr(by_id[player_id], name) != value}
        if changed:
            by_id[player_id] = replace(by_id[player_id], **changed)
            groups.setdefault(tuple(sorted(changed)), []).append(
                {"row_id": player_id, **{f"new_{name}": v for name, v in changed.items()}})
    if groups:
        session.flush()
        for names, rows in groups.items():
            session.connection().execute(_update_of(Player, names), rows)
            for values in rows:
                _held_agree(session, Player, values["row_id"],
                            {name: values[f"new_{name}"] for name in names})
        players = [by_id[p.id] for p in players]
        session.memo[("players", game.id)] = players
    return list(players)


def update_player(session: Work, game: GameView, player: PlayerView,
                  **changes: Any) -> PlayerRow:
    """Write ``changes`` to one stored player now (update_players); the changed row."""
    assert player.id is not None
    players = update_players(session, game, {player.id: changes})
    return next(p for p in players if p.id == player.id)


def running_games_of(session: Session, email: str) -> list[tuple[Game, Player]]:
    """The running games an address plays in, with its player there."""
    rows = session.exec(select(Game, Player).where(Player.game_id == Game.id,
                                                   Player.email == email,
                                                   col(Player.active).is_(True),
                                                   Game.status == "running"))
    return list(rows.all())


# the reads of every turn's reports, built once and run as Core (pbem.store.db.core_read)
_MOVES_OF = (select(Move.turn, Move.seat, Move.move_json)
             .where(col(Move.game_id) == bindparam("game"))
             .order_by(col(Move.turn), col(Move.seat)))
_WATCHERS_OF = (select(Watcher.email).where(col(Watcher.game_id) == bindparam("game"))
                .order_by(col(Watcher.id)))
_TALK_OF = (select(TalkMessage.name, TalkMessage.seat, TalkMessage.text, TalkMessage.to_seat)
            .where(col(TalkMessage.game_id) == bindparam("game"),
                   col(TalkMessage.turn) == bindparam("turn"))
            .order_by(col(TalkMessage.id)))


def watchers_of(session: Session, game: GameView) -> list[str]:
    return list(core_read(session, _WATCHERS_OF, {"game": game.id}).scalars())


def talk_lines(session: Session, game: GameView) -> list[dict[str, Any]]:
    """The table talk of the turn before the one being reported, for the report's section:
    {"from", "text", "seat", "to"} ("to": the one seat of private press, else None); what
    one reader may see of it is heard_by's."""
    rows = core_read(session, _TALK_OF, {"game": game.id, "turn": game.turn - 1})
    return [{"from": _("{name} (player {seat})", name=r.name, seat=r.seat)
             if r.seat is not None else _("the referee"),
             "text": r.text, "seat": r.seat, "to": r.to_seat} for r in rows]


def heard_by(talk: list[dict[str, Any]], seat: int | None) -> list[dict[str, Any]]:
    """The talk a reader sees: all of the table's, and what was said privately to or by
    their seat, marked so (seat None: a watcher, the table's alone)."""
    heard = []
    for line in talk:
        if line["to"] is None:
            heard.append(line)
        elif seat is not None and seat in (line["to"], line["seat"]):
            said = (_("{who}, to you only", who=line["from"]) if line["to"] == seat else
                    _("{who}, to player {seat} only", who=line["from"], seat=line["to"]))
            heard.append({**line, "from": said})
    return heard


def latest_report(session: Session, game: GameView, seat: int) -> OutboundMail | None:
    return session.exec(select(OutboundMail).where(
        OutboundMail.game_id == game.id, OutboundMail.seat == seat,
        OutboundMail.kind == "report").order_by(col(OutboundMail.id).desc())).first()


def stream_of(game: GameView) -> DiceStream:
    return DiceStream(bytes.fromhex(game.seed_hex))


def rules_of(game: GameView) -> RuleSet:
    return RuleSet.from_json(json.loads(game.rules_json))


def moves_of(session: Session, game: GameView) -> list[Move]:
    """Every recorded move of the game, turn by turn, seat by seat."""
    return list(session.exec(select(Move).where(Move.game_id == game.id)
                             .order_by(col(Move.turn), col(Move.seat))))


STATES_KEPT = 1024   # replayed states kept (the newest used), whatever the number of games
_states: OrderedDict[bytes, object] = OrderedDict()   # of every kind: each under its game


@overload
def load_state(session: Work, game: GameView, *, kind: GameKind[S, M],
               seats: int | None = None) -> S: ...
@overload
def load_state(session: Work, game: GameView, *, kind: None = None,
               seats: int | None = None) -> Any: ...   # the state of the kind looked up
def load_state(session: Work, game: GameView, *, kind: GameKind[S, M] | None = None,
               seats: int | None = None) -> S | Any:
    """The kind's state now (replayed_state); ``seats``: the seat count, if the caller knows
    it (else the transaction's memo's players say). The moves are read once a transaction
    and turn (the memo's, _moves_before)."""
    return replayed_state(session, game, kind=kind,
                          seats=seat_count(session, game) if seats is None else seats,
                          recorded=_moves_before(session, game))


def _moves_before(session: Work, game: GameView) -> list[Any]:
    """The game's recorded moves (all of the turns before ``game.turn``), read once a
    transaction and turn: kept under the turn, they need no writer to keep them right.
    A turn played records its moves and moves the game on (another key); a ROLLBACK
    deletes the moves of its turn and after and moves the game back, leaving those
    before it as they were; a savepoint rolled back and the transaction's end forget
    them (pbem.store.work.Work.memo). The game's lock (or SQLite's one writer) keeps
    other processes' writes out while the transaction runs."""
    key = ("moves", game.id, game.turn)
    rows = session.recall(key)
    if rows is None:
        rows = session.memo[key] = core_read(session, _MOVES_OF, {"game": game.id}).all()
    return list(rows)


@overload
def replayed_state(session: Session, game: GameView, *, seats: int,
                   kind: GameKind[S, M], recorded: list[Any] | None = None) -> S: ...
@overload
def replayed_state(session: Session, game: GameView, *, seats: int,
                   kind: None = None,
                   recorded: list[Any] | None = None) -> Any: ...   # the kind looked up
def replayed_state(session: Session, game: GameView, *, seats: int,
                   kind: GameKind[S, M] | None = None,
                   recorded: list[Any] | None = None) -> S | Any:
    """The kind's state now: the start rebuilt from the seed, then every recorded turn.

    A state is a pure function of the game's seed, rules, seat count and recorded
    moves, so it is kept under a digest of exactly those (a few states at most:
    STATES_KEPT): a game's next mail finds it, or the state of the turn before, and
    replays one turn at most. A rollback, another process's change: other moves,
    another digest. ``kind``: if the caller knows it; ``recorded``: the game's moves (turn,
    seat, move) in that order, if the caller has read them (load_state), else read here.
    """
    kind = kind or kind_of(game)
    stream = stream_of(game)
    digest = hashlib.sha256(f"{game.id}\0{game.kind}\0{game.seed_hex}\0{game.rules_json}\0"
                            f"{seats}".encode())
    known = _states.get(digest.digest())
    replay: list[list[Any]] = []
    rows = recorded if recorded is not None else core_read(session, _MOVES_OF,
                                                           {"game": game.id}).all()
    for _turn, group in groupby(rows, key=lambda r: r[0]):
        turn = list(group)
        digest.update(b"".join(f"\0{seat}:{move}".encode() for _move_turn, seat, move in turn) + b"\1")
        found = _states.get(digest.digest())
        if found is not None:
            known, replay = found, []
        else:
            replay.append(turn)
    # the digest names the game (its kind among them): what is kept under it is its kind's state
    state = cast(S, known)
    if known is None:
        state = kind.start(json.loads(game.rules_json), stream, seats)
    for turn in replay:
        moves = {seat: kind.move_from_json(json.loads(move)) for _number, seat, move in turn}
        state = kind.apply(state, moves, stream).state
    key = digest.digest()
    _states[key] = state
    _states.move_to_end(key)
    while len(_states) > STATES_KEPT:
        _states.popitem(last=False)
    return state


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
    return sorted(set(kind_of(game).due(state)) - set(pending_orders(session, game)))


def already_told(session: Session, game: GameView, action: str, detail: str) -> bool:
    """Whether an audit entry of this action and detail exists (to say a thing once)."""
    return session.exec(select(AuditEntry.id).where(
        AuditEntry.game_id == game.id, AuditEntry.action == action,
        AuditEntry.detail == detail)).first() is not None


# --- changes -------------------------------------------------------------------------------

def audit(session: Session, game: GameView | None, now: datetime, action: str, detail: str = "",
          actor: str = "server") -> None:
    """One entry in the audit trail (what happened to a game, and who did it)."""
    session.add(AuditEntry(game_id=game.id if game is not None else None, at=now, actor=actor,
                           action=action, detail=detail[:2000]))


def create_game(session: Session, name: str, *, seed: bytes, now: datetime,
                turn_hours: float | None = None, rules: RuleSet | None = None,
                kind: str = DEFAULT_KIND, rules_json: Mapping[str, object] | None = None) -> Game:
    if session.exec(select(Game).where(Game.name == name)).first() is not None:
        raise Refusal(_("a game called '{name}' exists already", name=name))
    kind_named(kind)
    if rules_json is None:
        rules_json = (rules or RuleSet()).to_json()
    game = Game(name=name, kind=kind, rules_json=json.dumps(rules_json),
                seed_hex=seed.hex(), commitment=commitment(seed), turn_hours=turn_hours,
                created_at=now)
    session.add(game)
    session.flush()
    return game


def add_player(session: Work, game: GameView, email: str, name: str) -> Player:
    if game.status != "new":
        raise Refusal(_("game '{game}' has started: players can no longer be added",
                        game=game.name))
    players = players_of(session, game)
    email = email.lower()
    if any(p.email == email for p in players):
        raise Refusal(_("{email} plays in '{game}' already", email=email, game=game.name))
    most = kind_of(game).max_players
    if len(players) >= most:
        raise Refusal(_("game '{game}' has its {most} players already", game=game.name,
                        most=most))
    key, key_hash = new_key()
    # the time zone and language the address chose in another game (TIMEZONE, LANGUAGE)
    # hold here too
    chosen = session.exec(select(Player.timezone, Player.language).where(
        Player.email == email, or_(col(Player.timezone).is_not(None),
                                   col(Player.language).is_not(None)))
        .order_by(col(Player.id).desc())).first()
    zone, language = chosen if chosen is not None else (None, None)
    player = Player(game_id=id_of(game), entrant=len(players) + 1, email=email,
                    name=name or email.partition("@")[0], key=key, key_hash=key_hash,
                    timezone=zone, language=language)
    session.add(player)
    session.flush()
    session.forget(["players"])   # the memo's players are the game's without this one
    return player


_DELETE_PLAYER = delete(Player).where(col(Player.id) == bindparam("player_id"))


def remove_entrant(session: Work, game: GameView, player: PlayerView) -> None:
    """Take a player off a game before the start; the others keep their sign-up order."""
    if game.status != "new":
        raise Refusal(_("game '{game}' has started: use REPLACE to change a player",
                        game=game.name))
    session.exec(delete(Signup).where(col(Signup.game_id) == game.id,
                                      col(Signup.email) == player.email,
                                      col(Signup.status) != "confirmed"))
    session.connection().execute(_DELETE_PLAYER, {"player_id": player.id})
    session.forget(["players"])
    # entrants stay 1..n in sign-up order: the seat draw goes over them in that order
    update_players(session, game, {
        p.id: {"entrant": number}
        for number, p in enumerate(players_of(session, game), start=1)})


def turn_begins(game: GameView, now: datetime,
                options: GameOptions | None = None) -> dict[str, Any]:
    """A turn begins now: the game's columns that say so (its start remembered, grace
    cleared, its deadline: turn length, fixed hour; ``options``: the game's, if the caller
    has them)."""
    return {"turn_started_at": now, "grace_until": None,
            "deadline": turn_deadline(now, game.turn_hours,
                                      (options or options_of(game)).deadline_hour)}


def start_game(session: Work, game: Game, now: datetime) -> None:
    """Draw the seats and start the game (the game's object: the referee's START, a full
    game's sign-up; the players by statement)."""
    if game.status != "new":
        raise Refusal(_("game '{game}' has started already", game=game.name))
    players = players_of(session, game)
    kind = kind_of(game)
    if not kind.min_players <= len(players) <= kind.max_players:
        wanted = (str(kind.min_players) if kind.min_players == kind.max_players
                  else _("{lo} to {hi}", lo=kind.min_players, hi=kind.max_players))
        raise Refusal(_("a game of {kind} needs {wanted} players; '{game}' has {count}",
                        kind=kind.title, wanted=wanted, game=game.name, count=len(players)))
    draw = draw_seats(stream_of(game), len(players))
    update_players(session, game, {player.id: {"seat": seat}
                                   for player, seat in zip(players, draw, strict=False)})
    game.status = "running"
    game.turn = 1
    game.started_at = now
    for name, value in turn_begins(game, now).items():
        setattr(game, name, value)
    session.add(game)


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
        return sorted(set(self.kind.due(self.started)) - set(self.orders))

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
