"""A 2,000-character word in table talk (or a long name) wraps: the game page, a player's
private page and the HTML talk mail stay within the viewport in headless Chromium at a
phone's 360 px and a desktop's 1000 px, not ~20,000 px wide."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from testkit.desk import PLAYERS, Clock, admin, make_server, order, outbox
from testkit.web import (
    CHROMIUM_ARGS,
    Site,
    WebProcess,
    chromium_path,
    free_port,
    new_game,
    write_config,
)

WORD = "Bluff" * 400           # 2,000 characters, no space
WIDTHS = (360, 1000)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    folder = tmp_path_factory.mktemp("long-words")
    server = make_server(folder, Clock())
    new_game(server, "talk-1", "RULES classic", 3)
    admin(server, "START talk-1")
    order(server, PLAYERS[0], f"SAY {WORD}", name="talk-1")
    server.engine.dispose()
    # no seat was replaced in this game: the Site's "replaced" is not looked at
    return Site(server, folder, write_config(folder, free_port()), None)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def overflow(browser: Any, width: int, *, url: str | None = None,
             html: str | None = None) -> tuple[int, int]:
    """(scrollWidth, viewport width) of a page loaded at that viewport width."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    try:
        page = context.new_page()
        if url is not None:
            answer = page.goto(url)
            assert answer is not None and answer.status == 200, url
        else:
            page.set_content(html or "")
        page.wait_for_load_state("load")
        assert WORD[:200] in page.inner_text("body")
        return page.evaluate("document.documentElement.scrollWidth"), width
    finally:
        context.close()


def test_a_long_word_wraps_in_pages_and_html_mail(site: Site, browser: Any) -> None:
    web = WebProcess(site.config, site.folder / "web.log")
    try:
        private = site.link("talk-1", 1)
        for width in WIDTHS:
            for path in ("/games/talk-1", private):
                scroll, viewport = overflow(browser, width, url=web.base + path)
                assert scroll <= viewport, (path, width, scroll)
    finally:
        web.stop()
    talk = [m for m in outbox(site.server, PLAYERS[1]) if "table talk" in str(m["Subject"])]
    html = talk[-1].get_body(("html",))
    assert html is not None
    for width in WIDTHS:
        scroll, viewport = overflow(browser, width, html=html.get_content())
        assert scroll <= viewport, ("talk mail", width, scroll)
