"""What a turn's reports read of a game besides its state: the watchers, the table talk
(and what of it each reader hears), a seat's latest report.

Works inside the caller's transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from pbem.store.engines import core_read
from pbem.store.models import (
    OutboundMail,
    TalkMessage,
    Watcher,
)
from pbem.store.rows import GameView
from pbem.text.wording import _

# the reads of every turn's reports, built once and run as Core (pbem.store.engines.core_read)
_WATCHERS_OF = (select(Watcher.email).where(col(Watcher.game_id) == bindparam("game"))
                .order_by(col(Watcher.id)))
_TALK_OF = (select(TalkMessage.name, TalkMessage.seat, TalkMessage.text, TalkMessage.to_seat)
            .where(col(TalkMessage.game_id) == bindparam("game"),
                   col(TalkMessage.turn) == bindparam("turn"))
            .order_by(col(TalkMessage.id)))


def watchers_of(session: Session, game: GameView) -> list[str]:
    return list(core_read(session, _WATCHERS_OF, {"game": game.id}).scalars())


def talk_lines(session: Session, game: GameView) -> list[dict[str, Any]]:
    """The table talk of the turn before the one being reported, for the report's section:
    {"from", "text", "seat", "to"} ("to": the one seat of private press, else None); what
    one reader may see of it is heard_by's."""
    rows = core_read(session, _TALK_OF, {"game": game.id, "turn": game.turn - 1})
    return [{"from": _("{name} (player {seat})", name=r.name, seat=r.seat)
             if r.seat is not None else _("the referee"),
             "text": r.text, "seat": r.seat, "to": r.to_seat} for r in rows]


def heard_by(talk: list[dict[str, Any]], seat: int | None) -> list[dict[str, Any]]:
    """The talk a reader sees: all of the table's, and what was said privately to or by
    their seat, marked so (seat None: a watcher, the table's alone)."""
    heard = []
    for line in talk:
        if line["to"] is None:
            heard.append(line)
        elif seat is not None and seat in (line["to"], line["seat"]):
            said = (_("{who}, to you only", who=line["from"]) if line["to"] == seat else
                    _("{who}, to player {seat} only", who=line["from"], seat=line["to"]))
            heard.append({**line, "from": said})
    return heard


def latest_report(session: Session, game: GameView, seat: int) -> OutboundMail | None:
    return session.exec(select(OutboundMail).where(
        OutboundMail.game_id == game.id, OutboundMail.seat == seat,
        OutboundMail.kind == "report").order_by(col(OutboundMail.id).desc())).first()
