"""Whole games in German and in Czech over the real mail stack (Dovecot in, SMTP out).

A postal game and a classic game, each with the game's language set by the referee
(NEWGAME ... LANGUAGE de|cs), played to the end by robot players who write their
orders in that language's words (BIETE 3 Fünfer, HOCH DIE BECHER; SÁZKA 3 pětky,
NEVĚŘÍM), some with the accents left out. Every mail a player gets, reports, answers
and notices, is in the game's language: no English phrase of the catalogue is in it
(testkit.catalogue.english_left) and its own words are; every mail is answered once and
the game ends as an English one does.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from pbem.robot_client import client_order_lines
from testkit.catalogue import english_left
from testkit.e2e import Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]

FACES = {
    "de": {"1": "Einser", "2": "Zweier", "3": "Dreier", "4": "Vierer", "5": "Fünfer",
           "*": "Sternchen"},
    "cs": {"1": "jedničky", "2": "dvojky", "3": "trojky", "4": "čtyřky", "5": "pětky",
           "*": "hvězdičky"},
}
WORDS = {"de": {"BID": "BIETE", "EXPOSE": "ZEIGE", "CHALLENGE": "Hoch die Becher!"},
         "cs": {"BID": "SÁZKA", "EXPOSE": "UKÁZAT", "CHALLENGE": "Nevěřím!"}}
GREETING = {"de": "Hallo Schiedsrichter,", "cs": "Dobrý den,"}
# words every mail of the language has somewhere (its own words, not names)
OWN_WORDS = {"de": ("Spiel", "Würfel", "Zug", "Bluff"), "cs": ("hra", "kost", "tah", "Bluff")}


def without_accents(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(ch))


def in_language(lines: list[str], language: str, plain: bool) -> list[str]:
    """The robot's English order lines in the language's words (``plain``: no accents,
    lower case, as a hurried player types them)."""
    out = []
    for line in lines:
        word, *rest = line.split()
        said = WORDS[language][word]
        if word == "BID":
            quantity, face = rest
            said = f"{said} {quantity} {FACES[language][face]}"
        elif word == "EXPOSE":
            said = f"{said} {' '.join(rest)}"
        out.append(without_accents(said).lower() if plain else said)
    return out


@pytest.fixture
def table(mailstack: Any, tmp_path: Path, database: str) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS, database=database) as made:
        yield made


def english_in(msg: EmailMessage, language: str) -> list[str]:
    """The English phrases in a mail's text and HTML parts."""
    found = english_left(text_of(msg), language)
    html = msg.get_body(("html",))
    if html is not None:
        found += english_left(str(html.get_content()), language)
    return sorted(set(found))


@pytest.mark.parametrize("language", ["de", "cs"])
@pytest.mark.parametrize("kind", ["postal", "classic"])
def test_a_whole_game_in_the_players_language(table: Table, kind: str, language: str) -> None:
    game = f"{kind}-{language}"
    rules = " RULES classic DICE 2" if kind == "classic" else ""
    seed = 4 if kind == "classic" else 20261129
    table.referee_sends(*table.setup(game, f"NEWGAME {game} SEED {seed} "
                                           f"LANGUAGE {language}{rules}"))
    table.server.tick()
    started = table.referee.new_mail()
    assert len(started) == 1 and "nothing was applied" not in str(started[0]["Subject"]), \
        [text_of(m) for m in started]

    rng = random.Random(7)
    table.first_reports_in()
    plain_typists = {"p2", "p4"}          # no accents, lower case
    seen: list[tuple[str, EmailMessage]] = []
    for _turn, _views in table.turns(limit=80):
        for user, (msg, view) in sorted(table.latest.items()):
            seen.append((user, msg))
            lines = client_order_lines(view, rng)
            if lines:
                table.reply(user, [GREETING[language],
                                   *in_language(lines, language, user in plain_typists)],
                            msg)
    seen += [(user, msg) for user, (msg, _view) in table.latest.items()]   # the final ones
    table.check_the_mail(refusals=0)
    seen += [(user, a) for user in PLAYERS for a in table.answers[user]]

    english = {f"{user}: {msg['Subject']}": found for user, msg in seen
               if (found := english_in(msg, language))}
    assert not english, english
    for user, msg in seen:
        text = text_of(msg)
        assert any(word in text for word in OWN_WORDS[language]), (user, text[:400])
    assert all(not str(msg["Subject"]).isascii() or language == "de"
               or "[bluff" in str(msg["Subject"]) for _, msg in seen)
