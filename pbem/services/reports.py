"""Turn reports: one mail per player, text + HTML + report.json, queued in the outbox.

The view (``player_view``) is what report.json holds (its format is the kind's
``view_format``: pbem.bluff.view/1 for postal games, pbem.<kind>.view/1 for the others);
watchers get the public one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlmodel import Session

from pbem.config import WebSettings
from pbem.games.records import read_players, seated, seats_of
from pbem.games.reporting import heard_by, talk_lines, watchers_of
from pbem.games.states import replayed_state
from pbem.games.turn_in_play import GameFacts
from pbem.kinds import GameKind, kind_of
from pbem.kinds.options import LEVEL_NAMES, GameOptions, options_of, robot_level
from pbem.outbox import Composed, Origin, Queued, compose, queue_all
from pbem.render.charts import Course
from pbem.render.reports import SharedParts
from pbem.services.draft_data import (
    DraftUnfit,
    TurnReports,
    draft_bytes,
    moves_until,
    reports_from_draft,
)
from pbem.services.drafts import Compose, Drafted, Waiting, queue_draft
from pbem.services.export import export_json
from pbem.services.post import Post, tagged
from pbem.services.replay import course, replay_steps
from pbem.store.models import Game
from pbem.store.rows import GameView, PlayerView, game_row
from pbem.store.work import Work
from pbem.text.deadlines import relative_said
from pbem.text.links import key_generation, private_link
from pbem.text.wording import _

S = TypeVar("S")   # the game kind's state
M = TypeVar("M")   # the game kind's move

log = logging.getLogger(__name__)

__all__ = ["TurnReports", "compose_draft", "compose_reports", "enqueue_reports"]


def web_links(web: WebSettings, game: GameView, player: PlayerView | None,
              now: datetime) -> tuple[str | None, dict[str, str] | None]:
    """The game's public page and the player's private one (pbem web), when the server has
    a [web] base_url (and, for the private page, a secret): (game_url, private_link)."""
    if not web.base_url:
        return None, None
    game_url = f"{web.base_url.rstrip('/')}/games/{game.name}"
    if player is None or player.id is None or player.seat is None or game.id is None:
        return game_url, None
    url = private_link(web.base_url, web.secret, web.link_days, game_id=game.id,
                       seat=player.seat, player_id=player.id,
                       generation=key_generation(player.key_hash, player.key), now=now)
    until = (now + timedelta(days=web.link_days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return game_url, ({"url": url, "until": until} if url else None)


# A report's template context stays open (values Any): the kind's report_extras join
# it under its own keys, and the kind's templates read what they need of it.
def report_context(game: GameView, players: Mapping[int, PlayerView], state: S, seat: int | None,
                   now: datetime, origin: Origin, notes: list[str],
                   talk: list[dict[str, Any]] | None = None,
                   web: WebSettings | None = None,
                   course: Course | None = None, *, kind: GameKind[S, M] | None = None,
                   options: GameOptions | None = None) -> dict[str, Any]:
    """What a report template gets, for every kind (seat None: an observer's public view);
    course: the game's course (pbem.services.replay.course), which the final report draws.
    ``kind`` and ``options``: the game's, if the caller has them."""
    kind = kind or kind_of(game)
    view = player_view(game, players, state, seat, kind=kind)
    over = kind.over(state)
    standings = None
    if over:
        # the kind's own keys (classic: dice held apart from their value; cup: tokens)
        standings = [{**s, "number": s["seat"],
                      "name": players[s["seat"]].name if s["seat"] in players else "",
                      **kind.report_standing(s)}
                     for s in kind.standings(state)]
        view["standings"] = standings
        view["seed"] = game.seed_hex
    player = players.get(seat) if seat is not None else None
    game_url, private = web_links(web or WebSettings(), game, player, now)
    return {
        "view": view, "server_address": origin.address, "game_url": game_url,
        "private_link": private, "notes": notes,
        "talk": talk or [], "commitment": game.commitment if game.turn == 1 else None,
        "seed": game.seed_hex if over else None,
        "deadline_relative": relative_said(game.deadline, now),
        "standings": standings, "how_to_order": not over,
        "game": game.name, "turn": game.turn, "you": seat,
        "players": [{"number": s, "name": p.name} for s, p in sorted(players.items())],
        "key": player.key if player is not None else None,
        "deadline": view["deadline"],
        "your_due": kind.due(state).get(seat) if seat is not None and not over else None,
        "record_file": record_file(game) if over else None,
        "robot_level": LEVEL_NAMES[robot_level(game, options)],
        "timezone": player.timezone if player is not None else None,
        # the pictures (pbem.render.charts): the odds of each bid the reader must answer now, and
        # the course of the game in the final report
        "bid_charts": kind.bid_charts(state, seat) if seat is not None and not over else [],
        "course": course if over else None,
        **kind.report_extras(state, seat),
    }


# what a seat's report context holds that is the reader's own: left out of the context the
# parts every reader shares are rendered with (Renderer.shared_parts), so that a shared
# template that reads one fails instead of showing one reader's to all
PERSONAL = ("notes", "talk", "key", "private_link", "timezone", "your_due", "bid_charts")


def public_context(game: GameView, players: Mapping[int, PlayerView], state: S, now: datetime,
                   origin: Origin, web: WebSettings | None = None,
                   course: Course | None = None, *, kind: GameKind[S, M] | None = None,
                   options: GameOptions | None = None) -> dict[str, Any]:
    """The context of the parts of a turn's report that every reader shares: the public
    view's (no hidden dice), without anything that is one reader's (PERSONAL)."""
    context = report_context(game, players, state, None, now, origin, [], None, web,
                             course, kind=kind, options=options)
    for key in PERSONAL:
        del context[key]
    return context


def view_json(view: Mapping[str, object]) -> bytes:
    """A report's view as its JSON attachment: on one line, which Python's C encoder
    writes (with an indent the pure-Python one runs, ~1 ms a report)."""
    return json.dumps(view).encode()


def record_file(game: GameView) -> str:
    """The name the game's record has as an attachment (final report, RECORD)."""
    return f"{game.name}-record.json"


def record_attachment(session: Session, game: GameView) -> tuple[str, str, bytes]:
    """The game's record (pbem export's JSON) as an attachment, for `pbem verify`."""
    return (record_file(game), "application/json",
            json.dumps(export_json(session, game), indent=2).encode())


def enqueue_reports(session: Work, post: Post, game: GameView, state: S, *, now: datetime,
                    notes: list[str] | None = None,
                    seat_notes: dict[int, list[str]] | None = None,
                    only_seat: int | None = None, in_reply_to: str | None = None,
                    inbound_id: int | None = None,
                    facts: GameFacts[S, M] | None = None,
                    draft: bool = False) -> list[Queued]:
    """The reports of the game as ``state`` stands (``facts``: what the transaction knows
    of the game, if read), one a seat (``only_seat``: that one), then the watchers'.
    ``draft`` (with ``facts``): queued as one draft (pbem.services.drafts) that the
    composer makes the mails of once this transaction has committed (none returned here)."""
    turn = turn_reports(session, game, state, now=now, notes=notes, seat_notes=seat_notes,
                        only_seat=only_seat, in_reply_to=in_reply_to, inbound_id=inbound_id,
                        facts=facts)
    if draft and facts is not None:
        try:   # the state as its moves (pbem.services.draft_data)
            raw = draft_bytes(turn, seats_of(facts.players), moves_until(session, game))
        except DraftUnfit as exc:   # made now, as without a composer: nothing lost
            log.warning("the reports of %s are made at once: %s", game.name, exc)
        else:
            queue_draft(session, post.origin, turn, raw)
            return []
    # all at once: on SQLite two statements for a batch
    return queue_all(session, compose_reports(session, post, turn))


def turn_reports(session: Work, game: GameView, state: S, *, now: datetime,
                 notes: list[str] | None = None,
                 seat_notes: dict[int, list[str]] | None = None,
                 only_seat: int | None = None, in_reply_to: str | None = None,
                 inbound_id: int | None = None,
                 facts: GameFacts[S, M] | None = None) -> TurnReports[S]:
    """What the reports of the game as ``state`` stands are made of (enqueue_reports)."""
    players = dict(facts.seated) if facts is not None else dict(seated(session, game))
    kind = facts.kind if facts is not None else kind_of(game)
    over = kind.over(state)
    # the final report carries the game's record, for `pbem verify`, and its course
    return TurnReports(game=game, state=state, now=now, players=players,
                       options=facts.options if facts is not None else None,
                       talk=talk_lines(session, game),   # the table talk since the last report
                       record=[record_attachment(session, game)] if over else [],
                       drawn=game_course(session, game, players) if over else None,
                       notes=notes, seat_notes=seat_notes, only_seat=only_seat,
                       in_reply_to=in_reply_to, inbound_id=inbound_id)


def compose_reports(session: Session, post: Post, turn: TurnReports[S]) -> list[Composed]:
    """The mails of a turn's reports, built (pbem.outbox.compose) and not queued yet: one
    a seat (``only_seat``: that one), then the watchers'. ``session`` is only read."""
    game, state, now, players = turn.game, turn.state, turn.now, turn.players
    origin, renderer = post.origin, post.renderer
    kind, options, talk = kind_of(game), turn.options, turn.talk
    over = kind.over(state)
    in_reply_to = turn.in_reply_to
    mails: list[Composed] = []
    # what every report of the turn shares (the watchers' too), rendered once a language
    shared: dict[str, SharedParts | None] = {}

    def shared_in(language: str) -> SharedParts | None:
        if language not in shared:
            public = public_context(game, players, state, now, origin, post.settings.web,
                                    turn.drawn, kind=kind, options=options)
            shared[language] = renderer.shared_parts(kind.report_template, public, language)
        return shared[language]

    for seat, player in sorted(players.items()):
        if turn.only_seat is not None and seat != turn.only_seat:
            continue
        told = (turn.seat_notes or {}).get(seat, turn.notes or [])   # "you" for the reader's seat
        context = report_context(game, players, state, seat, now, origin, told,
                                 heard_by(talk, seat), post.settings.web, turn.drawn, kind=kind,
                                 options=options)
        language = post.language_of(session, player.email, game, player=player,
                                    options=options, chosen=player.chosen)
        text, html = renderer.render(kind.report_template, context, language,
                                     player.timezone, shared=shared_in(language))
        subject = post.subject(tagged(game.name, _("final report") if over
                                      else _("turn {turn} report", turn=game.turn)), language)
        attachment = ("report.json", "application/json", view_json(context["view"]))
        mails.append(compose(post.origin_in(language), kind="report", to=player.email,
                             subject=subject, text=text, html=html, now=now,
                             attachments=[attachment, *turn.record],
                             in_reply_to=in_reply_to,
                             references=[in_reply_to] if in_reply_to else (),
                             game_id=game.id, seat=seat, turn=game.turn,
                             inbound_id=turn.inbound_id, shipped_html=renderer.shipped_only))
    if turn.only_seat is None:
        mails += _watcher_reports(session, post, game, state, players, now=now,
                                  notes=turn.notes or [], talk=talk, record=turn.record,
                                  course=turn.drawn, kind=kind, options=options,
                                  shared_in=shared_in)
    return mails


def compose_draft(session: Session, post: Post, draft: Waiting) -> Drafted:
    """The mails of a draft's reports (pbem.services.drafts.make: an error raised is the
    draft's, told to the referee), and why they were made from the stored game, if they
    were; ``session`` is only read."""
    turn, remade = draft_reports(session, draft)
    return Drafted(compose_reports(session, post, turn), remade)


def composing(post: Post) -> Compose:
    """How a draft's mails are made with ``post`` (the tick's, or the composer's own),
    for pbem.services.drafts to call."""
    def compose(session: Session, draft: Waiting) -> Drafted:
        return compose_draft(session, post, draft)
    return compose


class DraftLost(Exception):
    """A draft that cannot be read and whose game has moved on from its turn."""


def draft_reports(session: Session, draft: Waiting) -> tuple[TurnReports[Any], str | None]:
    """What a draft's reports are made of: as it holds them, or, a draft this version
    cannot read (another format: written by another version of pbem), made again from
    the stored game if the game still stands at the draft's turn (the turn's notes are
    then lost: they are said by the transaction that played it; the second value says why,
    for the referee); DraftLost if not."""
    try:
        return reports_from_draft(session, draft.raw), None
    except Exception as exc:   # noqa: BLE001 - any draft it cannot read is made again
        why = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("draft %s cannot be read (%s); made again from game %s",
                    draft.id, why, draft.game_id)
    game = session.get(Game, draft.game_id) if draft.game_id is not None else None
    if game is None or game.turn != draft.turn:
        raise DraftLost(f"a draft this version cannot read, and its game has moved on from "
                        f"turn {draft.turn}")
    row = game_row(game)
    kind = kind_of(row)
    players = read_players(session, row)
    state = replayed_state(session, row, seats=seats_of(players), kind=kind)
    over = kind.over(state)
    seats = {p.seat: p for p in players if p.seat is not None and p.active}
    return TurnReports(game=row, state=state, now=draft.created_at, players=seats,
                       options=options_of(row), talk=talk_lines(session, row),
                       record=[record_attachment(session, row)] if over else [],
                       drawn=game_course(session, row, seats) if over else None,
                       inbound_id=draft.inbound_id), why


def _watcher_reports(session: Session, post: Post, game: GameView, state: S,
                     players: Mapping[int, PlayerView], *, now: datetime, notes: list[str],
                     talk: list[dict[str, Any]],
                     record: list[tuple[str, str, bytes]],
                     course: Course | None, kind: GameKind[S, M],
                     options: GameOptions | None,
                     shared_in: Callable[[str], SharedParts | None]) -> list[Composed]:
    """The public view (no hidden dice) for each WATCHer of the game (commands.signup);
    ``shared_in``: the parts every report of the turn shares, in a language."""
    watchers = watchers_of(session, game)
    if not watchers:
        return []
    context = report_context(game, players, state, None, now, post.origin, notes,
                             heard_by(talk, None), post.settings.web, course, kind=kind,
                             options=options)
    context["how_to_order"] = False      # watchers have no orders to send
    attachment = ("report.json", "application/json", view_json(context["view"]))
    mails: list[Composed] = []
    # a watcher reads their own language if they play here, else the game's: one
    # rendering a language
    by_language: dict[str, list[str]] = {}
    for email in watchers:
        by_language.setdefault(post.language_of(session, email, game, options=options),
                               []).append(email)
    over = kind.over(state)
    for language, emails in by_language.items():
        text, html = post.renderer.render(kind.report_template, context, language,
                                          shared=shared_in(language))
        subject = post.subject(tagged(game.name, _("final report (public view)")
                                      if over
                                      else _("turn {turn} public view", turn=game.turn)), language)
        mails += [compose(post.origin_in(language), kind="watch", to=email, subject=subject,
                          text=text, html=html, now=now, attachments=[attachment, *record],
                          game_id=game.id, turn=game.turn,
                          shipped_html=post.renderer.shipped_only)
                  for email in emails]
    return mails


def game_course(session: Session, game: GameView, players: Mapping[int, PlayerView]) -> Course:
    """The game's course from its replay (pbem.services.replay), under the players' names."""
    return course(game, replay_steps(session, game),
                  {seat: player.name for seat, player in players.items()})


def _seat_rows(rows: object) -> dict[object, Mapping[str, object]]:
    """The kind's own list of the seats in its view (classic: the dice each holds), by seat."""
    if not isinstance(rows, list):
        return {}
    return {row.get("seat"): row for row in rows if isinstance(row, Mapping)}


def player_view(game: GameView, players: Mapping[int, PlayerView], state: S,
                seat: int | None, *, kind: GameKind[S, M] | None = None) -> dict[str, object]:
    """The JSON view of the game for one seat (None: the public view): the server's keys and
    the kind's (GameKind.view, of the kind's own shape: an open mapping here)."""
    kind = kind or kind_of(game)
    rules_part = dict(kind.view(state, seat))   # a copy: two of its keys move into "players"
    per_seat = rules_part.pop("virtual_dice", None)   # postal: seat -> its virtual dice
    player = players.get(seat) if seat is not None else None
    # the kind may list the seats itself (dice counts ...): the names are added to its list
    kind_rows = _seat_rows(rules_part.pop("players", None))
    listed = []
    for s in sorted(players):
        entry: dict[str, object] = {"number": s, "name": players[s].name}
        if isinstance(per_seat, Mapping):
            entry["virtual_dice"] = per_seat[str(s)]
        entry.update({k: v for k, v in kind_rows.get(s, {}).items() if k != "name"})
        listed.append(entry)
    return {
        "format": kind.view_format,
        "game": game.name,
        "turn": game.turn,
        "deadline": game.deadline.strftime("%Y-%m-%dT%H:%M:%SZ") if game.deadline else None,
        "you": seat,
        "key": player.key if player is not None else None,
        "players": listed,
        **rules_part,
        "commitment": game.commitment,
    }
