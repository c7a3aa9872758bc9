"""The web pages in German and Czech: chosen by Accept-Language, by the EN / DE / CS switch
(``?lang=``, then the ``lang`` cookie), never mixed up by caches; every page's own English
words translated, the JSON twins English as before.

The app runs in-process on real games (testkit.web.build_site), as in test_web.py.
"""

from __future__ import annotations

import html
import re
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.config import load_settings
from pbem.store.models import Game
from pbem.text.deadlines import relative, time_left
from pbem.text.i18n import translator
from pbem.web import create_app
from pbem.web.pages import deadline_fields
from testkit.catalogue import english_left, english_phrases
from testkit.web import SECRET, Site, stopped_clock

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

PAGES = ["/", "/games/postal-1", "/games/classic-1", "/games/cup-1", "/games/open-1",
         "/games/classic-1/replay/0", "/games/classic-1/replay/2", "/games/cup-1/replay/2",
         "/verify", "/list/finished", "/games/nope", "/list/finished?page=9"]
# words each language's pages say (the index and a game page)
WORDS = {"de": ["Laufende Spiele", "Beendete Spiele", "Frist", "Würfel", "Spieler"],
         "cs": ["Běžící hry", "Skončené hry", "lhůta", "kostky", "hráč"]}


@pytest.fixture
def client(site: Site) -> Iterator[TestClient]:
    settings = load_settings(site.config, env={"PBEM_WEB_SECRET": SECRET})
    # a fresh one a test: no cookie yet
    with TestClient(create_app(settings, clock=stopped_clock())) as c:
        yield c


def visible(page: str) -> str:
    """A page's text as a reader sees it: no tags, no scripts' pictures, entities read."""
    page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.mark.parametrize("language", ["de", "cs"])
def test_every_page_is_in_the_language_the_browser_asks_for(site: Site, client: TestClient,
                                                            language: str) -> None:
    english = english_phrases(language)
    assert "Waiting for the order of" in english and "Bluff by mail" in english
    private = site.link("postal-1", 4)
    for path in [*PAGES, private]:
        answer = client.get(path, headers={"accept-language": f"{language},en;q=0.5"})
        assert f'<html lang="{language}">' in answer.text, path
        left = english_left(visible(answer.text), language)
        assert left == [], (path, left)
    index = visible(client.get("/", headers={"accept-language": language}).text)
    game = visible(client.get("/games/postal-1", headers={"accept-language": language}).text)
    for word in WORDS[language]:
        assert word in index + game, word


def test_the_german_pages_say_what_the_english_ones_say(client: TestClient) -> None:
    de = {"accept-language": "de-AT,de;q=0.9"}
    game = visible(client.get("/games/postal-1", headers=de).text)
    assert "Es fehlt noch der Befehl von: Spieler 2 (Newbie)" in game
    assert "Minispiel 1 · 25 Würfel im Spiel (je 5)" in game
    assert "Frist 2026-12-03 12:00 UTC (abgelaufen)" in game
    classic = visible(client.get("/games/classic-1", headers=de).text)
    assert "Das Spiel ist vorbei." in classic and "Endstand" in classic
    assert "Hoch die Becher:" in classic and "Gezählt:" in classic
    index = visible(client.get("/", headers=de).text)
    assert "JOIN open-1 <dein Name>" in index and "Bluff per Post" in index
    czech = visible(client.get("/games/classic-1", headers={"accept-language": "cs"}).text)
    assert "Konečné pořadí" in czech and "Pohárky nahoru:" in czech
    # the JSON twins are English whatever the browser reads
    data = client.get("/api/games", headers=de).json()
    assert [s["title"] for s in data["sections"]] == ["Running games", "Open for sign-up",
                                                      "Finished games"]
    rows = {g["game"]: g for s in data["sections"] for g in s["games"]}
    assert rows["open-1"]["join"] == "JOIN open-1 <your name>"
    assert rows["postal-1"]["deadline_relative"] == "passed"
    error = client.get("/api/games/nope", headers=de).json()
    assert error["title"] == "No such game"
    page = client.get("/games/nope", headers=de)
    assert page.status_code == 404 and "Kein solches Spiel" in page.text


def test_the_switch_sets_a_cookie_that_wins_over_the_browser(client: TestClient) -> None:
    german = {"accept-language": "de"}
    answer = client.get("/games/classic-1?lang=cs", headers=german)
    assert '<html lang="cs">' in answer.text
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("lang=cs;") and "samesite=lax" in cookie.lower()
    assert "path=/" in cookie.lower() and "max-age=" in cookie.lower()
    assert answer.headers["cache-control"].startswith("private")   # it sets a cookie
    later = client.get("/", headers=german)                        # the cookie kept it
    assert '<html lang="cs">' in later.text and "set-cookie" not in later.headers
    assert client.get("/?lang=en", headers=german).text.count('<html lang="en">') == 1
    assert '<html lang="en">' in client.get("/games/cup-1", headers=german).text
    assert '<html lang="en">' in client.get("/?lang=xx", headers=german).text   # unknown
    form = client.get("/verify?lang=de")
    assert form.headers["cache-control"] == "private, max-age=3600" and "Prüfen" in form.text
    assert client.get("/verify").headers["cache-control"] == "public, max-age=3600"


def test_every_page_links_to_itself_in_each_language(client: TestClient) -> None:
    page = client.get("/list/finished?page=1", headers={"accept-language": "de"}).text
    switch = re.search(r'<span class="languages".*?</span>', page, re.DOTALL)
    assert switch is not None
    links = dict(re.findall(r'<a href="([^"]+)" lang="(\w+)"', switch[0]))
    assert links == {"/list/finished?page=1&amp;lang=en": "en",
                     "/list/finished?page=1&amp;lang=cs": "cs"}
    assert '<strong lang="de" title="Deutsch">DE</strong>' in switch[0]


def test_the_cache_never_serves_one_language_to_another(client: TestClient) -> None:
    for path in ("/", "/games/postal-1", "/games/classic-1", "/games/classic-1/replay/1"):
        answers = {lang: client.get(path, headers={"accept-language": lang})
                   for lang in ("en", "de", "cs", "en", "de")}
        tags = {lang: a.headers["etag"] for lang, a in answers.items()}
        assert len(set(tags.values())) == 3, (path, tags)
        for lang, answer in answers.items():
            assert f'<html lang="{lang}">' in answer.text
            assert answer.headers["vary"] == "Accept-Language, Cookie"
        for lang, tag in tags.items():   # a copy in one language revalidates only itself
            for other in ("en", "de", "cs"):
                again = client.get(path, headers={"accept-language": other,
                                                  "if-none-match": tag})
                if other == lang:
                    assert again.status_code == 304 and again.headers["etag"] == tag
                else:
                    assert again.status_code == 200, (path, lang, other)
                    assert f'<html lang="{other}">' in again.text
    # the JSON twin is one for every language
    json_tags = {client.get("/api/games/postal-1", headers={"accept-language": lang})
                 .headers["etag"] for lang in ("en", "de", "cs")}
    assert len(json_tags) == 1


def test_time_left_is_said_in_each_language() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    paused = Game(name="g", status="paused", paused_left_seconds=36 * 3600)
    left = deadline_fields(paused, now)["paused_left"]
    assert (str(left), left.said(translator("de")), left.said(translator("cs"))) == (
        "1 day 12 hours", "1 Tag 12 Stunden", "1 den 12 hodin")
    running = Game(name="g", status="running", deadline=now + timedelta(days=2, hours=3))
    soon = deadline_fields(running, now)["deadline_relative"]
    assert (str(soon), soon.said(translator("de")), soon.said(translator("cs"))) == (
        "in 2 days 3 hours", "noch 2 Tage 3 Stunden", "ještě 2 dny 3 hodiny")


@given(st.integers(min_value=-10**6, max_value=10**8))
def test_time_left_in_english_is_what_the_deadlines_say(seconds: int) -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    game = Game(name="g", status="running", deadline=now + timedelta(seconds=seconds))
    assert str(deadline_fields(game, now)["deadline_relative"]) == relative(
        now + timedelta(seconds=seconds), now)
    if seconds > 0:
        assert f"in {time_left(seconds)}" == relative(now + timedelta(seconds=seconds), now)


def test_a_kinds_line_is_said_in_the_pages_language() -> None:
    """The pages' ``said`` filter is the mails' own: a kind's line (a Told: English text
    that keeps its message, Cup of Bluff's "waiting for" line) is said in German too."""
    from pbem.config import Settings
    from pbem.kinds.words import Told
    from pbem.text.wording import _
    from pbem.web.language import template_environment

    line = Told(_("the game is over"))
    said = template_environment(Settings(), "de").filters["said"](line)
    assert said == translator("de").gettext("the game is over") != "the game is over"
