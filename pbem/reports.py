"""Turn reports: one mail per player, text + HTML + report.json, queued in the outbox."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from pbem.desk.players import talk_lines
from pbem.desk.signup import watchers_of
from pbem.games import TurnOutcome, player_view, seated
from pbem.kinds import kind_of
from pbem.models import Game, OutboundMail, Player
from pbem.outbox import Origin, enqueue
from pbem.render import Renderer


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


def report_context(game: Game, players: dict[int, Player], state: Any, seat: int | None,
                   now: datetime, origin: Origin, notes: list[str],
                   talk: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """What a report template gets, for every kind (seat None: an observer's public view)."""
    kind = kind_of(game)
    view = player_view(game, players, state, seat)
    over = kind.over(state)
    standings = None
    if over:
        standings = [{"rank": s["rank"], "seat": s["seat"], "number": s["seat"],
                      "name": players[s["seat"]].name if s["seat"] in players else "",
                      "score": s["score"], "virtual_dice": s["score"]}
                     for s in kind.standings(state)]
        view["standings"] = standings
        view["seed"] = game.seed_hex
    player = players.get(seat) if seat is not None else None
    return {
        "view": view, "server_address": origin.address, "game_url": None, "notes": notes,
        "talk": talk or [], "commitment": game.commitment if game.turn == 1 else None,
        "seed": game.seed_hex if over else None,
        "deadline_relative": relative(game.deadline, now),
        "standings": standings, "how_to_order": not over,
        "game": game.name, "turn": game.turn, "you": seat,
        "players": [{"number": s, "name": p.name} for s, p in sorted(players.items())],
        "key": player.key if player is not None else None,
        "deadline": view["deadline"],
        "your_due": kind.due(state).get(seat) if seat is not None and not over else None,
        **kind.report_extras(state, seat),
    }


def played_for_notes(game: Game, outcome: TurnOutcome, players: dict[int, Player]) -> list[str]:
    kind = kind_of(game)
    notes = []
    for seat, move in sorted(outcome.played_for.items()):
        name = players[seat].name if seat in players else f"player {seat}"
        who = ("their standing order" if outcome.played_by.get(seat) == "standing"
               else "the game's policy" if outcome.played_by.get(seat) == "policy"
               else "the robot")
        notes.append(f"Player {seat} ({name}) sent no order in time; {who} played "
                     f"{kind.describe_move(move)} for them.")
    return notes


def enqueue_reports(session: Session, game: Game, state: Any, *, now: datetime,
                    origin: Origin, renderer: Renderer, notes: list[str] | None = None,
                    only_seat: int | None = None, in_reply_to: str | None = None,
                    inbound_id: int | None = None) -> list[OutboundMail]:
    players = seated(session, game)
    talk = talk_lines(session, game)     # the table talk (SAY) since the last report
    rows = []
    for seat, player in sorted(players.items()):
        if only_seat is not None and seat != only_seat:
            continue
        context = report_context(game, players, state, seat, now, origin, notes or [], talk)
        text, html = renderer.render(kind_of(game).report_template, context)
        subject = (f"[bluff {game.name}] final report" if kind_of(game).over(state)
                   else f"[bluff {game.name}] turn {game.turn} report")
        attachment = ("report.json", "application/json",
                      json.dumps(context["view"], indent=2).encode())
        rows.append(enqueue(session, origin, kind="report", to=player.email, subject=subject,
                            text=text, html=html, now=now, attachments=[attachment],
                            in_reply_to=in_reply_to,
                            references=[in_reply_to] if in_reply_to else (),
                            game_id=game.id, seat=seat, turn=game.turn, inbound_id=inbound_id))
    if only_seat is None:
        rows += _watcher_reports(session, game, state, players, now=now, origin=origin,
                                 renderer=renderer, notes=notes or [], talk=talk)
    return rows


def _watcher_reports(session: Session, game: Game, state: Any, players: dict[int, Player], *,
                     now: datetime, origin: Origin, renderer: Renderer, notes: list[str],
                     talk: list[dict[str, str]]) -> list[OutboundMail]:
    """The public view (no hidden dice) for each WATCHer of the game (pbem.desk.signup)."""
    watchers = watchers_of(session, game)
    if not watchers:
        return []
    context = report_context(game, players, state, None, now, origin, notes, talk)
    context["how_to_order"] = False      # watchers have no orders to send
    text, html = renderer.render(kind_of(game).report_template, context)
    subject = (f"[bluff {game.name}] final report (public view)" if kind_of(game).over(state)
               else f"[bluff {game.name}] turn {game.turn} public view")
    attachment = ("report.json", "application/json",
                  json.dumps(context["view"], indent=2).encode())
    return [enqueue(session, origin, kind="watch", to=email, subject=subject, text=text,
                    html=html, now=now, attachments=[attachment], game_id=game.id,
                    turn=game.turn) for email in watchers]


def latest_report(session: Session, game: Game, seat: int) -> OutboundMail | None:
    return session.exec(select(OutboundMail).where(
        OutboundMail.game_id == game.id, OutboundMail.seat == seat,
        OutboundMail.kind == "report").order_by(col(OutboundMail.id).desc())).first()
