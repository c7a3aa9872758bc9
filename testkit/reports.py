"""Whole games played by the kinds' own robots through the server's turn code, every
report rendered by the production function with every optional section filled (table
talk, a watcher, standing orders, a game policy): what the report tests and
bench/render.py look at."""

from __future__ import annotations

import email
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import policy
from pathlib import Path
from typing import Any

import jinja2

from pbem.config import Settings
from pbem.games.lifecycle import add_player, create_game, start_game
from pbem.games.records import find_game, seated, update_players
from pbem.games.states import load_state
from pbem.kinds import kind_named
from pbem.render.reports import Renderer
from pbem.services.export import export_json
from pbem.services.post import Post
from pbem.services.reports import enqueue_reports
from pbem.services.turns import played_for_notes, resolve_turn
from pbem.store.db import open_database
from pbem.store.models import Game, OutboundMail, TalkMessage, Watcher
from pbem.store.work import Work

NAMES = ["Ann", "Bob", "Cyd", "Dee", "Eve", "Fay"]
WATCHER = "watcher@example.org"
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@dataclass
class Mail:
    """One rendered report: who got it (seat None: a watcher), its parts, its view."""

    seat: int | None
    turn: int
    subject: str
    text: str
    html: str
    view: dict[str, Any]


@dataclass
class Played:
    kind: str
    mails: list[Mail] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)


def _parts(raw: bytes) -> tuple[str, str, dict[str, Any]]:
    msg = email.message_from_bytes(raw, policy=policy.default)
    text = html = ""
    view: dict[str, Any] = {}
    for part in msg.walk():
        if part.get_filename() == "report.json":
            view = json.loads(part.get_content())
        elif part.get_content_type() == "text/plain" and not part.get_filename():
            text = part.get_content()
        elif part.get_content_type() == "text/html":
            html = part.get_content()
    return text, html, view


def play(tmp: Path, kind: str, options: str, players: int, seed: int, *,
         most_turns: int = 3000, renderer: Renderer | None = None) -> Played:
    """A whole game of robots; every turn one SAY, a watcher, standing orders and a
    game policy, so every report section has something in it. ``renderer``: the
    shipped templates unless given (bench/render.py records what each render gets)."""
    engine = open_database(f"sqlite:///{tmp / f'{kind}-{seed}.db'}")
    renderer = renderer or Renderer()
    assert renderer.env.undefined is jinja2.StrictUndefined
    out = Played(kind)
    now = START
    clock = [now]
    post = Post(Settings(address="bluff@example.org"), renderer, lambda: clock[0])
    with Work(engine) as session:
        k = kind_named(kind)
        game = create_game(session, "g1", seed=seed.to_bytes(32, "big"), now=now,
                           turn_hours=24, kind=kind,
                           rules_json=k.parse_options(options.split()))
        # the game's policy plays the missing orders of players without a standing order;
        # the normal robot exposes whenever it can, so the reports show exposed dice
        game.options_json = json.dumps({"policy": "challenge", "robot": "normal"})
        for i in range(players):
            add_player(session, game, f"p{i + 1}@example.org", NAMES[i])
        start_game(session, game, now)
        session.add(Watcher(game_id=game.id, email=WATCHER, created_at=now))
        seats = seated(session, game)
        # a standing order (postal and classic)
        update_players(session, game, {seats[1].id: {"default_order": "RAISE"},
                                       seats[2].id: {"default_order": "ROBOT"}})
        rows = enqueue_reports(session, post, game, load_state(session, game), now=now,
                               notes=[])
        _collect(out, [(session.get(OutboundMail, row.id), row.raw) for row in rows], game)
        while game.status == "running" and game.turn <= most_turns:
            speaker = 1 + game.turn % players
            session.add(TalkMessage(game_id=game.id, turn=game.turn, seat=speaker,
                                    name=seats[speaker].name,
                                    text=f"Turn {game.turn}: I <b>never</b> bluff.\nHonest.",
                                    created_at=now))
            session.add(TalkMessage(game_id=game.id, turn=game.turn, seat=None,
                                    name="the referee", text="Play nicely.", created_at=now))
            now += timedelta(hours=1)
            clock[0] = now
            outcome = resolve_turn(session, game, now)
            notes = outcome.notes + played_for_notes(game, outcome, seated(session, game))
            rows = enqueue_reports(session, post, game, outcome.state, now=now, notes=notes)
            _collect(out, [(session.get(OutboundMail, row.id), row.raw) for row in rows], game)
        assert game.status == "over", f"{kind} did not end in {most_turns} turns"
        out.record = export_json(session, find_game(session, "g1"))
        session.commit()
    engine.dispose()
    return out


def _collect(out: Played, rows: list[tuple[OutboundMail | None, bytes]], game: Game) -> None:
    for row, raw in rows:
        assert row is not None
        text, html, view = _parts(raw)
        subject = email.message_from_bytes(raw, policy=policy.default)["Subject"]
        out.mails.append(Mail(row.seat, game.turn, str(subject), text, html, view))
