"""The web pages' reads: one query a question, bounded by paging, never a write.

The index of 10,000 games reads one page of games (LIMIT/OFFSET on an indexed
status) and the player counts of just those games in one grouped query.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, col, func, select

from pbem.kinds.options import options_of
from pbem.store.models import Game, PendingOrder, Player, TalkMessage
from pbem.text.wording import Message, _
from pbem.web.page_data import TalkLine

GAME_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
MAX_GAME_NAME = 64
TALK_ON_PAGE = 200


@dataclass(frozen=True)
class Section:
    name: str
    title: Message
    name_in_text: Message     # the title in a sentence ("the list of running games")
    statuses: tuple[str, ...]
    open_only: bool = False


SECTIONS = {s.name: s for s in (
    Section("running", _("Running games"), _("running games"), ("running", "paused")),
    Section("open", _("Open for sign-up"), _("open for sign-up"), ("new",), open_only=True),
    Section("finished", _("Finished games"), _("finished games"), ("over",)),
)}
# GameOptions.to_json writes sorted keys with json.dumps' default separators
OPEN_MARK = '%"open": true%'


def aware(when: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; they are UTC."""
    if when is None or when.tzinfo is not None:
        return when
    return when.replace(tzinfo=UTC)


def iso(when: datetime | None) -> str | None:
    when = aware(when)
    return None if when is None else when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plausible_game_name(name: str) -> bool:
    return 0 < len(name) <= MAX_GAME_NAME and set(name) <= GAME_NAME_CHARS


def game_named(session: Session, name: str) -> Game | None:
    if not plausible_game_name(name):
        return None
    return session.exec(select(Game).where(Game.name == name)).first()


def _section_filter(section: Section) -> list[Any]:
    where: list[Any] = [col(Game.status).in_(section.statuses)]
    if section.open_only:
        where.append(col(Game.options_json).like(OPEN_MARK))
    return where


def _section_order(section: Section) -> list[Any]:
    if section.name == "running":
        # the nearest deadline first; games without one last
        return [col(Game.deadline).is_(None), col(Game.deadline), col(Game.name)]
    if section.name == "finished":
        return [col(Game.ended_at).desc(), col(Game.id).desc()]
    return [col(Game.created_at).desc(), col(Game.id).desc()]


def count_games(session: Session, section: Section) -> int:
    return int(session.exec(select(func.count()).select_from(Game)
                            .where(*_section_filter(section))).one())


def games_page(session: Session, section: Section, page: int, size: int) -> list[Game]:
    query = (select(Game).where(*_section_filter(section)).order_by(*_section_order(section))
             .offset((page - 1) * size).limit(size))
    return list(session.exec(query))


def player_counts(session: Session, game_ids: list[int]) -> dict[int, int]:
    """game id -> its players now (a replaced player no longer counts)."""
    if not game_ids:
        return {}
    rows = session.exec(select(Player.game_id, func.count()).where(
        col(Player.game_id).in_(game_ids), col(Player.active).is_(True))
        .group_by(col(Player.game_id)))
    return {int(game_id): int(n) for game_id, n in rows}


def talk_from(name: str, seat: int | None, to_seat: int | None) -> Message:
    """Who said a line of talk: "Ann (player 3)", "Ref (referee)", "..., to player 2 only"."""
    said = (_("{name} (player {seat})", name=name, seat=seat) if seat is not None
            else _("{name} (referee)", name=name))
    return said if to_seat is None else _("{who}, to player {seat} only", who=said,
                                          seat=to_seat)


def talk_of(session: Session, game: Game, limit: int = TALK_ON_PAGE, *,
            said_later: bool = False) -> list[TalkLine]:
    """The game's table talk, oldest first (the latest ``limit`` messages); what was said
    privately (PRESS private, SAY TO) only once the game is over and the referee has
    published it (PUBLISH). Who said it is English, or with ``said_later`` a message
    said in the page's language."""
    published = game.status == "over" and options_of(game).press_published
    query = select(TalkMessage).where(TalkMessage.game_id == game.id)
    if not published:
        query = query.where(col(TalkMessage.to_seat).is_(None))
    rows = list(session.exec(query.order_by(col(TalkMessage.id).desc()).limit(limit)))
    said = (lambda m: m) if said_later else str
    return [{"turn": r.turn, "seat": r.seat, "name": r.name,
             "from": said(talk_from(r.name, r.seat, r.to_seat)),
             "text": r.text, "at": iso(r.created_at)} for r in reversed(rows)]


def orders_in(session: Session, game: Game) -> set[int]:
    """The seats whose order for the turn in play is in (what it is stays secret)."""
    return set(session.exec(select(PendingOrder.seat).where(
        PendingOrder.game_id == game.id, PendingOrder.turn == game.turn)))


def game_version(session: Session, game: Game, *extra: Any) -> str:
    """Changes whenever anything a game page shows changes: the turn, the status, the
    deadline, the orders in, the table talk, the players. Cheap: no replay of the game."""
    # private press counts only once published: else the tag would tell who polls the
    # page that (and when) a private word was said
    said = select(func.max(TalkMessage.id)).where(TalkMessage.game_id == game.id)
    if not (game.status == "over" and options_of(game).press_published):
        said = said.where(col(TalkMessage.to_seat).is_(None))
    talk = session.exec(said).one()
    players = list(session.exec(select(Player.id, Player.name, Player.seat, Player.active)
                                .where(Player.game_id == game.id).order_by(col(Player.id))))
    facts = [game.id, game.name, game.status, game.turn, iso(game.deadline),
             iso(game.grace_until), game.paused_left_seconds, game.options_json,
             sorted(orders_in(session, game)), talk, [list(p) for p in players], *extra]
    digest = hashlib.sha256(json.dumps(facts, default=str).encode()).hexdigest()[:16]
    return f"t{game.turn}-{digest}"
