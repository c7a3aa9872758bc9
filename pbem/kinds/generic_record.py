"""The record of a game of any kind but postal (``pbem.record/2``), made by replaying it.

The server knows the seed, so it replays the recorded moves and writes down what the
seed dealt with each one (the kind's ``Resolution.record``): in classic Bluff the faces
an expose re-rolled and which dice it showed (the orange one?), in Cup of Bluff the roll
of each Bluffer with the Bluffer's claim or doublet. ``pbem verify`` replays the record
the same way and compares (``pbem.kinds.verify``). The rules are the rules as played
(``GameKind.played_rules``), the same as every report.json of the game shows.

Format history: ``pbem.record/1`` kept the dice dealt as the database stored them (the
classic star as 6; in Cup of Bluff the *next* Bluffer's roll, with a move only when that
Bluffer happened to move), the stored rules (the Czech six-player rule unresolved), no
record of which die an expose showed, and classic standings with the dice value only.
``pbem verify`` still reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import TYPE_CHECKING, NotRequired, TypedDict, TypeVar

from pbem.kinds.jsontypes import JSON, JSONMap, KindJSON, MoveExtra, ShownDie
from pbem.rules.dice import DiceStream
from pbem.rules.postal_record import RecordPlayer

if TYPE_CHECKING:   # the kind calls these functions: a type only, no import at run time
    from pbem.kinds.base import GameKind

FORMAT = "pbem.record/2"
OLD_FORMATS = ("pbem.record/1",)
S = TypeVar("S")
M = TypeVar("M")


@dataclass(frozen=True)
class MoveRow:
    """One applied move as the server keeps it."""

    turn: int
    seat: int
    by: str
    move: JSON                        # as the database gives it back: the kind reads it
    place: int = 0                    # the mini-game (postal), 0 if the kind has none
    # the dice dealt with it as the server keeps them (Resolution.extras; the star as 6)
    dealt: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Entrant:
    entrant: int
    name: str
    seat: int | None


@dataclass(frozen=True)
class GameRows:
    """A game as the server stores it, for its record (``GameKind.record``)."""

    game: str
    rules: JSONMap                    # as the database gives them back: the kind reads them
    seed: bytes
    commitment: str
    entrants: Sequence[Entrant]
    moves: Sequence[MoveRow]
    started: bool


class RecordMove(TypedDict):
    """A move of a pbem.record/2: when, whose, by whom, the kind's move JSON and what the
    seed dealt with it (MoveExtra)."""

    turn: int
    seat: int
    by: str
    move: KindJSON
    dealt: NotRequired[list[int | str]]
    shown: NotRequired[list[ShownDie]]


class RecordResult(TypedDict):
    standings: list[dict[str, int]]


class GenericRecord(TypedDict):
    """pbem.record/2 (schema/game-record-generic.schema.json and the kinds' parts of it)."""

    format: str
    kind: str
    game: str
    rules: KindJSON
    commitment: str
    seed: str | None
    players: list[RecordPlayer]
    moves: list[RecordMove]
    result: RecordResult | None


def replay_dealt(kind: GameKind[S, M], rules: JSONMap, seed: bytes, players: int,
                 moves: Sequence[MoveRow]) -> tuple[dict[tuple[int, int], MoveExtra], S]:
    """(turn, seat) -> what the record adds to that move, and the state after the last turn."""
    stream = DiceStream(seed)
    state = kind.start(rules, stream, players)
    added: dict[tuple[int, int], MoveExtra] = {}
    ordered = sorted(moves, key=lambda m: (m.turn, m.seat))
    for turn, group in groupby(ordered, key=lambda m: m.turn):
        resolution = kind.apply(state, {m.seat: kind.move_from_json(m.move) for m in group},
                                stream)
        for seat, extra in resolution.record.items():
            added[(turn, seat)] = extra
        state = resolution.state
    return added, state


def rules_shape_problems(kind: GameKind[S, M], rules: JSONMap, players: int) -> list[str]:
    """How a pbem.record/2's rules differ from the rules as played, which is all such a
    record keeps: a setting the start resolves (classic's ``dice_if_six_players``, null
    once played) still unresolved is a record written by hand, whatever its dice."""
    played = kind.played_rules(rules, players)
    return [f"the rules are not as played, as a {FORMAT} record keeps them: {key} is "
            f"{_shown(rules.get(key))} where the game played {_shown(played.get(key))}"
            for key in sorted(set(rules) | set(played)) if rules.get(key) != played.get(key)]


def _shown(value: object) -> str:
    """A JSON value as JSON writes it (null, true, 5)."""
    return "null" if value is None else str(value).lower() if isinstance(value, bool) \
        else repr(value) if isinstance(value, str) else str(value)


def generic_record(kind: GameKind[S, M], rows: GameRows) -> GenericRecord:
    """The pbem.record/2 JSON of a game; the seed and the result only once it is over."""
    players = len({e.entrant for e in rows.entrants})
    added: dict[tuple[int, int], MoveExtra] = {}
    result: RecordResult | None = None
    if rows.started:
        added, state = replay_dealt(kind, rules=rows.rules, seed=rows.seed, players=players,
                                    moves=rows.moves)
        if kind.over(state):
            result = {"standings": kind.standings(state)}
    return {
        "format": FORMAT, "kind": kind.name, "game": rows.game,
        "rules": kind.played_rules(rows.rules, players) if rows.started else dict(rows.rules),
        "commitment": rows.commitment,
        "seed": rows.seed.hex() if result is not None else None,
        "players": [{"entrant": e.entrant, "name": e.name, "seat": e.seat}
                    for e in rows.entrants],
        "moves": [{"turn": m.turn, "seat": m.seat, "by": m.by, "move": m.move,
                   **added.get((m.turn, m.seat), {})}
                  for m in sorted(rows.moves, key=lambda m: (m.turn, m.seat))],
        "result": result,
    }
