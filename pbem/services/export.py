"""A game's record as JSON, for `pbem export` and the demo.

Postal games give the record `pbem verify` checks (pbem.bluff.record/1,
pbem.rules.record); other kinds the generic pbem.record/1 (pbem.kinds.verify).
"""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Session

from pbem.games import entrants_of, load_state, moves_of, rules_of
from pbem.kinds import kind_of
from pbem.models import Game
from pbem.rules.moves import move_from_json
from pbem.rules.record import GameRecord, RecordedMove, result_json


def recorded_moves(session: Session, game: Game) -> list[RecordedMove]:
    rows = moves_of(session, game)
    return [RecordedMove(r.turn, r.seat, r.minigame, move_from_json(json.loads(r.move_json)),
                         r.by, tuple(json.loads(r.rerolled_json))) for r in rows]



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
    rows = moves_of(session, game)
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
