"""How a page is answered: its HTML in the language its request asks for, or its JSON
twin (its messages said in English); its ETag (a 304 when the browser has it) and its
caching headers; an error as a page, or as JSON under /api.

Which page shows what, and who may see it, is pbem.web.app's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from pbem.config import Settings
from pbem.text.wording import Message
from pbem.web.language import (
    VARY,
    chosen_language,
    environments,
    remember_language,
    switch_links,
)

FINISHED_CACHE = "public, max-age=86400"
NO_STORE = "no-store"


def etag_matches(request: Request, etag: str) -> bool:
    """Whether the browser has this ETag already (If-None-Match): then a 304 will do."""
    wanted = request.headers.get("if-none-match", "")
    tags = [t.strip().removeprefix("W/") for t in wanted.split(",")]
    return etag in tags or "*" in tags


def in_english(value: object) -> str:
    """json.dumps's ``default``: a page's messages are English in its JSON twin."""
    if isinstance(value, Message):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


class WebJSON(JSONResponse):
    """The JSON twins: a page's data, its messages said in English."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None,
                          separators=(",", ":"), default=in_english).encode("utf-8")


def for_whom(cache: str, asked: bool) -> str:
    """The Cache-Control of a page; one that sets the language cookie (``?lang=``) is for
    this browser alone."""
    return cache.replace("public", "private") if asked else cache


def page_tag(etag: str, as_json: bool, language: str) -> str:
    """The ETag of a page: its JSON twin's, or its HTML's in one language."""
    return f'"{etag}-j"' if as_json else f'"{etag}-h-{language}"'


class Answers:
    """The pages' answers, in the languages of the settings' templates."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.envs = environments(settings)

    def html(self, template: str, request: Request | None, status_code: int = 200,
             **context: Any) -> HTMLResponse:
        """A page in the language its request asks for (English without a request), with
        the headers that say so: Vary, and the cookie when ``?lang=`` chose it."""
        language, asked = chosen_language(request) if request is not None else ("en", False)
        context.setdefault("server_address", self.settings.address)
        context.setdefault("json_url", None)
        context["languages"] = switch_links(request, language) if request is not None else []
        response = HTMLResponse(
            self.envs[language].get_template(f"web/{template}").render(**context),
            status_code=status_code, headers={"vary": VARY})
        if asked:
            remember_language(response, language)
        return response

    def answer(self, request: Request, data: Mapping[str, object], template: str, *,
               as_json: bool, cache: str, etag: str | None = None,
               json_url: str | None = None, **context: Any) -> Response:
        """A page's ``data`` as its HTML (``template``) or as its JSON twin, with the
        caching headers and the ETag; a 304 when the request has that ETag already."""
        headers = {"cache-control": cache}
        language, asked = chosen_language(request)
        if not as_json:
            headers["vary"] = VARY
            headers["cache-control"] = for_whom(cache, asked)
        if etag is not None:
            headers["etag"] = page_tag(etag, as_json, language)
            if etag_matches(request, headers["etag"]):
                response = Response(status_code=304, headers=headers)
                if asked and not as_json:
                    remember_language(response, language)
                return response
        if as_json:
            return WebJSON(data, headers=headers)
        response = self.html(template, request, page=data, json_url=json_url, **context)
        response.headers.update(headers)
        return response

    def error(self, request: Request, status: int, title: Message | str,
              message: Message | str) -> Response:
        """An error as a page, or as JSON under /api; never cached."""
        headers = {"cache-control": NO_STORE}
        if request.url.path.startswith("/api/"):
            return JSONResponse({"format": "pbem.web.error/1", "status": status,
                                 "title": str(title), "message": str(message)},
                                status_code=status, headers=headers)
        response = self.html("error.html.j2", request, status_code=status, status=status,
                             title=title, message=message)
        response.headers.update(headers)
        return response
