"""What each web page shows, as JSON-ready dicts: the JSON endpoints return them as they
are and the HTML templates draw them (``schema/web-api.schema.json`` documents them).

Only ``private_page`` ever holds a hidden die of a running game, or a key.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import TypeVar
from urllib.parse import quote

from sqlmodel import Session

from pbem.config import Settings
from pbem.games.records import read_players
from pbem.kinds import PUBLIC, REVEAL, GameKind, Viewer, kind_of
from pbem.kinds.options import options_of
from pbem.kinds.verify import check_record
from pbem.services.export import export_json
from pbem.services.replay import SomeStep, course, replay_steps
from pbem.store.models import Game, Player
from pbem.text.deadlines import relative_said, time_left
from pbem.text.errors import PbemError
from pbem.text.wording import Message, _, _n
from pbem.web.page_data import (
    DeadlineFields,
    GamePage,
    IndexPage,
    IndexRow,
    Links,
    Listing,
    OrderChoice,
    PlayerRow,
    PrivatePage,
    ReplayPage,
    StandingRow,
    Verification,
)
from pbem.web.queries import (
    SECTIONS,
    Section,
    aware,
    count_games,
    games_page,
    iso,
    orders_in,
    player_counts,
    talk_of,
)

S = TypeVar("S")   # a game kind's state
M = TypeVar("M")   # a game kind's move

ORDER_CHOICES_SHOWN = 12


class PageError(PbemError):
    """A request the pages cannot answer; status is the HTTP status to answer with."""

    def __init__(self, status: int, title: Message | str, message: Message | str) -> None:
        super().__init__(str(message))
        self.status = status
        self.title = title
        self.message = message


def game_links(game: Game) -> Links:
    over = game.status == "over"
    return {"page": f"/games/{game.name}", "json": f"/api/games/{game.name}",
            "replay": f"/games/{game.name}/replay/0" if over else None,
            "record": f"/games/{game.name}/record.json" if over else None}


def join_line(game: Game) -> Message | None:
    if game.status == "new" and options_of(game).open:
        # Translators: JOIN is the order word (it stays); translate only "your name"
        return _("JOIN {game} <your name>", game=game.name)
    return None


def deadline_fields(game: Game, now: datetime) -> DeadlineFields:
    """The deadline and how far off it is ("in 2 days 3 hours", "passed"); a paused game's
    clock stands, so it has none, only the time it will have left when it resumes
    (``paused_left``). The words are messages, said in each page's language."""
    if game.status == "paused":
        left = game.paused_left_seconds
        return {"deadline": None, "deadline_relative": None,
                "paused_left": None if left is None else
                time_left(int(left)) if left > 0 else _("passed")}
    deadline = aware(game.deadline)
    if deadline is None:
        return {"deadline": None, "deadline_relative": None, "paused_left": None}
    return {"deadline": iso(deadline), "paused_left": None,
            "deadline_relative": relative_said(deadline, now)}


# --- the index ------------------------------------------------------------------------------

def index_row(game: Game, players: int, now: datetime) -> IndexRow:
    kind = kind_of(game)
    return {"game": game.name, "kind": kind.name, "kind_title": kind.title,
            "status": game.status, "players": players, "min_players": kind.min_players,
            "max_players": kind.max_players, "turn": game.turn,
            **deadline_fields(game, now),
            "ended_at": iso(game.ended_at), "join": join_line(game),
            "url": f"/games/{game.name}"}


def section_listing(session: Session, section: Section, page: int, size: int,
                    now: datetime) -> Listing:
    total = count_games(session, section)
    pages = max(1, math.ceil(total / size))
    if page > pages:
        raise PageError(404, _("No such page"), _n(
            "the list of {section} has {n} page; there is no page {page}",
            "the list of {section} has {n} pages; there is no page {page}", pages,
            section=section.name_in_text, page=page))
    games = games_page(session, section, page, size)
    counts = player_counts(session, [g.id for g in games if g.id is not None])
    url = f"/list/{section.name}?page="
    return {"name": section.name, "title": section.title, "total": total, "page": page,
            "pages": pages, "games": [index_row(g, counts.get(g.id or 0, 0), now) for g in games],
            "prev": url + str(page - 1) if page > 1 else None,
            "next": url + str(page + 1) if page < pages else None,
            "all": f"/list/{section.name}"}


def index_page(session: Session, settings: Settings, now: datetime,
               only: str | None = None, page: int = 1) -> IndexPage:
    names = [only] if only is not None else list(SECTIONS)
    return {"format": "pbem.web.index/1", "server_address": settings.address,
            "generated_at": iso(now),
            "sections": [section_listing(session, SECTIONS[n], page, settings.web.page_size, now)
                         for n in names]}


# --- a game ---------------------------------------------------------------------------------

def started(game: Game) -> bool:
    return game.started_at is not None and game.turn >= 1


def standings_of(kind: GameKind[S, M], state: S,
                 names: dict[int, str]) -> list[StandingRow] | None:
    if not kind.over(state):
        return None
    return [{**s, "name": names.get(s["seat"], "")} for s in kind.standings(state)]


def verification(session: Session, game: Game) -> Verification:
    """`pbem verify` run on the game's own record, on the server."""
    verdict = check_record(export_json(session, game))
    return {"ok": verdict.ok, "lines": list(verdict.lines)}


def game_page(session: Session, game: Game, settings: Settings, now: datetime, *,
              viewer: Viewer = PUBLIC, steps: list[SomeStep] | None = None,
              verified: Verification | None = None) -> GamePage:
    """The game as the public sees it (viewer PUBLIC), or as one seat does; steps: its
    replay (pbem.services.replay), if the caller has it already."""
    kind = kind_of(game)
    rules = json.loads(game.rules_json)
    everyone = read_players(session, game)
    holders = {p.seat: p for p in everyone if p.seat is not None and p.active}
    names = {s: p.name for s, p in holders.items()}
    running = game.status == "running"
    if steps is None:
        steps = replay_steps(session, game) if started(game) else []
    state = steps[-1].state if steps else None
    due = set(kind.due(state)) if state is not None and running else set()
    sent = orders_in(session, game) & due
    score_rows = {row["seat"]: row for row in kind.web_scores(state)} if state else {}
    listed: list[PlayerRow]
    if holders:
        listed = [{"seat": s, "name": p.name, "due": s in due, "order_in": s in sent,
                   "awaited": s in due - sent, **{k: v for k, v in score_rows.get(s, {}).items()
                                                   if k != "seat"}}
                  for s, p in sorted(holders.items())]
    else:   # before the start: the entrants, no seats yet
        listed = [{"seat": None, "name": p.name, "due": False, "order_in": False,
                   "awaited": False} for p in everyone if p.active]
    over = state is not None and kind.over(state)
    page: GamePage = {
        "format": "pbem.web.game/1", "game": game.name, "kind": kind.name,
        "kind_title": kind.title, "rules_text": kind.describe_rules(rules),
        "status": game.status, "turn": game.turn,
        **deadline_fields(game, now),
        "grace_until": iso(game.grace_until), "started_at": iso(game.started_at),
        "ended_at": iso(game.ended_at), "server_address": settings.address,
        "join": join_line(game),
        "players": listed, "names": {str(s): n for s, n in sorted(names.items())},
        "awaited": sorted(due - sent), "orders_in": sorted(sent),
        "waiting_for": kind.waiting_for(state) if running and state is not None else None,
        "tables": kind.web_tables(state, viewer) if state is not None else [],
        "standings": standings_of(kind, state, names) if state is not None else None,
        "course": course(game, steps, names) if steps else None,
        "history": kind.history(state) if state is not None else [],
        "talk": talk_of(session, game, said_later=True),
        "commitment": game.commitment, "seed": game.seed_hex if over else None,
        "links": game_links(game),
        "verification": verified if over else None,
    }
    return page


# --- a player's own page --------------------------------------------------------------------

def mailto(address: str, subject: str, lines: list[str]) -> str:
    """A mailto: link that opens a mail to the server with these lines as its text
    (RFC 6068: line breaks as %0D%0A)."""
    body = "\r\n".join(lines) + "\r\n"
    return f"mailto:{quote(address, safe='@')}?subject={quote(subject)}&body={quote(body)}"


def order_choices(kind: GameKind[S, M], state: S, seat: int, game: str, key: str,
                  address: str) -> list[OrderChoice]:
    """Every legal order of seat now, as order lines and a mailto: link with GAME and KEY;
    a bid comes with its odds from what the seat can see."""
    choices: list[OrderChoice] = []
    head = [f"GAME {game}", f"KEY {key}"]
    # the challenge first: it is always one line, and often the move to make
    moves = sorted(kind.legal_moves(state, seat),
                   key=lambda m: not str(m).startswith("CHALLENGE"))
    for i, move in enumerate(moves):
        lines = kind.order_lines(move)
        odds = kind.move_odds(state, seat, move) if i <= ORDER_CHOICES_SHOWN else None
        choices.append({"lines": lines, "odds": odds,
                        "mailto": mailto(address, f"[bluff {game}] orders", head + lines)})
    return choices


def private_page(session: Session, game: Game, player: Player, settings: Settings,
                 now: datetime, expires: datetime) -> PrivatePage:
    """What the player's report shows: the game with their own dice and odds, their key,
    and a mailto: link for every order they may send now."""
    seat = player.seat
    assert seat is not None
    kind = kind_of(game)
    steps = replay_steps(session, game) if started(game) else []
    state = steps[-1].state if steps else None
    page = game_page(session, game, settings, now, viewer=Viewer(seat=seat), steps=steps)
    running = game.status == "running" and state is not None and not kind.over(state)
    due = kind.due_said(state).get(seat) if running else None
    return {
        **page,
        "format": "pbem.web.private/1",   # in the place of the game page's
        "you": {"seat": seat, "name": player.name, "due": due,
                "order_in": seat in page["orders_in"],
                "game_line": f"GAME {game.name}", "key_line": f"KEY {player.key}",
                "blank_mailto": mailto(settings.address, f"[bluff {game.name}] orders",
                                       [f"GAME {game.name}", f"KEY {player.key}"]),
                "orders": (order_choices(kind, state, seat, game.name, player.key,
                                         settings.address) if due else []),
                # the odds of the bid they answer, drawn beside the orders (pbem.render.charts)
                "charts": kind.bid_charts(state, seat) if due else [],
                "link_expires": iso(expires)},
    }


# --- the replay of a finished game ----------------------------------------------------------

def replay_page(game: Game, steps: list[SomeStep], step: int, names: dict[int, str],
                verified: Verification | None) -> ReplayPage:
    kind = kind_of(game)
    last = len(steps) - 1
    if not 0 <= step <= last:
        raise PageError(404, _("No such turn"), _(
            "game {game} has turns 1 to {last} (0 is the start); there is no turn {step}",
            game=game.name, last=last, step=step))
    at = steps[step]
    base = f"/games/{game.name}/replay/"
    over = kind.over(at.state)
    return {
        "format": "pbem.web.replay/1", "game": game.name, "kind": kind.name,
        "kind_title": kind.title, "step": step, "last": last, "turn": at.turn,
        "players": [{"seat": s, "name": n} for s, n in sorted(names.items())],
        "names": {str(s): n for s, n in sorted(names.items())},
        "moves": [{"seat": m.seat, "name": names.get(m.seat, ""), "by": m.by,
                   "move": kind.describe_move_said(m.move)} for m in at.moves],
        "notes": at.notes,
        "tables": kind.web_tables(at.state, REVEAL),
        "scores": kind.web_scores(at.state),
        "standings": standings_of(kind, at.state, names) if over else None,
        "course": course(game, steps[:step + 1], names),
        "prev": base + str(step - 1) if step > 0 else None,
        "next": base + str(step + 1) if step < last else None,
        "first": base + "0", "end": base + str(last),
        "commitment": game.commitment, "seed": game.seed_hex,
        "links": game_links(game), "verification": verified,
    }
