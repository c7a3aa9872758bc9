"""Turn reports: one mail per player, text + HTML + report.json, queued in the outbox."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from pbem.games import player_view, seated
from pbem.models import Game, OutboundMail, Player
from pbem.outbox import Origin, enqueue
from pbem.render import Renderer
from pbem.rules.moves import Move
from pbem.rules.postal import PostalState
from pbem.rules.view import odds_view


def relative(deadline: datetime | None, now: datetime) -> str | None:
    if deadline is None:
        return None
    seconds = int((deadline - now).total_seconds())
    if seconds <= 0:
        return "passed"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [f"{days} day{'s' * (days != 1)}"] if days else []
    if hours:
        parts.append(f"{hours} hour{'s' * (hours != 1)}")
    if not days and minutes:
        parts.append(f"{minutes} minute{'s' * (minutes != 1)}")
    return "in " + " ".join(parts or ["less than a minute"])


def report_context(game: Game, players: dict[int, Player], state: PostalState, seat: int,
                   now: datetime, origin: Origin, notes: list[str]) -> dict[str, Any]:
    view = player_view(game, players, state, seat)
    standings = None
    if state.game_over:
        standings = [{"rank": s.rank, "number": s.seat, "name": players[s.seat].name,
                      "virtual_dice": s.virtual_dice} for s in state.standings()]
        view["standings"] = standings
        view["seed"] = game.seed_hex
    return {
        "view": view, "server_address": origin.address, "game_url": None, "notes": notes,
        "talk": [], "commitment": game.commitment if state.turn == 1 else None,
        "seed": game.seed_hex if state.game_over else None,
        "odds": odds_view(state, seat), "deadline_relative": relative(game.deadline, now),
        "standings": standings, "how_to_order": not state.game_over,
    }


def played_for_notes(played_for: dict[int, Move], players: dict[int, Player]) -> list[str]:
    return [f"Player {seat} ({players[seat].name}) sent no order in time; "
            f"the robot played {move} for them." for seat, move in sorted(played_for.items())]


def enqueue_reports(session: Session, game: Game, state: PostalState, *, now: datetime,
                    origin: Origin, renderer: Renderer, notes: list[str] | None = None,
                    only_seat: int | None = None, in_reply_to: str | None = None,
                    inbound_id: int | None = None) -> list[OutboundMail]:
    players = seated(session, game)
    rows = []
    for seat, player in sorted(players.items()):
        if only_seat is not None and seat != only_seat:
            continue
        context = report_context(game, players, state, seat, now, origin, notes or [])
        text, html = renderer.render("report", context)
        subject = (f"[bluff {game.name}] final report" if state.game_over
                   else f"[bluff {game.name}] turn {state.turn} report")
        attachment = ("report.json", "application/json",
                      json.dumps(context["view"], indent=2).encode())
        rows.append(enqueue(session, origin, kind="report", to=player.email, subject=subject,
                            text=text, html=html, now=now, attachments=[attachment],
                            in_reply_to=in_reply_to,
                            references=[in_reply_to] if in_reply_to else (),
                            game_id=game.id, seat=seat, turn=state.turn, inbound_id=inbound_id))
    return rows


def latest_report(session: Session, game: Game, seat: int) -> OutboundMail | None:
    return session.exec(select(OutboundMail).where(
        OutboundMail.game_id == game.id, OutboundMail.seat == seat,
        OutboundMail.kind == "report").order_by(col(OutboundMail.id).desc())).first()
