"""The game record: everything needed to rebuild and check a postal game.

The record holds the rule set, the dice commitment, the seat draw and every
accepted move with its turn; once the game is over it also holds the seed.
Replaying the moves on a fresh game rolled from the seed rebuilds any
position; ``verify`` checks a finished record end to end. Its JSON form is
documented by ``schema/game-record.schema.json``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, Literal, NotRequired, TypedDict

from pbem.rules.bid_moves import BidJSON, Move, move_from_json, move_to_json
from pbem.rules.dice import SEATS_LABEL, DiceStream, Face, face_from_json, face_json
from pbem.rules.errors import RulesError
from pbem.rules.postal import BidPlaced, PostalState, apply_turn, new_game
from pbem.rules.ruleset import RuleSet, RulesJSON
from pbem.text.wording import _

RECORD_FORMAT = "pbem.bluff.record/1"


def draw_seats(stream: DiceStream, entrants: int) -> list[int]:
    """seats[i] is the seat of the i-th entrant (in sign-up order)."""
    return stream.shuffle(SEATS_LABEL, list(range(1, entrants + 1)))


class PostalMoveJSON(TypedDict):
    """A move of pbem.bluff.record/1: where and by whom, the move's JSON (a BID's bid and
    expose, or challenge) and the faces its expose re-rolled."""

    turn: int
    seat: int
    minigame: int
    by: str
    bid: NotRequired[BidJSON]
    expose: NotRequired[list[int | str]]
    challenge: NotRequired[Literal[True]]
    rerolled: NotRequired[list[int | str]]


class Rerolled(TypedDict, total=False):
    rerolled: list[int | str]


class PostalResult(TypedDict):
    """A finished postal game's result: seat -> virtual dice (keys strings), the standings."""

    virtual_dice: dict[str, int]
    standings: list[dict[str, int]]   # rank, seat, virtual_dice: as GameKind.standings


class RecordPlayer(TypedDict):
    """An entrant of a record, in sign-up order, and the seat the draw gave them."""

    entrant: int
    name: str
    seat: int | None


class PostalRecordJSON(TypedDict):
    """pbem.bluff.record/1 (schema/game-record.schema.json)."""

    format: str
    kind: str
    game: str
    rules: RulesJSON
    commitment: str
    seed: str | None
    players: list[RecordPlayer]
    moves: list[PostalMoveJSON]
    result: PostalResult | None


@dataclass(frozen=True)
class RecordedMove:
    turn: int
    seat: int
    minigame: int
    move: Move
    by: str = "player"                 # player | standing | robot | referee
    rerolled: tuple[Face, ...] = ()    # the faces dealt by an expose, as reported

    def to_json(self) -> PostalMoveJSON:
        rerolled: Rerolled = ({"rerolled": [face_json(f) for f in self.rerolled]}
                              if self.rerolled else {})
        return {"turn": self.turn, "seat": self.seat, "minigame": self.minigame,
                "by": self.by, **move_to_json(self.move), **rerolled}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecordedMove:
        return cls(int(data["turn"]), int(data["seat"]), int(data["minigame"]),
                   move_from_json(data), str(data.get("by", "player")),
                   tuple(face_from_json(f) for f in data.get("rerolled", ())))


@dataclass
class GameRecord:
    game: str
    rules: RuleSet
    commitment: str
    entrants: list[str]
    seats: list[int]
    moves: list[RecordedMove] = field(default_factory=list)
    seed: str | None = None            # hex, revealed when the game is over
    result: PostalResult | None = None
    kind: str = "postal"

    def to_json(self) -> PostalRecordJSON:
        return {
            "format": RECORD_FORMAT, "kind": self.kind, "game": self.game,
            "rules": self.rules.to_json(), "commitment": self.commitment,
            "seed": self.seed,
            "players": [{"entrant": i + 1, "name": name, "seat": seat}
                        for i, (name, seat) in enumerate(zip(self.entrants, self.seats))],
            "moves": [m.to_json() for m in self.moves],
            "result": self.result,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GameRecord:
        if data.get("format") != RECORD_FORMAT:
            raise ValueError(f"not a {RECORD_FORMAT} record")
        players = sorted(data["players"], key=lambda p: p["entrant"])
        return cls(game=data["game"], rules=RuleSet.from_json(data["rules"]),
                   commitment=data["commitment"],
                   entrants=[p["name"] for p in players], seats=[p["seat"] for p in players],
                   moves=[RecordedMove.from_json(m) for m in data["moves"]],
                   seed=data.get("seed"), result=data.get("result"),
                   kind=data.get("kind", "postal"))


def turns(moves: Sequence[RecordedMove]) -> list[tuple[int, list[RecordedMove]]]:
    ordered = sorted(moves, key=lambda m: (m.turn, m.seat))
    return [(t, list(group)) for t, group in groupby(ordered, key=lambda m: m.turn)]


def replay(rules: RuleSet, stream: DiceStream, moves: Sequence[RecordedMove],
           *, upto_turn: int | None = None) -> PostalState:
    """Rebuild the position after the recorded turns (all, or those before upto_turn)."""
    state = new_game(stream, rules)
    for turn, group in turns(moves):
        if upto_turn is not None and turn >= upto_turn:
            break
        if turn != state.turn:
            raise RulesError(_("the record jumps from turn {was} to turn {turn}",
                                 was=state.turn, turn=turn))
        state, _events = apply_turn(state, {m.seat: m.move for m in group}, stream)
    return state


def result_json(state: PostalState) -> PostalResult:
    return {"virtual_dice": {str(s): v for s, v in enumerate(state.virtual_dice, start=1)},
            "standings": [{"rank": s.rank, "seat": s.seat, "virtual_dice": s.virtual_dice}
                          for s in state.standings()]}


def verify(record: GameRecord) -> list[str]:
    """Every way the record fails to hold up; an empty list means it is honest."""
    if record.seed is None:
        return ["the seed is not revealed yet: only a finished game can be verified"]
    try:
        seed = bytes.fromhex(record.seed)
        stream = DiceStream(seed)
    except ValueError as exc:
        return [f"the seed is not valid: {exc}"]
    problems: list[str] = []
    if hashlib.sha256(seed).hexdigest() != record.commitment:
        problems.append("the seed does not match the commitment")
    if draw_seats(stream, len(record.entrants)) != record.seats:
        problems.append("the seat draw does not follow from the seed")
    state = new_game(stream, record.rules)
    for turn, group in turns(record.moves):
        if turn != state.turn:
            problems.append(f"the record jumps from turn {state.turn} to turn {turn}")
            return problems
        if len({m.seat for m in group}) < len(group):
            problems.append(f"turn {turn}: a seat has more than one move")
            return problems
        due = state.due()
        for m in group:
            if due.get(m.seat) != m.minigame:
                problems.append(f"turn {turn}: seat {m.seat} did not move in mini-game {m.minigame}")
        try:
            state, events = apply_turn(state, {m.seat: m.move for m in group}, stream)
        except (RulesError, ValueError) as exc:
            problems.append(f"turn {turn}: {exc}")
            return problems
        dealt = {e.seat: e.rerolled for e in events if isinstance(e, BidPlaced)}
        for m in group:
            if dealt.get(m.seat, ()) != m.rerolled:
                problems.append(f"turn {turn}: the re-roll of seat {m.seat} does not follow "
                                f"from the seed")
    if not state.game_over:
        problems.append("the game is not over")
    elif record.result != result_json(state):
        problems.append("the recorded result does not match a recount")
    return problems
