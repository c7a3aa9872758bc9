"""The web pages in a real browser: `pbem web -c pbem.toml` runs as a process on a loopback
port and headless Chromium (Debian's chromium, driven by Playwright) reads the games of
real finished and running test games. Every page visited is screenshotted and checked not
to be blank, and must log no console error. Without Chromium these tests skip, except
under CI, where they fail.

Set PBEM_SCREENSHOTS to a folder to keep the screenshots.
"""

from __future__ import annotations

import email
import email.policy
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from sqlmodel import Session, select

from pbem.games.records import find_game
from pbem.render.filters import face_name
from pbem.rules.classic import hand_label
from pbem.rules.dice import DiceStream, face_json
from pbem.store.models import OutboundMail, Player
from testkit.desk import PLAYERS, Clock, admin, make_server, order, outbox
from testkit.png import distinct_colours
from testkit.stored import outbound_rows
from testkit.web import (
    CHROMIUM_ARGS,
    Site,
    WebProcess,
    chromium_path,
    days_ago,
    free_port,
    new_game,
    state,
    write_config,
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Tab:
    """One browser page: visits, console errors, screenshots checked not blank."""

    def __init__(self, browser: Any, web: WebProcess, shots: Path) -> None:
        self.context = browser.new_context(viewport={"width": 1100, "height": 900},
                                           accept_downloads=True)
        self.page = self.context.new_page()
        self.base = web.base
        self.shots = shots
        self.errors: list[str] = []
        self.expect_error_status = False
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))

    def _console(self, message: Any) -> None:
        if message.type != "error":
            return
        # an error page's own 4xx status is logged as a failed load: expected there
        if self.expect_error_status and message.text.startswith(
                "Failed to load resource: the server responded with a status of 4"):
            return
        self.errors.append(f"console: {message.text}")

    def visit(self, path: str, shot: str, status: int = 200) -> Any:
        self.expect_error_status = status >= 400
        answer = self.page.goto(self.base + path)
        assert answer is not None and answer.status == status, (path, answer and answer.status)
        self.check_screen(shot)
        return answer

    def check_screen(self, shot: str) -> None:
        self.page.wait_for_load_state("load")
        png = self.page.screenshot()
        (self.shots / f"{shot}.png").write_bytes(png)
        assert distinct_colours(png) > 20, f"the screenshot of {shot} looks blank"

    def close(self) -> None:
        self.context.close()
        assert self.errors == []


@pytest.fixture
def tab(browser: Any, web: WebProcess, tmp_path: Path) -> Iterator[Tab]:
    shots = Path(os.environ.get("PBEM_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    opened = Tab(browser, web, shots)
    yield opened
    opened.close()


def aria_faces(locator: Any) -> list[str]:
    return [label for label in locator.evaluate_all(
        "els => els.map(e => e.getAttribute('aria-label'))")]


def test_the_index_lists_the_games(tab: Tab) -> None:
    tab.visit("/", "index")
    for name in ("postal-1", "open-1", "cup-1", "classic-1"):
        assert tab.page.locator(f'a[href="/games/{name}"]').count() == 1
    assert "JOIN open-1 <your name>" in tab.page.locator("#open").inner_text()
    assert tab.page.locator("#running").inner_text().count("postal Bluff") == 1
    tab.page.click('a[href="/games/classic-1"]')
    tab.page.wait_for_url("**/games/classic-1")
    assert "The game is over" in tab.page.inner_text("body")
    tab.check_screen("game-classic")


def test_the_game_page_shows_the_right_bids_and_no_hidden_die(site: Site, tab: Tab) -> None:
    tab.visit("/games/postal-1", "game-postal")
    postal = state(site.server, "postal-1")
    tables = tab.page.locator("section.table")
    assert tables.count() == 5
    for i, minigame in enumerate(postal.minigames):
        table = tables.nth(i)
        assert table.locator(".bid-text").all_inner_texts() == [str(b.bid) for b in minigame.bids]
        for seat in range(1, 6):
            cup = table.locator(f'td.cup[data-seat="{seat}"]')
            dice = minigame.cup(seat)
            assert cup.locator("svg.die.hidden").count() == len(dice.hidden)
            assert cup.locator("svg.die.plain").count() == 0
            assert aria_faces(cup.locator("svg.die.exposed")) == [face_name(face_json(d.face))
                                                                  for d in dice.exposed]
    assert "Waiting for the order of" in tab.page.inner_text("#waiting")
    with Session(site.server.engine) as session:
        keys = [p.key for p in session.exec(select(Player))]
        seed = find_game(session, "postal-1").seed_hex
    html = tab.page.content()
    assert seed not in html and not any(key in html for key in keys)
    tab.visit("/games/cup-1", "game-cup")
    assert tab.page.locator(".board .slot").count() == 16


def test_a_private_link_shows_that_seats_dice_and_nobody_elses(site: Site, tab: Tab) -> None:
    link = site.link("postal-1", 4)
    tab.visit(link, "private")
    postal = state(site.server, "postal-1")
    tables = tab.page.locator("section.table")
    for i, minigame in enumerate(postal.minigames):
        mine = tables.nth(i).locator('td.cup[data-seat="4"] svg.die.plain')
        assert aria_faces(mine) == [face_name(face_json(d.face)) for d in minigame.cup(4).hidden]
        for seat in (1, 2, 3, 5):
            assert tables.nth(i).locator(f'td.cup[data-seat="{seat}"] svg.die.plain').count() == 0
    assert "You are player 4" in tab.page.inner_text("#you")
    orders = tab.page.locator("#orders a")
    assert orders.count() > 1 and orders.first.inner_text() == "CHALLENGE"
    assert orders.nth(1).get_attribute("href").startswith("mailto:bluff@example.org?subject=")
    head, mac = link.rsplit(".", 1)
    parts = head.split(".")
    tab.visit(".".join([parts[0], "2", *parts[2:]]) + "." + mac, "private-other-seat", 403)
    assert "Not a valid link" in tab.page.inner_text("h1")
    tab.visit(site.link("postal-1", 4, now=days_ago(31)), "private-expired", 410)
    assert "expired" in tab.page.inner_text("h1")
    tab.visit(site.link("postal-1", 2, player=site.replaced), "private-replaced", 410)
    assert "no longer works" in tab.page.inner_text("h1")


def test_the_replay_steps_forward_and_back(site: Site, tab: Tab) -> None:
    tab.visit("/games/classic-1/replay/0", "replay-start")
    last = site.turns["classic-1"]
    assert tab.page.inner_text("#step") == f"The start (turn 0 of {last})"
    with Session(site.server.engine) as session:
        seed = bytes.fromhex(find_game(session, "classic-1").seed_hex)
    for seat in range(1, 5):   # every cup shown, as the seed rolls it
        dice = tab.page.locator(f'td.cup[data-seat="{seat}"] svg.die.plain')
        rolled = DiceStream(seed).dice(hand_label(1, seat), 2)
        assert sorted(aria_faces(dice)) == sorted(face_name(face_json(f)) for f in rolled)
    tab.page.click("#next")
    tab.page.wait_for_url("**/replay/1")
    assert tab.page.inner_text("#step") == f"Turn 1 of {last}"
    tab.page.click("#next")
    tab.page.wait_for_url("**/replay/2")
    tab.check_screen("replay-2")
    tab.page.keyboard.press("ArrowLeft")
    tab.page.wait_for_url("**/replay/1")
    assert tab.page.inner_text("#step") == f"Turn 1 of {last}"
    tab.page.keyboard.press("ArrowRight")
    tab.page.wait_for_url("**/replay/2")
    tab.page.click("#prev")
    tab.page.click("#prev")
    tab.page.wait_for_url("**/replay/0")
    tab.page.click("#end")
    tab.page.wait_for_url(f"**/replay/{last}")
    assert "Final standings" in tab.page.inner_text("body")
    tab.check_screen("replay-end")


def test_an_uploaded_tampered_record_is_rejected(tab: Tab, tmp_path: Path) -> None:
    tab.visit("/games/cup-1", "game-cup-record")
    with tab.page.expect_download() as download:
        tab.page.click("#record-link")
    honest = tmp_path / "cup-1.json"
    download.value.save_as(honest)
    record = json.loads(honest.read_text())
    tab.visit("/verify", "verify")
    tab.page.set_input_files("input[name=record]", str(honest))
    tab.page.click("#verify-button")
    assert "The record checks out" in tab.page.inner_text("#verdict")
    tab.check_screen("verify-ok")
    record["moves"][2]["move"] = record["moves"][0]["move"]
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(record))
    tab.visit("/verify", "verify-again")
    tab.page.set_input_files("input[name=record]", str(tampered))
    tab.page.click("#verify-button")
    verdict = tab.page.inner_text("#verdict")
    assert "does not check out" in verdict and re.search(r"FAIL: turn \d+", verdict)
    tab.check_screen("verify-tampered")
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "pbem.record/1",\n  "moves": [}')
    tab.visit("/verify", "verify-broken")
    tab.expect_error_status = True
    tab.page.set_input_files("input[name=record]", str(broken))
    tab.page.click("#verify-button")
    assert "not valid JSON" in tab.page.inner_text("#error-message")
    assert "line 2" in tab.page.inner_text("#error-message")
    tab.check_screen("verify-bad-json")


def test_bad_addresses_get_a_clear_page(tab: Tab) -> None:
    tab.visit("/games/no-such-game", "error-404", 404)
    assert "There is no game called 'no-such-game'" in tab.page.inner_text("#error-message")
    tab.visit("/games/postal-1/replay/0", "error-no-replay", 404)
    assert "not over" in tab.page.inner_text("#error-message")


def test_the_server_log_holds_no_token_and_no_key(site: Site, web: WebProcess, tab: Tab) -> None:
    link = site.link("postal-1", 1)
    tab.visit(link, "private-for-the-log")
    tab.visit("/api" + link, "private-json-for-the-log")
    log = web.log()
    assert "GET /p/[private] 200" in log and "GET /api/p/[private] 200" in log
    token = link.removeprefix("/p/")
    assert token not in log and token.rsplit(".", 1)[1] not in log
    with Session(site.server.engine) as session:
        for player in session.exec(select(Player)):
            assert player.key not in log
    assert "Traceback" not in log


def _html_part(raw: bytes) -> str:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    body = message.get_body(("html",))
    assert body is not None
    return str(body.get_content())


def _subject(raw: bytes) -> str:
    return str(email.message_from_bytes(raw, policy=email.policy.default)["subject"])


def _fits(page: Any, selector: str) -> None:
    """The element is drawn, not blank, and nothing of it (or the page) runs off screen."""
    width = page.evaluate("window.innerWidth")
    box = page.locator(selector).first.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 40, (selector, box)
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (selector, box, width)
    wide = page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
        .map(e => e.tagName + ' ' + (e.textContent || '').slice(0, 40))""")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, (selector, wide)


@pytest.mark.parametrize("width", [360, 1000])
def test_the_course_and_the_odds_are_drawn_and_fit_the_screen(site: Site, browser: Any,
                                                             web: WebProcess, tmp_path: Path,
                                                             width: int) -> None:
    """The course chart (SVG) on the game pages and the replay, and the charts of the
    HTML reports (table cells, no image), in Chromium at a phone's and a desktop's
    width: each drawn (not blank), none running off the screen."""
    shots = Path(os.environ.get("PBEM_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        for path, lines in (("/games/classic-1", 4), ("/games/cup-1", 4),
                            ("/games/postal-1", 5),
                            (f"/games/classic-1/replay/{site.turns['classic-1']}", 4)):
            page.goto(web.base + path)
            chart = page.locator("#course svg.course-chart")
            assert chart.count() == 1, path
            assert chart.locator("path > title").count() == lines, path
            _fits(page, "#course")     # on a phone the chart scrolls inside its frame
            png = page.locator("#course").screenshot()
            (shots / f"course-{path.strip('/').replace('/', '-')}-{width}.png").write_bytes(png)
            assert distinct_colours(png) > 4, f"the course of {path} looks blank"
        with Session(site.server.engine) as session:
            rows = outbound_rows(session, OutboundMail.kind == "report")
        final = next(r for r in rows if _subject(r.raw) == "[bluff classic-1] final report")
        asked = [r for r in rows if b"The chance of each" in r.raw]
        assert asked, "no report asked to answer a bid"
        for name, row, selector in (("final", final, "table[role=presentation]"),
                                    ("odds", asked[-1], "table[role=presentation]")):
            page = context.new_page()                    # a mail of its own, as a client
            page.set_content(_html_part(row.raw))
            _fits(page, selector)
            png = page.screenshot(full_page=True)
            (shots / f"report-{name}-{width}.png").write_bytes(png)
            assert distinct_colours(png) > 20, f"the {name} report looks blank"
        assert page.locator("img, svg").count() == 0     # mail draws with cells alone
    finally:
        context.close()


# --- long words ----------------------------------------------------------------------------

WORD = "Bluff" * 400           # 2,000 characters, no space
WIDTHS = (360, 1000)


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


def test_the_web_writes_a_deadline_in_the_viewers_zone(browser: Any, web: WebProcess) -> None:
    """A viewer in Prague reads the running game's deadline in Prague time with the zone's
    name, the server's UTC time kept beside; the index likewise."""
    context = browser.new_context(timezone_id="Europe/Prague")
    page = context.new_page()
    try:
        page.goto(web.base + "/games/postal-1")
        shown = page.inner_text("#deadline")
        assert re.search(r"\(Europe/Prague\), \d{4}-\d\d-\d\d \d\d:\d\d UTC$", shown), shown
        assert re.search(r"GMT\+1|CET|GMT\+2|CEST", shown), shown
        page.goto(web.base + "/")
        assert "(Europe/Prague)" in page.inner_text("#running")
    finally:
        context.close()


def test_a_long_word_wraps_in_pages_and_html_mail(browser: Any, tmp_path: Path) -> None:
    """A 2,000-character word in table talk wraps: the game page, a player's private page
    and the HTML talk mail stay within the viewport at a phone's 360 px and a desktop's
    1000 px (they were ~14,000 px wide)."""
    server = make_server(tmp_path, Clock())
    new_game(server, "talk-1", "RULES classic", 3)
    admin(server, "START talk-1")
    order(server, PLAYERS[0], f"SAY {WORD}", name="talk-1")
    server.engine.dispose()
    # no seat was replaced in this game: the Site's "replaced" is not looked at
    site = Site(server, tmp_path, write_config(tmp_path, free_port()), None)  # type: ignore[arg-type]
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


def test_the_language_switch_changes_this_page_and_the_next(tab: Tab) -> None:
    """EN / DE / CS at the top of every page: a click says the page in that language, and
    the pages after it too (the cookie), until another click."""
    tab.visit("/", "index-en")
    assert tab.page.get_attribute("html", "lang") == "en"
    assert "Running games" in tab.page.inner_text("#running")
    tab.page.click('#languages a[hreflang="de"]')
    tab.page.wait_for_url("**/?lang=de")
    assert tab.page.get_attribute("html", "lang") == "de"
    assert "Laufende Spiele" in tab.page.inner_text("#running")
    assert tab.page.inner_text("#languages strong") == "DE"
    tab.check_screen("index-de")
    tab.page.click('a[href="/games/classic-1"]')
    tab.page.wait_for_url("**/games/classic-1")
    assert tab.page.get_attribute("html", "lang") == "de"     # the cookie kept it
    assert "Das Spiel ist vorbei." in tab.page.inner_text("body")
    tab.page.click('#languages a[hreflang="cs"]')
    tab.page.wait_for_url("**/games/classic-1?lang=cs")
    assert "Konečné pořadí" in tab.page.inner_text("body")
    tab.check_screen("game-classic-cs")
    tab.page.click("nav.top a[href='/verify']")
    tab.page.wait_for_url("**/verify")
    assert tab.page.inner_text("#verify-button") == "Ověřit"
