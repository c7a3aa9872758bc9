"""`pbem verify` for the generic record (``pbem.record/2``, and the older ``pbem.record/1``)
of any game kind.

``pbem.games.export_json`` writes this record for every kind but postal
(postal keeps ``pbem.bluff.record/1``, checked by ``pbem.rules.postal_record.verify``).
A finished record proves the referee honest when:

1. the revealed seed hashes to the commitment published before the first roll;
2. the seat draw follows from the seed (``pbem.rules.postal_record.draw_seats``);
3. replaying the turns with the kind, from the record's rules JSON as it was
   stored (classic keeps ``dice_if_six_players`` there, so it is never
   round-tripped through a RuleSet), turn numbers run 1, 2, 3 ... with no gap,
   every turn has exactly one move from each seat that was due, and every
   move is legal when it is made;
4. the game is over after the last turn, and the recorded result equals a
   recount (``kind.standings`` of the replayed end).

Every die comes from the seed by label, so the replay deals the same cups,
re-rolls and Cup of Bluff rolls as the referee did; what a move's entry says was dealt
with it (``dealt``, and ``shown``: which dice an expose showed) must be what the replay
deals. The JSON form is documented by ``schema/game-record-generic.schema.json``; the
formats' differences are in ``pbem.kinds.generic_record``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TypeVar

from pbem.kinds import KINDS
from pbem.kinds.base import Resolution
from pbem.kinds.generic_record import FORMAT, OLD_FORMATS, rules_shape_problems
from pbem.kinds.jsontypes import JSON, JSONMap
from pbem.kinds.words import KIND_TITLES, Told
from pbem.rules.dice import DiceStream, commitment
from pbem.rules.errors import RulesError
from pbem.rules.postal_record import GameRecord, draw_seats, verify
from pbem.text.wording import Message, _, joined

# A record to verify is JSON as json.loads reads it (JSON, JSONMap): nothing in it is
# trusted before these checks, so its values stay Any until a check reads them.
FORMATS = (FORMAT, *OLD_FORMATS)
BY = ("player", "standing", "policy", "robot", "referee")
V1_STANDING_KEYS = ("rank", "seat", "score", "tokens")   # pbem.record/1 had no "dice"
S = TypeVar("S")


def _entrant_seats(players: list[JSON]) -> tuple[list[int | None], list[str]]:
    """The seat of each entrant in sign-up order; a replaced player and the one who
    replaced them share an entrant number and must share the seat."""
    seats: dict[int, int | None] = {}
    problems: list[str] = []
    for p in players:
        entrant, seat = int(p["entrant"]), p.get("seat")
        if entrant in seats and seats[entrant] != seat:
            problems.append(f"entrant {entrant} is listed with two seats")
        seats.setdefault(entrant, seat)
    order = sorted(seats)
    if order != list(range(1, len(order) + 1)):
        problems.append(f"the entrants are not numbered 1 to {len(order)}")
    return [seats[e] for e in order], problems


def _normal(data: object) -> object:
    """As JSON reads it back (tuples become lists, keys strings)."""
    return json.loads(json.dumps(data))


def recount(record: JSONMap) -> dict[str, object]:
    """The result of replaying a record (no checks): {"standings": [...]}."""
    kind = KINDS[str(record["kind"])]
    stream = DiceStream(bytes.fromhex(str(record["seed"])))
    seats, _problems = _entrant_seats(record["players"])
    state = kind.start(record["rules"], stream, len(seats))
    ordered = sorted(record["moves"], key=lambda m: (m["turn"], m["seat"]))
    for _turn, group in groupby(ordered, key=lambda m: m["turn"]):
        moves = {int(m["seat"]): kind.move_from_json(m["move"]) for m in group}
        state = kind.apply(state, moves, stream).state
    return {"standings": _normal(kind.standings(state))}


def verify_generic(record: JSONMap) -> list[str]:
    """Every way the record fails to hold up; an empty list means it is honest."""
    version = record.get("format")
    if version not in FORMATS:
        return [f"not a {' or '.join(FORMATS)} record (format {version!r})"]
    kind = KINDS.get(str(record.get("kind")))
    if kind is None:
        return [f"unknown game kind {record.get('kind')!r} (kinds: {', '.join(KINDS)})"]
    if record.get("seed") is None:
        return ["the seed is not revealed yet: only a finished game can be verified"]
    try:
        seed = bytes.fromhex(str(record["seed"]))
        stream = DiceStream(seed)
    except ValueError as exc:
        return [f"the seed is not valid: {exc}"]
    problems: list[str] = []
    if commitment(seed) != record.get("commitment"):
        problems.append("the seed does not match the commitment")
    try:
        seats, listing = _entrant_seats(record["players"])
    except (KeyError, TypeError, ValueError) as exc:
        return problems + [f"the players cannot be read: {exc}"]
    problems += listing
    players = len(seats)
    if not kind.min_players <= players <= kind.max_players:
        return problems + [(f"a game of {kind.title} has {kind.min_players} to "
                            f"{kind.max_players} players, not {players}")]
    if draw_seats(stream, players) != seats:
        problems.append("the seat draw does not follow from the seed")
    try:
        state = kind.start(record["rules"], stream, players)
        if version == FORMAT:   # its rules as played: nothing left to resolve
            problems += rules_shape_problems(kind, record["rules"], players)
    except (KeyError, TypeError, ValueError) as exc:
        return problems + [f"the rules cannot start a game: {exc}"]

    try:
        ordered = sorted(record["moves"], key=lambda m: (int(m["turn"]), int(m["seat"])))
    except (KeyError, TypeError, ValueError) as exc:
        return problems + [f"the moves cannot be read: {exc}"]
    expected = 1
    for turn, rows in groupby(ordered, key=lambda m: int(m["turn"])):
        group = list(rows)
        if turn != expected:
            return problems + [f"the record jumps from turn {expected} to turn {turn}"]
        if kind.over(state):
            return problems + [f"turn {turn}: the game was over already"]
        seats_moved = [int(m["seat"]) for m in group]
        if len(set(seats_moved)) < len(seats_moved):
            return problems + [f"turn {turn}: a seat has more than one move"]
        due = kind.due(state)
        for seat in sorted(set(due) - set(seats_moved)):
            problems.append(f"turn {turn}: seat {seat} was due but has no move")
        for seat in sorted(set(seats_moved) - set(due)):
            problems.append(f"turn {turn}: seat {seat} moved but was not due")
        if set(due) != set(seats_moved):
            return problems
        moves = {}
        for m in group:
            seat = int(m["seat"])
            if m.get("by", "player") not in BY:
                problems.append(f"turn {turn}: seat {seat}: unknown mover {m.get('by')!r}")
            try:
                moves[seat] = kind.move_from_json(m["move"])
                kind.check(state, seat, moves[seat])
            except (RulesError, KeyError, TypeError, ValueError) as exc:
                return problems + [(f"turn {turn}: seat {seat}: {m.get('move')!r} is not a "
                                    f"legal move: {exc}")]
        try:
            resolution = kind.apply(state, moves, stream)
        except (RulesError, ValueError) as exc:
            return problems + [f"turn {turn}: {exc}"]
        state = resolution.state
        for m in group:
            problems += _dealt_problems(version, turn, m, resolution)
        expected += 1
    if not kind.over(state):
        problems.append("the game is not over")
    elif _normal(record.get("result")) != _normal({"standings": _standings(version, kind.standings(state))}):
        problems.append("the recorded result does not match a recount")
    return problems


def _dealt_problems(version: object, turn: int, m: JSONMap,
                    resolution: Resolution[S]) -> list[str]:
    """What the move's entry says the seed dealt with it, against what the replay dealt."""
    seat = int(m["seat"])
    if version != FORMAT:   # pbem.record/1: "dealt" as the database kept it, when present
        if "dealt" in m and _normal(m["dealt"]) != _normal(resolution.extras.get(seat, [])):
            return [f"turn {turn}: the dice dealt to seat {seat} do not follow from the seed"]
        return []
    dealt = resolution.record.get(seat, {})
    problems = []
    if _normal(m.get("dealt")) != _normal(dealt.get("dealt")):
        problems.append(f"turn {turn}: the dice dealt to seat {seat} do not follow from the "
                        "seed")
    if _normal(m.get("shown")) != _normal(dealt.get("shown")):
        problems.append(f"turn {turn}: the dice seat {seat} showed are not the ones its "
                        "expose showed")
    return problems


def _standings(version: object, standings: list[dict[str, int]]) -> list[dict[str, int]]:
    if version == FORMAT:
        return standings
    return [{k: v for k, v in s.items() if k in V1_STANDING_KEYS} for s in standings]


def places(kind: str, standings: Sequence[Mapping[str, int]]) -> Message:
    """A record's standings in words: "1. seat 2 (5 virtual dice), 2. seat 4 (...)"."""
    of = KINDS[kind]
    return joined([_("{rank}. seat {seat} ({score})", rank=s["rank"], seat=s["seat"],
                     score=getattr(of.score_words(s), "message", of.score_words(s)))
                   for s in standings], ", ")


def summary(record: JSONMap) -> Message:
    """One line on a verified record's result, for `pbem verify` and the web pages."""
    kind = KINDS[str(record["kind"])]
    return _("game {game} ({title}): the seed matches the commitment, the seat draw, every "
             "roll and every move check out, and the result is: {places}",
             game=record["game"], title=KIND_TITLES.get(kind.name, kind.title),
             places=places(kind.name, (record.get("result") or {}).get("standings", [])))


@dataclass(frozen=True)
class Verdict:
    """What `pbem verify` says of a record: OK, or one FAIL line a problem."""

    ok: bool
    lines: tuple[str, ...]


def check_record(data: object) -> Verdict:
    """Verify a record as read from JSON, any format (``pbem.record/2`` or /1, or the postal
    ``pbem.bluff.record/1``): `pbem verify` and the web pages print these lines. Raises
    ValueError, KeyError or TypeError when the data is not a record at all."""
    if not isinstance(data, dict):
        raise TypeError(f"a record is a JSON object, not {type(data).__name__}")
    if data.get("format") in FORMATS:   # classic, cup ... (pbem.record/2 and /1)
        problems = verify_generic(data)
        if problems:
            return Verdict(False, tuple(f"FAIL: {problem}" for problem in problems))
        return Verdict(True, (Told(_("OK: {summary}", summary=summary(data))),))
    record = GameRecord.from_json(data)
    problems = verify(record)
    if problems:
        return Verdict(False, tuple(f"FAIL: {problem}" for problem in problems))
    standings = record.result["standings"] if record.result else []
    said = _("OK: game {game}: the seed matches the commitment, every roll, re-roll and move "
             "checks out, and the result is {standings}", game=record.game,
             standings=places("postal", standings))
    return Verdict(True, (Told(said),))


def score_words(kind: str, standing: Mapping[str, int]) -> str:
    """One standing's score in words: "3 points, 2 tokens", "2 dice left (worth 3)"."""
    return KINDS[kind].score_words(standing)
