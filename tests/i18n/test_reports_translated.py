"""The report mails in German and Czech: every report template (postal, classic, cup,
generic, combined) rendered in each language from robot-played games with every
section filled, under StrictUndefined, says its reader's language and leaves no
English sentence of the catalogue in the text or the HTML.

The games are played by the kinds' robots through the server's turn code
(testkit.reports), the reports made by the production function; each report's context
is kept as the production code passed it, and rendered again in German and Czech (the
web links, which these games' server has none of, are added)."""

from __future__ import annotations

import copy
import html as htmllib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import pytest

from pbem.render.reports import Renderer, SharedParts
from testkit.catalogue import translations
from testkit.reports import play

LANGUAGES = ("de", "cs")
# (kind, options, players, seed): the sections of every report template between them
# (exposes, the super die, star bids, the cups up, Cup of Bluff's steals and doublets,
# standings and the course in the final reports)
GAMES = [
    ("postal", "", 5, 7),
    ("classic", "anniversary DICE 3 EXPOSE on", 3, 13),
    ("classic", "english DICE 2", 3, 11),
    ("cup", "", 3, 15),
]
WEB = {"game_url": "https://bluff.example.org/games/g1",
       "private_link": {"url": "https://bluff.example.org/p/abc", "until":
                        "2026-03-08T12:00:00Z"}}
# words every report of the language has (the mail's own words, not a player's)
EXPECTED = {
    "de": {"postal_report": ["Spieler", "Würfel", "Bluff-Schiedsrichter"],
           "classic_report": ["Spieler", "Würfel", "Regeln", "Bluff-Schiedsrichter"],
           "cup_report": ["Spieler", "Chips", "Punkte", "DIE MITTE"],
           "generic_report": ["Spiel", "Bluff-Schiedsrichter"]},
    "cs": {"postal_report": ["hráč", "kostk", "Rozhodčí hry Bluff"],
           "classic_report": ["hráč", "kostk", "Pravidla", "Rozhodčí hry Bluff"],
           "cup_report": ["hráč", "žeton", "BODY", "STŘED"],
           "generic_report": ["hra", "Rozhodčí hry Bluff"]},
}
Recorded = list[tuple[str, dict[str, Any]]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """(template, context) of every report the games' production code rendered."""
    seen: Recorded = []

    class Recording(Renderer):
        def render(self, name: str, context: Mapping[str, Any], language: str = "en",
                   zone: str | None = None, shared: SharedParts | None = None
                   ) -> tuple[str, str]:
            seen.append((name, copy.deepcopy(dict(context))))
            return super().render(name, context, language, zone, shared)

    tmp = tmp_path_factory.mktemp("translated")
    for kind, options, players, seed in GAMES:
        play(tmp, kind, options, players, seed, renderer=Recording())
    return seen


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    renderer = Renderer()
    for language in LANGUAGES:
        assert renderer.environment(language).undefined is jinja2.StrictUndefined
    return renderer


# --- the catalogue's English, as it could show in a mail ----------------------------------

_FIELD = re.compile(r"%\(\w+\)s|\{\w*\}|<[^>]+>|&\w+;|\n")
# orders as a player writes them: the English words work in every language, and a note
# may quote an order as it was played ("the robot played BID 1 three, EXPOSE 3 3")
ORDERS = re.compile(r"^(BID|CHALLENGE|EXPOSE|HELP)\b")


def _words(text: str) -> str:
    return " ".join(text.split())


def english_left_over(language: str) -> re.Pattern[str]:
    """The English runs of the language's catalogue that must not show in its mails: each
    message's text between its fields and markup, of two words or more, that its
    translation does not have too ("Cup of Bluff" is a name in every language), as whole
    words ("a bluff" is not in "bluff@example.org")."""
    runs = set()
    for message in translations(language).values():
        sources = message.id if isinstance(message.id, (tuple, list)) else (message.id,)
        said = message.string if isinstance(message.string, (tuple, list)) else (
            message.string,)
        if list(sources) == list(said):
            continue
        for source in sources:
            for run in _FIELD.split(source):
                run = _words(run.strip(" ,.:;()-"))
                if (len(run.split()) >= 2 and not ORDERS.match(run)
                        and not any(run in _words(s) for s in said)):
                    runs.add(run)
    alternatives = "|".join(re.escape(run) for run in sorted(runs, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


def visible(html: str) -> str:
    """An HTML part as its reader reads it: no tags, entities decoded, spaces folded."""
    return _words(htmllib.unescape(re.sub(r"<[^>]+>", " ", html)))


def test_the_scan_finds_the_catalogues_english() -> None:
    runs = english_left_over("de")
    assert runs.search("Player 3 (Ann) wins: the last player with dice.")
    assert runs.search("You are watching this game.")
    assert not runs.search("Cup of Bluff")     # the same in the translation: a name
    assert not runs.search("Mail an bluff@example.org")


# --- every report, in every language ---------------------------------------------------------

def rendered(renderer: Renderer, recorded: Recorded, language: str,
             ) -> list[tuple[str, str, str]]:
    """Every recorded report (and each as the generic template shows it) in ``language``."""
    out = []
    for name, context in recorded:
        full = {**context, **WEB}
        out.append((name, *renderer.render(name, full, language)))
        if name == "classic_report":
            # a kind without a report of its own shows the generic one: its standings
            # carry a score (as every kind's do, pbem.kinds.base.GameKind.standings)
            generic = {**full, "standings": None if full["standings"] is None else [
                {"score": s.get("score", s["dice"]), **s} for s in full["standings"]]}
            out.append(("generic_report", *renderer.render("generic_report", generic,
                                                           language)))
    return out


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_report_speaks_its_readers_language(renderer: Renderer, recorded: Recorded,
                                                  language: str) -> None:
    left = english_left_over(language)
    reports = rendered(renderer, recorded, language)
    assert {name for name, _t, _h in reports} == {"postal_report", "classic_report",
                                                  "cup_report", "generic_report"}
    for name, text, html in reports:
        assert f'<html lang="{language}">' in html, name
        shown_text, shown_html, raw_html = _words(text), visible(html), _words(html)
        for word in EXPECTED[language][name]:     # (a heading is upper case in text)
            assert word.casefold() in shown_text.casefold(), (name, word, text)
            assert word.casefold() in shown_html.casefold(), (name, word, html)
        found = [m.group() for part in (shown_text, shown_html, raw_html)
                 for m in left.finditer(part)]
        assert not found, (name, found, text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_section_is_there_to_be_read(renderer: Renderer, recorded: Recorded,
                                           language: str) -> None:
    """The games fill what the scan must see: the final report with its standings and
    course, the first report's commitment, notes, talk, odds charts, the web links."""
    texts = " ".join(_words(text) for _n, text, _h in rendered(renderer, recorded, language))
    wanted = {"de": ["ENDSTAND", "nach jedem Zug", "Würfel-Festlegung SHA-256",
                     "ANMERKUNGEN", "TISCHGESPRÄCH", "Die Chance jeder Zahl",
                     "Seite des Spiels", "Deine eigene Seite", "Startwert",
                     "HOCH DIE BECHER", "Superwürfel", "Frist", "Gebot", "DIESE RUNDE", "LETZTE RUNDE"],
              "cs": ["KONEČNÉ POŘADÍ", "po každém tahu", "Závazek kostek SHA-256",
                     "POZNÁMKY", "ROZHOVOR U STOLU", "Šance každého počtu",
                     "Stránka hry", "Vaše vlastní stránka", "Semínko", "NEVĚŘÍM",
                     "superkostka", "Lhůta", "sázk", "TOTO KOLO", "MINULÉ KOLO"]}[language]
    assert [w for w in wanted if w not in texts] == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_combined_answer_speaks_its_readers_language(renderer: Renderer,
                                                       recorded: Recorded,
                                                       language: str) -> None:
    parts = [dict(zip(("text", "html"), renderer.render(name, context, language),
                      strict=True)) for name, context in recorded[:3]]
    text, html = renderer.render("combined", {"subject": "[bluff g1]", "parts": parts,
                                              "game": "g1"}, language)
    assert f'<html lang="{language}">' in html
    said = {"de": "Deine Mail hat nach 3 Sachen gefragt", "cs": "Váš e-mail žádal o 3 věci"}
    assert said[language] in _words(text) and said[language] in visible(html)
    left = english_left_over(language)
    assert left.findall(_words(text)) == [] and left.findall(visible(html)) == []


def test_english_is_still_english(renderer: Renderer, recorded: Recorded) -> None:
    name, context = recorded[0]
    text, html = renderer.render(name, {**context, **WEB})
    assert '<html lang="en">' in html and "WHAT TO DO NOW" in text
    assert "Your own page, with your dice" in text


def test_the_catalogue_files_of_the_reports_exist() -> None:
    root = Path(__file__).resolve().parents[2] / "pbem" / "locale"
    for language in LANGUAGES:
        assert (root / language / "LC_MESSAGES" / "reports.po").is_file()
