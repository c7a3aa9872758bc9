"""Telling people of desk events: notices to a game's players, the referee, the audit trail.

Every change players should know of (deadline, pause, resume, cancel, grace,
outage shift, vacation) goes to each active player of the game as one
"notice" mail, and is recorded as an AuditEntry in the same transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select

from pbem.models import AuditEntry, Game, OutboundMail, Player
from pbem.outbox import enqueue

if TYPE_CHECKING:
    from pbem.referee import Referee


def notice(session: Session, referee: "Referee", to: str, subject: str, paragraphs: list[str],
           now: datetime, *, game: Game | None = None, seat: int | None = None,
           turn: int | None = None, kind: str = "notice") -> OutboundMail:
    """One notice mail (the "notice" template) to one address."""
    context = {"subject": subject, "paragraphs": paragraphs,
               "game": game.name if game is not None else None}
    text, html = referee.renderer.render("notice", context)
    return enqueue(session, referee.origin, kind=kind, to=to, subject=subject, text=text,
                   html=html, now=now, game_id=game.id if game is not None else None,
                   seat=seat, turn=turn)


def active_players(session: Session, game: Game) -> list[Player]:
    return list(session.exec(select(Player).where(Player.game_id == game.id,
                                                  col(Player.active).is_(True))
                             .order_by(col(Player.entrant))))


def audit(session: Session, game: Game | None, now: datetime, action: str, detail: str = "",
          actor: str = "server") -> None:
    session.add(AuditEntry(game_id=game.id if game is not None else None, at=now, actor=actor,
                           action=action, detail=detail[:2000]))


def announce(session: Session, referee: "Referee", game: Game, subject: str,
             paragraphs: list[str], now: datetime, *, action: str, actor: str = "server",
             players: list[Player] | None = None) -> int:
    """A notice to each of the game's active players (or to `players`), and an audit entry.

    The notice carries the game, seat and turn, so a reply to it is read like
    a reply to the player's report.
    """
    recipients = active_players(session, game) if players is None else players
    full = f"[bluff {game.name}] {subject}"
    for player in recipients:
        notice(session, referee, player.email, full, paragraphs, now, game=game,
               seat=player.seat, turn=game.turn if player.seat is not None else None)
    audit(session, game, now, action, " ".join(paragraphs), actor=actor)
    return len(recipients)


def tell_referee(referee: "Referee", session: Session, subject: str,
                 paragraphs: list[str]) -> None:
    """A notice to the referee's address."""
    notice(session, referee, referee.settings.referee, subject, paragraphs, referee.clock())


def already_told(session: Session, game: Game, action: str, detail: str) -> bool:
    """Whether an audit entry of this action and detail exists (to say a thing once)."""
    return session.exec(select(AuditEntry.id).where(
        AuditEntry.game_id == game.id, AuditEntry.action == action,
        AuditEntry.detail == detail)).first() is not None
