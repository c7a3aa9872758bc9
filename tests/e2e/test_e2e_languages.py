"""Whole games in German and in Czech over the real mail stack (Dovecot in, SMTP out).

A postal game and a classic game, each with the game's language set by the referee
(NEWGAME ... LANGUAGE de|cs), played to the end by robot players who write their
orders in that language's words (BIETE 3 Fünfer, HOCH DIE BECHER; SÁZKA 3 pětky,
NEVĚŘÍM), some with the accents left out. Every mail a player gets, reports, answers
and notices, is in the game's language: no English phrase of the catalogue is in it
(testkit.catalogue.english_left), no common English word either (a stop-list:
tests/i18n/english_words.py) and its own words are; every mail is answered once and
the game ends as an English one does. A postal game with every side order, private
press, a missed turn and a replacement is read the same way, mail by mail.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterator
from datetime import UTC, timedelta
from email.message import EmailMessage
from email.utils import parseaddr
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from pbem.demo.robot_client import client_order_lines, parse_mail
from pbem.games.records import find_game
from pbem.services.clock import clock_tick
from pbem.store.models import OutboundMail
from testkit.catalogue import english_left
from testkit.e2e import Client, Table, text_of
from testkit.stored import outbound_rows
from tests.i18n.english_words import english_in_mail

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
    # nor any common English word, which no catalogue lists
    names = [f"Player-{u}" for u in PLAYERS] + [game]
    words = {f"{user}: {msg['Subject']}": found for user, msg in seen
             if (found := english_in_mail(msg, names))}
    assert not words, words
    for user, msg in seen:
        text = text_of(msg)
        assert any(word in text for word in OWN_WORDS[language]), (user, text[:400])
    assert all(not str(msg["Subject"]).isascii() or language == "de"
               or "[bluff" in str(msg["Subject"]) for _, msg in seen)


# --- every mail a player gets, no English word in it ---------------------------------------

# the order words of the side orders, and table talk, by language
SIDE = {"de": {"HELP": "HILFE", "HISTORY": "VERLAUF", "ORDERS": "BEFEHLE",
               "ABSENT": "ABWESEND", "SAY": "AN ALLE", "hello": "Viel Glück allerseits!",
               "secret": "Ich traue Nummer fünf nicht.", "bad": "BIETE 3 Siebener"},
        "cs": {"HELP": "NÁPOVĚDA", "HISTORY": "HISTORIE", "ORDERS": "PŘÍKAZY",
               "ABSENT": "NEPŘÍTOMNOST", "SAY": "VŠEM", "hello": "Hodně štěstí všem!",
               "secret": "Pětce nevěřím.", "bad": "SÁZKA 3 sedmičky"}}
SENDER_NAME = {"de": "Bluff-Schiedsrichter", "cs": "Rozhodčí hry Bluff"}


def side_orders(language: str) -> list[str]:
    """The side orders of one mail: HISTORY, ORDERS, DEFAULT, ABSENT, table talk."""
    words = SIDE[language]
    return [words["HISTORY"], words["ORDERS"], "DEFAULT ROBOT",
            f"{words['ABSENT']} 2031-01-05 2031-01-07", f"{words['SAY']} {words['hello']}"]


def queued(table: Table, kind: str) -> list[EmailMessage]:
    """The mails of a kind the server queued (as they go out: their stored bytes)."""
    rows = outbound_rows(table.server.engine, OutboundMail.kind == kind)
    return [parse_mail(row.raw) for row in rows]


@pytest.mark.parametrize("language", ["de", "cs"])
def test_no_english_word_in_any_mail_of_a_game(table: Table, language: str) -> None:
    """A postal game with private press, played to the end: the welcome of ADD, every
    side order (HELP, STATUS, HISTORY, ORDERS, DEFAULT, ABSENT), table talk to all and to
    one player, an error, a missed turn (the reminder, the standing order played), a
    replacement (the newcomer's welcome with the history) and the final report. No mail a
    player gets has a common English word (tests/i18n/english_words.py) in its text, HTML
    or subject, and each is from the referee by the name of the player's language."""
    game = f"postal-{language}"
    table.stack.clear("p6")
    setup = table.setup(game, f"NEWGAME {game} SEED 20261129 DEADLINE 48 AT 18 "
                              f"PRESS private LANGUAGE {language}")
    table.referee_sends(*setup[:-1])             # the welcomes of ADD go out before START
    table.server.tick()
    table.collect()
    assert all(len(table.answers[u]) == 1 for u in PLAYERS)
    table.referee_sends(setup[-1])
    table.server.tick()
    table.referee.new_mail()
    seat_of = table.first_reports_in()
    names = [f"Player-{u}" for u in [*PLAYERS, "p6"]] + [game, "Newcomer"]

    rng = random.Random(7)
    seen: list[tuple[str, EmailMessage]] = []
    replaced = table.clients["p5"]
    post = table.server.referee.post
    words = SIDE[language]
    for turn, _views in table.turns(limit=80):
        if turn == 3:       # p6 takes p5's seat: welcome, history, the seat's report
            table.referee_sends(f"REPLACE {game} {seat_of['p5']} "
                                f"{table.stack.address('p6')} Newcomer")
            table.clients["p5"] = Client(table.stack, "p6")
            table.server.tick()
            table.collect()
            assert table.latest["p5"][1]["turn"] == 3
        skipped = None
        for user, (msg, view) in sorted(table.latest.items()):
            seen.append((user, msg))
            lines = client_order_lines(view, rng)
            if turn == 2 and lines and skipped is None and user != "p2":
                skipped = user            # misses the turn: reminder, standing order
                continue
            extra = []
            if turn == 1 and user == "p2":
                extra = side_orders(language)
            elif turn == 1 and user in ("p3", "p4"):   # HELP, STATUS: a mail of their own
                table.reply(user, [GREETING[language],
                                   words["HELP"] if user == "p3" else "STATUS"], msg)
            elif turn == 2 and user == "p2":
                extra = [f"SAY TO {seat_of['p1']} {words['secret']}"]
            elif turn == 4 and user == "p3":           # refused: nothing applied
                table.reply(user, [GREETING[language], words["bad"]], msg)
            if lines or extra:
                table.reply(user, [GREETING[language], *extra,
                                   *in_language(lines, language, False)], msg)
        if skipped is not None:
            table.server.tick()           # the others' orders are in
            with Session(table.server.engine) as session:
                deadline = find_game(session, game).deadline
            assert deadline is not None
            for hours in (-11, 1):        # the reminder, then the turn resolved
                clock_tick(table.server.engine, post,
                           deadline.replace(tzinfo=UTC) + timedelta(hours=hours))
    seen += [(user, msg) for user, (msg, _view) in table.latest.items()]
    seen += [(user, a) for user in PLAYERS for a in table.answers[user]]
    seen += [("p5 (replaced)", m) for m in replaced.new_mail()]
    # the reminder is stamped with the clock's time to come: read as it was queued
    reminders = queued(table, "reminder")
    assert len(reminders) == 1
    seen += [("reminded", m) for m in reminders]

    said = {str(m["Subject"]) for _, m in seen} | {text_of(m) for _, m in seen}
    for what in (words["HELP"], "STATUS", "ROBOT", "2031-01-05", words["hello"],
                 words["secret"], "Newcomer", "Siebener" if language == "de" else "sedmičky"):
        assert any(what in text for text in said), what        # each was answered
    english = {f"{user}: {msg['Subject']}": found for user, msg in seen
               if (found := english_in_mail(msg, names))}
    assert not english, english
    assert {parseaddr(str(m["From"]))[0] for _, m in seen} == {SENDER_NAME[language]}
