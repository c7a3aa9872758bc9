"""A game's record as JSON, for `pbem export` and the demo, and the JSON schemas of the
records and the web pages' data with the registered kinds named in them.

The kind writes it (``GameKind.record``): the generic pbem.record/2 (pbem.kinds.generic_record,
checked by pbem.kinds.verify), or a format of the kind's own that `pbem verify` knows.
"""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Session

from pbem.games.records import entrants_of, read_players, seats_of
from pbem.games.states import moves_of, replayed_state
from pbem.kinds import KINDS, kind_of
from pbem.kinds.generic_record import Entrant, GameRows, MoveRow
from pbem.kinds.jsontypes import KindJSON
from pbem.store.paths import packaged_dir
from pbem.store.rows import GameView


def game_rows(session: Session, game: GameView) -> GameRows:
    """The game as stored: what its kind makes the record of."""
    return GameRows(
        game=game.name, rules=json.loads(game.rules_json), seed=bytes.fromhex(game.seed_hex),
        commitment=game.commitment,
        entrants=[Entrant(p.entrant, p.name, p.seat) for p in entrants_of(session, game)],
        moves=[MoveRow(r.turn, r.seat, r.by, json.loads(r.move_json), r.minigame,
                       json.loads(r.rerolled_json)) for r in moves_of(session, game)],
        started=game.turn > 0)


def state_now(session: Session, game: GameView) -> Any:
    """The game's state, once it has started (None before)."""
    if game.status not in ("running", "over"):
        return None
    return replayed_state(session, game, seats=seats_of(read_players(session, game)))


def export_json(session: Session, game: GameView) -> KindJSON:
    """Any game's record as JSON, as its kind writes it."""
    return kind_of(game).record(game_rows(session, game), state_now(session, game))



# a JSON schema document stays open JSON (values Any): its shape is JSON Schema's, which
# this module only walks to join the kinds' parts in


def schema(name: str) -> dict[str, Any]:
    """The JSON schema ``name`` of schema/ with its "kind" an enum of the registered kinds'
    names (a kind registered later too): in a record's schema, the kinds whose record has
    one of its formats; in the web pages' schema, every kind. Each of those kinds' part of
    it (GameKind.schema_part: its rules, moves, tables) is joined to it."""
    data: dict[str, Any] = json.loads((packaged_dir("schema") / name).read_text(
        encoding="utf-8"))
    defs, properties = data.get("$defs", {}), data.get("properties", {})
    kind = defs["kind"] if "kind" in defs else properties["kind"]
    fmt = properties.get("format", {})
    formats = fmt.get("enum", [fmt["const"]] if "const" in fmt else None)
    kinds = [k for k in KINDS.values() if formats is None or k.record_format in formats]
    kind["enum"] = [k.name for k in kinds]
    for each in kinds:
        part = each.schema_part(name)
        if part is not None:
            _join(data, each.name, part)
    return data


def _join(data: dict[str, Any], kind: str, part: dict[str, Any]) -> None:
    """A kind's part of a schema joined to it (GameKind.schema_part says what it holds):
    what the kind's documents hold besides, written beside the kind, never in schema/."""
    defs = data.setdefault("$defs", {})
    taken = set(defs) & set(part.get("$defs", {}))
    if taken:
        raise ValueError(f"game kind '{kind}' defines {sorted(taken)} again")
    defs.update(part.get("$defs", {}))
    for def_name, choices in part.get("one_of", {}).items():
        defs[def_name]["oneOf"] = [*defs[def_name]["oneOf"], *choices]
    for def_name, properties in part.get("properties", {}).items():
        defs[def_name]["properties"].update(properties)
    if "then" in part:
        data.setdefault("allOf", []).append(
            {"if": {"properties": {"kind": {"const": kind}}}, "then": part["then"]})
