"""The pictures on every screen: each kind of page and HTML report mail rendered in
Debian's Chromium at 320, 375, 600 and 1280 px, in light, in forced dark mode and with
its styles stripped (as some mail programs do), and checked for what went wrong before
(issue 47): nothing wider than the screen, no number split over lines, no heading broken
inside a word, no two players' markers at one spot without a shared label, chart colours
told apart under a deuteranopia and a protanopia simulation, and bars that still differ
from their background and from each other once a dark mode turns the colours over.

One browser (and one more for forced dark mode), one tab reused. Every case is
screenshotted under PBEM_SCREENSHOTS (or the test's tmp folder; the path is printed).
"""

from __future__ import annotations

import email
import email.policy
import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from sqlmodel import Session

from pbem.games.records import find_game
from pbem.render.charts import odds_html
from pbem.rules.cupofbluff import total_distribution
from pbem.store.models import OutboundMail
from testkit import layout
from testkit.colours import DARK_MODES, VISIONS, closest_pair, darkened, distance, parse
from testkit.stored import outbound_rows
from testkit.web import CHROMIUM_ARGS, Site, WebProcess, chromium_path

# PBEM_PICTURE_WIDTHS=375: fewer widths while working on a picture
WIDTHS = tuple(int(w) for w in
               os.environ.get("PBEM_PICTURE_WIDTHS", "320,375,600,1280").split(","))
LINE_COLOURS_APART = 25.0   # CIELAB units between any two players' line colours
BAR_APART = 20.0            # between a bar and its background, in any dark mode
SMALLEST_TEXT = 11.5        # px: the chart's text at its narrowest


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("PBEM_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots: {folder}")
    return folder


def _html_part(raw: bytes) -> str:
    body = email.message_from_bytes(raw, policy=email.policy.default).get_body(("html",))
    assert body is not None
    return str(body.get_content())


def _subject(raw: bytes) -> str:
    return str(email.message_from_bytes(raw, policy=email.policy.default)["subject"])


def report_mails(site: Site) -> dict[str, str]:
    """The HTML part of a report of each kind that asks its reader to answer a bid (the
    odds chart) and the classic game's final report (the course chart at its longest):
    the newest of each, looked for from the newest mail back."""
    mails = {}
    with Session(site.server.engine) as session:
        for game in ("classic-1", "cup-1", "postal-1"):
            game_id = find_game(session, game).id
            rows = outbound_rows(session, OutboundMail.kind == "report",
                                 OutboundMail.game_id == game_id)[::-1]
            asked = next((_html_part(r.raw) for r in rows
                          if "The chance of each" in _html_part(r.raw)), None)
            assert asked is not None, f"no report of {game} asks to answer a bid"
            mails[f"mail-{game}-odds"] = asked
            if game == "classic-1":
                final = next(r for r in rows if _subject(r.raw).endswith("final report"))
                mails["mail-classic-1-final"] = _html_part(final.raw)
    return mails


def pages(site: Site) -> dict[str, str]:
    seat_due = 4       # a seat of the running postal game that answers a bid now
    return {"game-classic": "/games/classic-1", "game-cup": "/games/cup-1",
            "game-postal": "/games/postal-1",
            "replay-3": "/games/classic-1/replay/3",
            "private": site.link("postal-1", seat_due), "verify": "/verify",
            # the longer words of German and Czech
            "game-cup-cs": "/games/cup-1?lang=cs",
            "private-de": site.link("postal-1", seat_due) + "?lang=de"}


class Cache:
    """Each page fetched from the server once, then served from here: the server renders
    a whole game's replay a request, and each page is looked at a dozen times."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}

    def serve(self, route: Any) -> None:
        url = route.request.url
        if url not in self.answers:
            answer = route.fetch()
            self.answers[url] = (answer.status, answer.headers, answer.body())
        status, headers, body = self.answers[url]
        route.fulfill(status=status, headers=headers, body=body)


def check(page: Any, name: str, mode: str) -> list[str]:
    """What is wrong with the page now on screen."""
    problems = []
    found = layout.wide(page)
    if found["scroll"] > found["width"] or found["wide"]:
        problems.append(f"wider than the screen ({found['scroll']} > {found['width']}): "
                        f"{found['wide']}")
    problems += layout.broken_words(page)
    chart = layout.course_chart(page)
    if chart is not None:
        problems += [f"markers at one spot: {c}" for c in chart["clashes"]]
        for mark in chart["marks"]:
            if len(mark["seats"].split()) > 1 and mark["title"].count(",") < len(
                    mark["seats"].split()) - 1:
                problems.append(f"a shared marker that names not every seat: {mark}")
        if chart["scrolls"] and not (chart["noted"] and chart["latestShown"]):
            problems.append(f"the chart scrolls without a note or hides its latest turn: "
                            f"{chart}")
        if chart["fontPx"] < SMALLEST_TEXT and mode != "stripped":
            problems.append(f"the chart's text shrinks to {chart['fontPx']:.1f} px")
        for vision in VISIONS:
            apart, one, other = closest_pair(sorted(set(chart["colours"])), vision)
            if apart < LINE_COLOURS_APART:
                problems.append(f"{one} and {other} look alike ({vision}: {apart:.1f})")
    drawn = layout.bars(page)
    for bar in drawn["bars"]:
        filled = [c for c in bar["cells"] if c]
        if not filled or (bar["holds"] != (len(filled) == len(bar["cells"]))):
            problems.append(f"a bar that is not {'solid' if bar['holds'] else 'dashed'}: {bar}")
    for dark in DARK_MODES:
        for cell in [*({"fill": c, "background": b["background"]} for b in drawn["bars"]
                       for c in b["cells"] if c), *drawn["course"]]:
            apart = distance(darkened(parse(cell["fill"]), dark),
                             darkened(parse(cell["background"]), dark))
            if apart < BAR_APART:
                problems.append(f"a bar fades into its background in {dark} dark mode: "
                                f"{cell} ({apart:.1f})")
                break
    return [f"{name} at {page.viewport_size['width']} px, {mode}: {p}" for p in problems]


def test_every_picture_reads_at_every_width_light_dark_and_unstyled(site: Site, web: WebProcess,
                                                                      shots: Path) -> None:
    executable = chromium_path()
    mails = report_mails(site)
    addresses = pages(site)
    problems: list[str] = []
    console: list[str] = []            # a style or script the page's policy refused
    cache = Cache()
    with sync_playwright() as p:
        light = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        dark = p.chromium.launch(executable_path=executable, args=[
            *CHROMIUM_ARGS, "--force-dark-mode", "--enable-features=WebContentsForceDark"])
        try:
            for browser, modes in ((light, ("light", "stripped")), (dark, ("dark",))):
                context = browser.new_context(color_scheme="dark" if "dark" in modes else "light")
                context.route("**/*", cache.serve)
                page = context.new_page()
                page.on("console", lambda m: m.type == "error" and console.append(m.text))
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": 800})
                    for mode in modes:
                        for name, path in addresses.items():
                            context.clear_cookies()          # the language of the link
                            answer = page.goto(web.base + path)
                            assert answer is not None and answer.status == 200, path
                            problems += look(page, name, mode, width, shots)
                        for name, html in mails.items():
                            page.goto("about:blank")     # not under the site's CSP
                            page.set_content(html)
                            assert page.locator("img, svg").count() == 0, name
                            problems += look(page, name, mode, width, shots)
                context.close()
        finally:
            light.close()
            dark.close()
    problems += [f"console: {text}" for text in console]
    (shots / "problems.txt").write_text("\n".join(problems))
    assert problems == [], "\n".join(problems)


def look(page: Any, name: str, mode: str, width: int, shots: Path) -> list[str]:
    """Screenshots of the page as it is now, and what is wrong with it."""
    if mode == "stripped":
        layout.strip_styles(page)
    # the screen as it opens (JPEG: quicker to write), and at two widths the pictures
    (shots / f"{name}-{width}-{mode}.jpeg").write_bytes(page.screenshot(type="jpeg",
                                                                         quality=70))
    for picture in ("#course", "table.odds") if mode != "stripped" and width in (
            375, 1280) else ():
        found = page.locator(picture)
        if found.count():
            (shots / f"{name}-{width}-{mode}-{picture.strip('#').replace('.', '-')}.png"
             ).write_bytes(found.first.screenshot())
    return check(page, name, mode)


def test_a_cup_claims_totals_stay_on_one_line_in_a_narrow_mail() -> None:
    """The odds of a Cup of Bluff claim (totals 3 to 18) in the mail's frame, where a
    player's long word may wrap anywhere: no total is drawn as '1' above '0' (it was, at
    375 and 600 px), and the chart stays within the screen."""
    chart = {"title": "the claim of 12", "quantity": 12, "rule": "exactly",
             "question": "What may the three dice total?",
             "bars": [[t, p] for t, p in total_distribution().items()]}
    frame = ('<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width, '
             'initial-scale=1"></head><body style="margin:0"><div style="max-width:700px;'
             'margin:0 auto;padding:16px;font-size:15px;overflow-wrap:anywhere;'
             'word-break:break-word;">{}</div></body></html>')
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": 800})
                page.set_content(frame.format(odds_html(chart)))
                assert layout.broken_words(page) == [], width
                found = layout.wide(page)
                assert found["scroll"] <= width and not found["wide"], (width, found)
        finally:
            browser.close()
