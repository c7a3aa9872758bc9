"""The answers of the commands in German and Czech, through the real handling path (the
referee's desk on SQLite): a sign-up written in German or Czech, an order's confirmation,
an error with its line and fix, HELP, LIST, STATUS, SAY, LANGUAGE and TIMEZONE. Each
mail (text and HTML) has words of its language and none of the catalogue's English
sentences (issue 33)."""

from __future__ import annotations

import html
import json
import re
from email.message import EmailMessage

import pytest
from sqlmodel import Session, select

from pbem.games.records import find_game
from pbem.games.states import load_state
from pbem.kinds import kind_of
from pbem.runner.server import Server
from pbem.store.models import Player, Signup
from pbem.store.work import Work
from testkit.catalogue import translations
from testkit.desk import (
    PLAYERS,
    admin,
    by_seat,
    new_game,
    order,
    outbox,
    raise_line,
    send,
    text_of,
)

ANN, BOB = PLAYERS[0], PLAYERS[1]
CODE = re.compile(r"CONFIRM ([0-9a-f]{10})")
FIELD = re.compile(r"\{\w*\}|%\(\w+\)s")
# the word every mail of each language shows, in its signature
OWN = {"de": "Schiedsrichter", "cs": "Rozhodčí"}


def english_left(text: str, language: str) -> list[str]:
    """The English sentences of the catalogue (two words or more, said otherwise in the
    language) still in ``text``: a message's text between its fields, three words or more,
    or the whole of a message without fields."""
    left = []
    for message in translations(language).values():
        sources = [message.id] if isinstance(message.id, str) else list(message.id)
        said = " ".join([message.string] if isinstance(message.string, str)
                        else list(message.string))
        for source in sources:
            pieces = FIELD.split(source)
            wanted = 2 if len(pieces) == 1 else 3
            for piece in (" ".join(p.split()) for p in pieces):
                if (len(piece.split()) >= wanted and piece not in said
                        and re.search(rf"(?<!\w){re.escape(piece)}(?!\w)", text)):
                    left.append(piece)
    return left


def read_as(message: EmailMessage, language: str, *words: str,
            others: tuple[str, ...] = ()) -> str:
    """The mail's text; asserts its language's words and no English sentence, in the text
    and in the HTML part (but for ``others``: text the answer quotes from elsewhere, a
    game kind's description of its rules, say)."""
    text = text_of(message)
    part = message.get_body(("html",))
    assert part is not None
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", part.get_content())).split())
    for where in (text, page):
        ours = where
        for other in others:
            ours = ours.replace(" ".join(other.split()), "")
        assert not english_left(ours, language), (english_left(ours, language), where)
        for word in (*OWN[language][:1], *words):
            assert word in where or word in text, (word, where)
    return text


def last(server: Server, to: str) -> EmailMessage:
    return outbox(server, to)[-1]


def language_of(server: Server, email: str) -> list[str | None]:
    with Session(server.engine) as session:
        return [p.language for p in session.exec(select(Player).where(Player.email == email))]


def rules_of(server: Server, name: str = "g1") -> str:
    """A game's rules as its kind describes them (the kinds' words, not the answers')."""
    with Session(server.engine) as session:
        game = find_game(session, name)
        return str(kind_of(game).describe_rules(json.loads(game.rules_json)))


def due_player(server: Server) -> str:
    """The address of a player who moves now."""
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        due = kind_of(game).due(load_state(session, game))
    return by_seat(server)[min(due)].email


# --- JOIN in German or Czech --------------------------------------------------------------

@pytest.mark.parametrize(("language", "join", "confirm", "asked", "welcome"), [
    ("de", "ANMELDEN g1 Anna", "BESTÄTIGEN", "Zum Bestätigen", "Willkommen, Anna"),
    ("cs", "přihlásit g1 Jana", "CONFIRM", "Pro potvrzení", "Vítejte, Jana"),
])
def test_a_join_in_german_or_czech_is_answered_and_stored_in_it(
        server: Server, language: str, join: str, confirm: str, asked: str,
        welcome: str) -> None:
    admin(server, "NEWGAME g1 SEED 3 OPEN")
    newcomer = "new@example.org"
    send(server, newcomer, join)
    text = read_as(last(server, newcomer), language, asked)
    found = CODE.search(text)
    assert found, text
    with Session(server.engine) as session:
        assert session.exec(select(Signup)).one().language == language
    # a CONFIRM with the English word still answers in the JOIN's language
    send(server, newcomer, f"{confirm} {found.group(1)}")
    read_as(last(server, newcomer), language, welcome)
    assert language_of(server, newcomer) == [language]


def test_a_join_among_german_order_words_is_german(server: Server) -> None:
    """JOIN is the English word, but the mail's other order word is German."""
    admin(server, "NEWGAME g1 SEED 3 OPEN")
    send(server, "otto@example.org", "JOIN g1 Otto\nHILFE")
    read_as(last(server, "otto@example.org"), "de", "Zum Bestätigen")


def test_a_watch_in_czech_is_confirmed_in_czech(server: Server) -> None:
    new_game(server, "", "g1")
    admin(server, "START g1")
    text = send(server, "fan@example.org", "SLEDOVAT g1")
    read_as(last(server, "fan@example.org"), "cs", "sledovat hru g1")
    code = CODE.search(text)
    assert code is not None
    send(server, "fan@example.org", f"CONFIRM {code.group(1)}")
    read_as(last(server, "fan@example.org"), "cs", "Sledujete hru g1")


def test_an_english_join_stores_no_language(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3 OPEN LANGUAGE cs")
    code = CODE.search(send(server, "eve@example.org", "JOIN g1 Eve"))
    assert code is not None
    send(server, "eve@example.org", f"CONFIRM {code.group(1)}")
    assert language_of(server, "eve@example.org") == [None]   # the game's (cs) holds


# --- a game in play ------------------------------------------------------------------------

@pytest.fixture(params=["de", "cs"])
def playing(request: pytest.FixtureRequest, server: Server) -> tuple[Server, str]:
    """A started postal game whose players read German (or Czech): NEWGAME ... LANGUAGE."""
    new_game(server, f"LANGUAGE {request.param}", "g1")
    admin(server, "START g1")
    return server, request.param


CONFIRMED = {"de": ("ANGENOMMEN", "deine Befehle als Spieler"),
             "cs": ("PŘIJATO", "vaše příkazy jako hráče")}


def test_an_order_is_confirmed_in_the_players_language(playing: tuple[Server, str]) -> None:
    server, language = playing
    email = due_player(server)
    seat = next(s for s, p in by_seat(server).items() if p.email == email)
    order(server, email, raise_line(server, seat))
    read_as(last(server, email), language, *CONFIRMED[language])


REFUSED = {"de": ("Zeile 3: BDI 6 3", "'BDI' ist kein Befehl", "Korrektur: meintest du BID?",
                  "nichts wurde ausgeführt"),
           "cs": ("řádek 3: BDI 6 3", "'BDI' není příkaz", "Oprava: mysleli jste BID?",
                  "nic nebylo provedeno")}


def test_an_error_quotes_the_line_and_the_fix_in_the_language(
        playing: tuple[Server, str]) -> None:
    server, language = playing
    order(server, ANN, "BDI 6 3")
    read_as(last(server, ANN), language, *REFUSED[language])


HELPED = {"de": ("BEFEHLE FÜR SPIELER", "(auch BIETE, GEBOT, BIETEN)", "ANMELDEN",
                 "das aktuelle Gebot anzweifeln"),
          "cs": ("PŘÍKAZY HRÁČŮ", "(také SÁZKA, SÁZÍM, VSADIT)", "PŘIHLÁSIT",
                 "nevěřit aktuální sázce")}


def test_help_lists_the_words_and_says_the_text_in_the_language(
        playing: tuple[Server, str]) -> None:
    server, language = playing
    order(server, ANN, "HELP")
    read_as(last(server, ANN), language, *HELPED[language])


LISTED = {"de": ("Bluff per Mail: die Spiele", "Offen zur Anmeldung:", "(gerade keine)",
                 "WATCH g1"),
          "cs": ("Bluff e-mailem: hry", "Otevřené k přihlášení:", "(teď žádné)", "WATCH g1")}


def test_list_answers_in_the_language(playing: tuple[Server, str]) -> None:
    server, language = playing
    order(server, ANN, "LIST")
    read_as(last(server, ANN), language, *LISTED[language], others=(rules_of(server),))


def test_list_from_a_stranger_written_in_german_is_german(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3 OPEN")
    send(server, "newcomer@example.org", "SPIELLISTE")
    read_as(last(server, "newcomer@example.org"), "de", "Offen zur Anmeldung:",
            "JOIN g1 <dein Name>", others=(rules_of(server),))


STATUS = {"de": "Spiel g1 hat noch nicht begonnen", "cs": "hra g1 ještě nezačala"}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_status_before_the_start_is_refused_in_the_language(server: Server,
                                                            language: str) -> None:
    new_game(server, f"LANGUAGE {language}", "g1")
    order(server, ANN, "STATUS")
    read_as(last(server, ANN), language, STATUS[language])


SAID = {"de": ("dein Tischgespräch wurde weitergegeben", "An 4 Spieler weitergegeben"),
        "cs": ("váš vzkaz byl předán", "Předáno 4 hráčům")}
HEARD = {"de": ("Name1 (Spieler", "sagt:", "Wer hat Sterne?"),
         "cs": ("Name1 (hráč", "říká:", "Wer hat Sterne?")}


def test_say_is_relayed_and_confirmed_in_the_language(playing: tuple[Server, str]) -> None:
    server, language = playing
    word = {"de": "AN ALLE", "cs": "VZKAZ"}[language]
    order(server, ANN, f"{word} Wer hat Sterne?")
    read_as(last(server, ANN), language, *SAID[language])
    heard = read_as(last(server, BOB), language, *HEARD[language])
    assert word not in heard          # the order word is not part of what was said


def test_language_answers_in_the_new_language(playing: tuple[Server, str]) -> None:
    server, language = playing
    other = {"de": "cs", "cs": "de"}[language]
    order(server, ANN, f"LANGUAGE {other}")
    said = {"de": "Deine Sprache ist jetzt Deutsch", "cs": "Váš jazyk je nyní čeština"}
    read_as(last(server, ANN), other, said[other])
    assert set(language_of(server, ANN)) == {other}


ZONED = {"de": ("deine Zeitzone: Europe/Prague", "Zeiten in deiner Mail stehen jetzt"),
         "cs": ("vaše časové pásmo: Europe/Prague", "Časy ve vašich e-mailech")}


def test_timezone_answers_in_the_language(playing: tuple[Server, str]) -> None:
    server, language = playing
    order(server, ANN, "TIMEZONE Europe/Prague")
    message = last(server, ANN)
    assert str(message["Subject"]).endswith(ZONED[language][0])
    read_as(message, language, ZONED[language][1])
    order(server, ANN, "ZEITZONE Mars/Olympus")
    wrong = {"de": "ist keine Zeitzone, die ich kenne", "cs": "není časové pásmo, které znám"}
    read_as(last(server, ANN), language, wrong[language])
