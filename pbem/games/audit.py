"""The audit trail: what happened to a game and who did it, and whether a thing was
already said.

Works inside the caller's transaction.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session, select

from pbem.store.models import AuditEntry
from pbem.store.rows import GameView


def already_told(session: Session, game: GameView, action: str, detail: str) -> bool:
    """Whether an audit entry of this action and detail exists (to say a thing once)."""
    return session.exec(select(AuditEntry.id).where(
        AuditEntry.game_id == game.id, AuditEntry.action == action,
        AuditEntry.detail == detail)).first() is not None


def audit(session: Session, game: GameView | None, now: datetime, action: str, detail: str = "",
          actor: str = "server") -> None:
    """One entry in the audit trail (what happened to a game, and who did it)."""
    session.add(AuditEntry(game_id=game.id if game is not None else None, at=now, actor=actor,
                           action=action, detail=detail[:2000]))
