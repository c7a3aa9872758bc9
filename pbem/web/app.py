"""`pbem web`: the read-only game pages, an ASGI app (Starlette) served by uvicorn.

Every page has a JSON twin under ``/api`` with the same data
(``schema/web-api.schema.json``):

    /                          /api/games              the games: running, open, finished
    /list/<section>?page=N     /api/games?section=&page=   one section, paged
    /games/<game>              /api/games/<game>       a game, public view
    /games/<game>/replay/<n>   /api/games/<game>/replay/<n>   a finished game, turn n
    /games/<game>/record.json                          a finished game's record
    /p/<token>                 /api/p/<token>          a player's private page
    /verify (GET, POST)        /api/verify (POST)      verify an uploaded record
    /healthz                   how pbem serve is doing: 200, or 503 when unwell
    /metrics                   the same figures for Prometheus (docs/monitoring.md)

The app reads the database through read-only connections (pbem.web.database).
Pages carry an ETag (a running game's changes with its turn, orders in, talk ...)
and caching headers; private pages are never cached nor logged with their token.
Any bad request gets a clear 4xx page (JSON under /api), never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from pbem.config import Settings
from pbem.games.records import read_players
from pbem.render.environment import packaged_template_dir
from pbem.services.export import export_json
from pbem.services.health import server_status
from pbem.services.replay import SomeStep, replay_steps
from pbem.store.engines import reading
from pbem.store.models import Game, Player
from pbem.text.links import LinkError, expired, key_generation, mac_matches, read_token
from pbem.text.wording import _, _n
from pbem.web.answers import (
    FINISHED_CACHE,
    NO_STORE,
    Answers,
    etag_matches,
    for_whom,
    in_english,
    page_tag,
)
from pbem.web.cache import Memo
from pbem.web.database import open_read_only
from pbem.web.guard import Guard
from pbem.web.language import chosen_language
from pbem.web.metrics import CONTENT_TYPE, exposition
from pbem.web.page_data import GamePage, Verification
from pbem.web.pages import (
    PageError,
    game_page,
    index_page,
    private_page,
    replay_page,
    verification,
)
from pbem.web.queries import SECTIONS, game_named, game_version
from pbem.web.upload import read_and_check, uploaded

log = logging.getLogger("pbem.web")

STATIC = {"web.css": "text/css; charset=utf-8", "web.js": "text/javascript; charset=utf-8",
          "favicon.svg": "image/svg+xml"}
MAX_PAGE = 1_000_000


def page_number(request: Request) -> int:
    text = request.query_params.get("page", "1")
    if not text.isdigit() or not 1 <= int(text) <= MAX_PAGE:
        raise PageError(400, _("Not a page number"),
                        _("page must be a whole number from 1 up, not '{text}'", text=text[:20]))
    return int(text)


class WebApp:
    """The pages, with what they share: settings, the read-only engine, the clock, how
    they are answered (pbem.web.answers), and the memos of replays, verifications and
    built pages."""

    def __init__(self, settings: Settings, engine: Engine,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.settings = settings
        self.engine = engine
        self.clock = clock or (lambda: datetime.now(UTC))
        self.answers = Answers(settings)
        self.steps: Memo[list[SomeStep]] = Memo(16)
        self.verdicts: Memo[Verification] = Memo(256)
        self.pages: Memo[GamePage] = Memo(256)
        self.static = {name: (packaged_template_dir() / "web" / "static" / name).read_bytes()
                       for name in STATIC}

    def running_cache(self) -> str:
        return f"public, max-age={self.settings.web.cache_seconds}"

    def game(self, session: Session, name: str) -> Game:
        game = game_named(session, name)
        if game is None:
            shown = name if len(name) <= 64 else name[:64] + "..."
            raise PageError(404, _("No such game"), _(
                "There is no game called '{name}' here. The list of all games is on the "
                "first page.", name=shown))
        return game

    def verified(self, session: Session, game: Game) -> Verification:
        return self.verdicts.get((game.id, game.turn, game.status),
                                 lambda: verification(session, game))

    # --- pages ----------------------------------------------------------------------------

    def index(self, request: Request, as_json: bool, section: str | None = None) -> Response:
        if section is None and as_json:
            section = request.query_params.get("section") or None
        if section is not None and section not in SECTIONS:
            raise PageError(404, _("No such list"), _("the lists are {names}",
                                                       names=", ".join(SECTIONS)))
        page = page_number(request) if section is not None else 1
        with Session(self.engine) as session:
            data = index_page(session, self.settings, self.clock(), section, page)
        data_for_tag = {k: v for k, v in data.items() if k != "generated_at"}
        etag = hashlib.sha256(json.dumps(data_for_tag, sort_keys=True, default=in_english)
                              .encode()).hexdigest()[:20]
        twin = "/api/games" + (f"?section={section}&page={page}" if section else "")
        return self.answers.answer(request, data, "index.html.j2", as_json=as_json,
                           cache=self.running_cache(), etag=etag, json_url=twin)

    def game_page(self, request: Request, as_json: bool) -> Response:
        name = request.path_params["name"]
        now = self.clock()
        with Session(self.engine) as session:
            game = self.game(session, name)
            over = game.status == "over"
            deadline_text = None if over else str(game.deadline) + now.strftime("%Y%m%d%H%M")
            version = game_version(session, game, deadline_text)
            etag = f"{game.name}-{version}"
            cache = FINISHED_CACHE if over else self.running_cache()
            if etag_matches(request, page_tag(etag, as_json, chosen_language(request)[0])):
                return self.answers.answer(request, {}, "", as_json=as_json, cache=cache, etag=etag)
            verified = self.verified(session, game) if over else None
            data = self.pages.get((game.id, version),
                                  lambda: game_page(session, game, self.settings, now,
                                                    verified=verified))
        return self.answers.answer(request, data, "game.html.j2", as_json=as_json, cache=cache,
                           etag=etag, json_url=f"/api/games/{game.name}")

    def replay(self, request: Request, as_json: bool) -> Response:
        name, text = request.path_params["name"], request.path_params["step"]
        if not text.isdigit() or len(text) > 7:
            raise PageError(404, _("No such turn"), _("a turn is a number, not '{text}'",
                                                       text=text[:20]))
        with Session(self.engine) as session:
            game = self.game(session, name)
            if game.status != "over":
                raise PageError(404, _("No replay yet"), _(
                    "game {game} is not over: its replay shows every die, so it opens when "
                    "the game ends.", game=game.name))
            steps = self.steps.get((game.id, game.turn), lambda: replay_steps(session, game))
            names = {p.seat: p.name for p in read_players(session, game)
                     if p.seat is not None and p.active}
            data = replay_page(game, steps, int(text), names, self.verified(session, game))
        return self.answers.answer(request, data, "replay.html.j2", as_json=as_json, cache=FINISHED_CACHE,
                           etag=f"{game.name}-t{game.turn}-s{int(text)}",
                           json_url=f"/api/games/{game.name}/replay/{int(text)}")

    def record(self, request: Request) -> Response:
        with Session(self.engine) as session:
            game = self.game(session, request.path_params["name"])
            if game.status != "over":
                raise PageError(404, _("No record yet"), _(
                    "game {game} is not over: its record holds every die, so it is published "
                    "when the game ends.", game=game.name))
            data = export_json(session, game)
        etag = f'"{game.name}-t{game.turn}-record"'
        headers = {"cache-control": FINISHED_CACHE, "etag": etag,
                   "content-disposition": f'attachment; filename="{game.name}.json"'}
        if etag_matches(request, etag):
            return Response(status_code=304, headers=headers)
        return Response(json.dumps(data, indent=2) + "\n", media_type="application/json",
                        headers=headers)

    def private(self, request: Request, as_json: bool) -> Response:
        web = self.settings.web
        if not web.secret:
            raise PageError(404, _("Private pages are off"),
                            _("This server has no [web] secret, so it makes no private links."))
        now = self.clock()
        try:
            claim = read_token(request.path_params["token"])
        except LinkError as exc:
            raise PageError(404, _("Not a valid link"), _(
                "{problem}. Use the link in your latest report.", problem=str(exc))) from None
        with Session(self.engine) as session:
            player = session.get(Player, claim.player_id)
            if (player is None or player.game_id != claim.game_id or player.seat != claim.seat
                    or not mac_matches(web.secret, claim,
                                       key_generation(player.key_hash, player.key))):
                raise PageError(403, _("Not a valid link"), _(
                    "This link was not made by this server for this seat, or it was changed "
                    "on the way. Use the link in your latest report."))
            if not player.active:
                raise PageError(410, _("This link no longer works"), _(
                    "Seat {seat} has a new player: the links of its earlier reports stopped "
                    "working when the referee replaced the seat.", seat=claim.seat))
            if expired(claim, now):
                raise PageError(410, _("This link has expired"), _n(
                    "Private links work for {days} day after their report. Use the link in "
                    "your latest report, or mail STATUS to the server for a fresh report.",
                    "Private links work for {days} days after their report. Use the link in "
                    "your latest report, or mail STATUS to the server for a fresh report.",
                    math.ceil(web.link_days), days=format(web.link_days, "g")))
            game = session.get(Game, claim.game_id)
            assert game is not None   # the player row points at it
            data = private_page(session, game, player, self.settings, now, claim.expires_at)
        response = self.answers.answer(request, data, "game.html.j2", as_json=as_json,
                               cache="private, no-store")
        response.headers["x-robots-tag"] = "noindex, nofollow"
        return response

    def static_file(self, request: Request) -> Response:
        name = request.path_params.get("name", "favicon.svg")
        if name not in STATIC:
            raise PageError(404, _("Not found"), _("There is no such file here."))
        return Response(self.static[name], media_type=STATIC[name],
                        headers={"cache-control": "public, max-age=86400"})

    # --- watching the server (pbem.services.health, docs/monitoring.md) ---------------------------

    def health(self, request: Request) -> Response:
        """``/healthz``: the figures of `pbem status --json`; 200 when the server is well,
        503 when its last tick is late or mail is stuck (or the database cannot be read)."""
        headers = {"cache-control": NO_STORE}
        try:
            status = server_status(self.engine, self.settings, self.clock())
        except SQLAlchemyError as exc:
            log.warning("/healthz: the database cannot be read: %s", exc)
            return JSONResponse({"format": "pbem.status/1", "healthy": False, "problems": [
                str(_("the database cannot be read: {problem}",
                      problem=type(exc).__name__))]}, status_code=503, headers=headers)
        return JSONResponse(status.as_json(), status_code=200 if status.healthy else 503,
                            headers=headers)

    def metrics(self, request: Request) -> Response:
        """``/metrics``: the same figures for Prometheus (pbem.web.metrics)."""
        status = server_status(self.engine, self.settings, self.clock())
        return Response(exposition(status), media_type=CONTENT_TYPE,
                        headers={"cache-control": NO_STORE})

    # --- verify an uploaded record --------------------------------------------------------

    def verify_form(self, request: Request) -> Response:
        response = self.answers.html("verify.html.j2", request, page=None,
                             limit=self.settings.web.max_upload_bytes)
        response.headers["cache-control"] = for_whom("public, max-age=3600",
                                                     chosen_language(request)[1])
        return response

    async def verify(self, request: Request, as_json: bool) -> Response:
        raw = await uploaded(request, self.settings.web.max_upload_bytes)
        if not raw.strip():
            raise PageError(400, _("Nothing to verify"), _(
                "Choose the record file (or paste the record) and send the form again."))
        verdict = await run_in_threadpool(read_and_check, raw)
        data = {"format": "pbem.web.verify/1", "ok": verdict.ok, "lines": list(verdict.lines)}
        if as_json:
            return JSONResponse(data, headers={"cache-control": NO_STORE})
        response = self.answers.html("verify.html.j2", request, page=data,
                             limit=self.settings.web.max_upload_bytes)
        response.headers["cache-control"] = NO_STORE
        return response


# --- the ASGI app ---------------------------------------------------------------------------

def create_app(settings: Settings, *, engine: Engine | None = None,
               clock: Callable[[], datetime] | None = None) -> Starlette:
    # the pages only read: on SQLite their transactions must not take the writer's turn
    # (pbem.store.engines.reading), or a page would wait for, and make wait, the referee's work
    web = WebApp(settings, reading(engine if engine is not None
                                   else open_read_only(settings.database)), clock)

    def page(method: Callable[..., Response], **kw: Any) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:   # sync: Starlette runs it in a thread
            return method(request, **kw)
        return endpoint

    def posted(method: Callable[..., Awaitable[Response]],
               **kw: Any) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await method(request, **kw)
        return endpoint

    routes = [
        Route("/", page(web.index, as_json=False)),
        Route("/api/games", page(web.index, as_json=True)),
        Route("/list/{section}", page(lambda r, **kw: web.index(
            r, as_json=False, section=r.path_params["section"]))),
        Route("/games/{name}", page(web.game_page, as_json=False)),
        Route("/api/games/{name}", page(web.game_page, as_json=True)),
        Route("/games/{name}/replay/{step}", page(web.replay, as_json=False)),
        Route("/api/games/{name}/replay/{step}", page(web.replay, as_json=True)),
        Route("/games/{name}/record.json", page(web.record)),
        Route("/p/{token}", page(web.private, as_json=False)),
        Route("/api/p/{token}", page(web.private, as_json=True)),
        Route("/verify", page(web.verify_form), methods=["GET"]),
        Route("/verify", posted(web.verify, as_json=False), methods=["POST"]),
        Route("/api/verify", posted(web.verify, as_json=True), methods=["POST"]),
        Route("/static/{name}", page(web.static_file)),
        Route("/favicon.ico", page(web.static_file)),
        Route("/healthz", page(web.health)),
        Route("/metrics", page(web.metrics)),
    ]

    async def page_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        return web.answers.error(request, exc.status, exc.title, exc.message)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return web.answers.error(request, 404, _("Not found"), _(
                "There is no page at this address. The list of all games is on the first "
                "page."))
        if exc.status_code == 405:
            return web.answers.error(request, 405, _("Not allowed"), _(
                "These pages only show games: this address does not take that kind of "
                "request."))
        return web.answers.error(request, exc.status_code, _("Bad request"), str(exc.detail))

    def fallback(scope: Scope) -> bytes:
        try:
            return bytes(web.answers.html("error.html.j2", Request(scope), status=500,
                                  title=_("Something went wrong"),
                                  message=_("The server could not make this page; the error is "
                                            "in its log. Please try again later.")).body)
        except Exception:   # the error page itself broke: plain words will do
            log.exception("the error page failed")
            return b"<!DOCTYPE html><title>Error 500</title><p>Something went wrong.</p>"

    app = Starlette(routes=routes,
                    exception_handlers={PageError: page_error, HTTPException: http_error},
                    middleware=[Middleware(Guard, fallback=fallback)])
    app.state.web = web
    return app
