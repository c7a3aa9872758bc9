"""A game's record as JSON, for `pbem export` and the demo.

The kind writes it (``GameKind.record``): the generic pbem.record/2 (pbem.kinds.generic_record,
checked by pbem.kinds.verify), or a format of the kind's own that `pbem verify` knows.
"""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Session

from pbem.games import entrants_of, load_state, moves_of
from pbem.kinds import kind_of
from pbem.kinds.generic_record import Entrant, GameRows, MoveRow
from pbem.models import Game


def game_rows(session: Session, game: Game) -> GameRows:
    """The game as stored: what its kind makes the record of."""
    return GameRows(
        game=game.name, rules=json.loads(game.rules_json), seed=bytes.fromhex(game.seed_hex),
        commitment=game.commitment,
        entrants=[Entrant(p.entrant, p.name, p.seat) for p in entrants_of(session, game)],
        moves=[MoveRow(r.turn, r.seat, r.by, json.loads(r.move_json), r.minigame,
                       json.loads(r.rerolled_json)) for r in moves_of(session, game)],
        started=game.turn > 0)


def state_now(session: Session, game: Game) -> Any:
    """The game's state, once it has started (None before)."""
    return load_state(session, game) if game.status in ("running", "over") else None


def export_json(session: Session, game: Game) -> dict[str, Any]:
    """Any game's record as JSON, as its kind writes it."""
    return kind_of(game).record(game_rows(session, game), state_now(session, game))
