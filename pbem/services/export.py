"""A game's record as JSON, for `pbem export` and the demo.

Postal games give the record `pbem verify` checks (pbem.bluff.record/1,
pbem.rules.record); other kinds the generic pbem.record/2 (pbem.kinds.record, checked by
pbem.kinds.verify).
"""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Session

from pbem.games import entrants_of, load_state, moves_of, rules_of
from pbem.kinds import kind_of
from pbem.kinds.record import Entrant, MoveRow, generic_record
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
    return generic_record(
        kind_of(game), game=game.name, rules=json.loads(game.rules_json),
        seed=bytes.fromhex(game.seed_hex), commitment=game.commitment,
        entrants=[Entrant(p.entrant, p.name, p.seat) for p in entrants_of(session, game)],
        moves=[MoveRow(r.turn, r.seat, r.by, json.loads(r.move_json))
               for r in moves_of(session, game)],
        started=game.turn > 0)
