"""A game's state: never stored, rebuilt from the seed and the recorded moves
(pbem.rules.postal_record.replay), so the record is the one source of truth; the states
replayed are kept, a few at most, under a digest of what made them.

Works inside the caller's transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from itertools import groupby
from typing import Any, TypeVar, cast, overload

from sqlalchemy import bindparam, insert
from sqlmodel import Session, col, select

from pbem.games.records import seat_count
from pbem.kinds import GameKind, kind_of
from pbem.rules.dice import DiceStream
from pbem.rules.ruleset import RuleSet
from pbem.store.engines import core_read
from pbem.store.models import Move
from pbem.store.rows import GameView
from pbem.store.work import Work

S = TypeVar("S")   # a kind's state
M = TypeVar("M")   # a kind's move

_MOVES_OF = (select(Move.turn, Move.seat, Move.move_json)
             .where(col(Move.game_id) == bindparam("game"))
             .order_by(col(Move.turn), col(Move.seat)))


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
    and turn (the memo's, moves_before)."""
    return replayed_state(session, game, kind=kind,
                          seats=seat_count(session, game) if seats is None else seats,
                          recorded=moves_before(session, game))


def moves_before(session: Work, game: GameView) -> list[Any]:
    """The game's recorded moves (all of the turns before ``game.turn``), read once a
    transaction and turn: kept under the turn, they need no writer to keep them right.
    A turn played records its moves and moves the game on (another key: record_moves
    sets it); a ROLLBACK deletes the moves of its turn and after and moves the game
    back, leaving those before it as they were; a savepoint rolled back and the
    transaction's end forget them (pbem.store.work.Work.memo). The game's lock (or
    SQLite's one writer) keeps other processes' writes out while the transaction runs."""
    rows = session.recall(_moves_key(game.id, game.turn))
    if rows is None:
        rows = core_read(session, _MOVES_OF, {"game": game.id}).all()
        remember_moves(session, game, rows)
    return list(rows)


def _moves_key(game_id: int | None, turn: int) -> tuple[Any, ...]:
    return ("moves", game_id, turn)


def remember_moves(session: Work, game: GameView, rows: list[Any]) -> None:
    """The game's recorded moves as read now at its turn (turn, seat, move's JSON; in
    that order): a read of them with the game (pbem.games.turn_in_play.game_at_hand)."""
    session.memo[_moves_key(game.id, game.turn)] = rows


_ADD_MOVES = insert(Move)


def record_moves(session: Work, game: GameView, moves: list[dict[str, Any]]) -> None:
    """Record the moves of ``game``'s turn in play (rows of move, one statement) and keep
    the memo's moves of the next turn: those before this one (if read) and these, so the
    next turn's state and its reports' draft read none (a turn played moves the game on
    to ``game.turn + 1``). Without those before, the next turn's are forgotten (read
    anew if asked: a ROLLBACK and a turn played again in one transaction leave no
    stale entry)."""
    session.flush()   # what the session holds goes first, as it would in a flush
    session.connection().execute(_ADD_MOVES, moves)
    before = session.recall(_moves_key(game.id, game.turn))
    after = _moves_key(game.id, game.turn + 1)
    if before is None:
        session.memo.pop(after, None)
        return
    these = sorted((m["turn"], m["seat"], m["move_json"]) for m in moves)
    session.memo[after] = [*before, *these]


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
