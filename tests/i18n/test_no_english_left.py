"""The English that German and Czech mail kept, item by item (issue "Orders as people write
them", item 5), through the real handling path (the desk on SQLite): the welcome's game
line, HISTORY, private press, DEFAULT, the hours of PAUSE, the robot's level, the kinds'
names, HELP's fields and Cup of Bluff's orders, ABSENT, the From name; and the one rule of
a mail's language (pbem.text.i18n.answer_language) where it used to go wrong."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import parseaddr

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Session, select

from pbem.demo.robot_client import parse_mail
from pbem.runner.server import Server
from pbem.store.models import Player
from pbem.text.i18n import LANGUAGES, answer_language, translator
from pbem.text.wording import USAGE_FIELDS, count_of, usage_said
from testkit.desk import (
    PLAYERS,
    Clock,
    admin,
    by_seat,
    new_game,
    order,
    outbox,
    outbox_rows,
    send,
    text_of,
)
from tests.i18n.english_words import english_in_mail, english_words

ANN, BOB = PLAYERS[0], PLAYERS[1]
NAMES = [f"Name{i}" for i in range(1, 8)] + ["g1", "g2", "Newcomer"]
FROM = {"en": "Bluff referee", "de": "Bluff-Schiedsrichter", "cs": "Rozhodčí hry Bluff"}


def last(server: Server, to: str) -> EmailMessage:
    return outbox(server, to)[-1]


def no_english(message: EmailMessage) -> str:
    """The mail's text, asserting no common English word is in it (nor in its HTML,
    subject and From name)."""
    assert not english_in_mail(message, NAMES), english_in_mail(message, NAMES)
    return text_of(message)


def mails_of(server: Server, to: str, kind: str, game_id: int | None = None
             ) -> list[EmailMessage]:
    """The mails of one kind (report, notice, reminder ...) to an address."""
    return [parse_mail(r.raw) for r in outbox_rows(server, to)
            if r.kind == kind and (game_id is None or r.game_id == game_id)]


def started(server: Server, language: str, options: str = "") -> None:
    new_game(server, f"LANGUAGE {language} {options}".strip())
    admin(server, "START g1")


def due_player(server: Server) -> str:
    """A player whose order is due (postal: everyone; the lowest seat)."""
    return by_seat(server)[1].email


# --- each item ------------------------------------------------------------------------------

WELCOME = {"de": "Züge von 48 Stunden, Fristen um 18:00 UTC, Erinnerung 12 Std. vorher",
           "cs": "tahy po 48 hodinách, lhůty v 18:00 UTC, připomínka 12 h předem"}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_the_welcome_of_add_says_the_game_in_the_language(server: Server,
                                                          language: str) -> None:
    new_game(server, f"DEADLINE 48 AT 18 LANGUAGE {language}")
    text = no_english(outbox(server, ANN)[0])
    assert WELCOME[language] in text


HISTORY = {"de": "Zug 1, Minispiel", "cs": "tah 1, minihra"}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_history_lines_are_in_the_language(server: Server, language: str) -> None:
    started(server, language)
    admin(server, "PROCESS g1")            # turn 1 played by the robot: five bids
    order(server, ANN, "HISTORY")
    assert no_english(last(server, ANN)).count(HISTORY[language]) == 5


PRIVATE = {"de": ("nur an dich", "nur an Spieler"), "cs": ("jen pro vás", "jen pro hráče")}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_private_press_is_marked_in_the_language(server: Server, language: str) -> None:
    started(server, language, "PRESS private")
    bob_seat = next(s for s, p in by_seat(server).items() if p.email == BOB)
    order(server, ANN, f"SAY TO {bob_seat} psst")
    admin(server, "PROCESS g1")
    to_you, to_them = PRIVATE[language]
    assert to_you in no_english(last(server, BOB))      # the listener's report
    assert to_them in no_english(last(server, ANN))     # the speaker's


DEFAULTED = {"de": "den Roboter deinen Zug wählen lassen",
             "cs": "nechat tah vybrat robota"}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_default_and_orders_explain_the_standing_order_in_the_language(
        server: Server, language: str) -> None:
    started(server, language)
    for line in ("DEFAULT ROBOT", "ORDERS"):
        order(server, ANN, line)
        assert DEFAULTED[language] in no_english(last(server, ANN))


@pytest.mark.parametrize("language", ["de", "cs"])
def test_pause_says_the_time_left_in_words(server: Server, language: str) -> None:
    started(server, language, "DEADLINE 24")
    admin(server, "PAUSE g1")
    text = no_english(last(server, ANN))
    assert "24.0" not in text and ("Tag" in text or "den" in text), text


LEVEL = {"de": "Roboterstufe für fehlende Befehle: stark.",
         "cs": "Úroveň robota za chybějící tahy: silný."}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_the_reports_robot_level_is_in_the_language(server: Server, language: str) -> None:
    started(server, language, "DEADLINE 48")
    assert LEVEL[language] in no_english(last(server, ANN))


TAKEN_OVER = {"de": "(Bluff per Post)", "cs": "(Bluff poštou)"}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_a_replacement_names_the_kind_in_the_language(server: Server, language: str) -> None:
    started(server, language)
    admin(server, "PROCESS g1")
    admin(server, "REPLACE g1 2 new@example.org Newcomer")
    (welcome,) = mails_of(server, "new@example.org", "notice")
    text = no_english(welcome)
    assert TAKEN_OVER[language] in text and HISTORY[language] in text


HELPED = {"de": ("BID <Anzahl> <Augenzahl>", "ABSENT <von-Datum> <bis-Datum>",
                 "GAME <Spiel>"),
          "cs": ("BID <počet> <hodnota>", "ABSENT <od-data> <do-data>", "GAME <hra>")}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_help_says_the_fields_of_the_orders_in_the_language(server: Server,
                                                           language: str) -> None:
    started(server, language)
    order(server, ANN, "HELP")
    text = no_english(last(server, ANN))
    for usage in HELPED[language]:
        assert usage in text, usage


CUP_HELP = {"de": ("als Rater: du glaubst dem Bluffer", "ANNOUNCE <Summe> TO"),
            "cs": ("jako hádající: věříte tvrzení blafaře", "ANNOUNCE <součet> TO")}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_cup_of_bluff_orders_in_help_are_in_the_language(server: Server,
                                                         language: str) -> None:
    started(server, language, "RULES cup")
    order(server, ANN, "HELP")
    text = no_english(last(server, ANN))
    for said in CUP_HELP[language]:
        assert said in text, said


ABSENCE = {"de": "14 Tage sind noch übrig", "cs": "zbývá 14 dní"}


@pytest.mark.parametrize("language", ["de", "cs"])
def test_absent_counts_the_days_left_in_whole_days(server: Server, language: str) -> None:
    started(server, language)
    order(server, ANN, "ABSENT 2031-01-05 2031-01-07")
    text = no_english(last(server, ANN))
    assert ABSENCE[language] in text and "14.0" not in text


@pytest.mark.parametrize("language", ["en", "de", "cs"])
def test_every_mail_is_from_the_referee_by_the_name_of_its_language(
        server: Server, language: str) -> None:
    started(server, language)
    order(server, ANN, "HELP")
    for row in outbox_rows(server, ANN):
        head = row.raw.split(b"\r\n\r\n", 1)[0]
        assert head.isascii()                  # the name is encoded (RFC 2047), not raw
        (line,) = [h for h in head.split(b"\r\n") if h.startswith(b"From:")]
        if language == "cs":
            assert b"=?utf-8?" in line.lower(), line
    for message in outbox(server, ANN):
        assert parseaddr(str(message["From"]))[0] == FROM[language]


# --- the one rule ---------------------------------------------------------------------------

def language_of(server: Server, email: str) -> dict[str, str | None]:
    with Session(server.engine) as session:
        return {str(p.game_id): p.language
                for p in session.exec(select(Player).where(Player.email == email))}


def two_games(server: Server) -> None:
    """Ann plays g1 (German) and g2 (English, the newer one); g3 (English) is open."""
    new_game(server, "LANGUAGE de", "g1")
    admin(server, "START g1")
    new_game(server, "", "g2")
    admin(server, "START g2")
    admin(server, "NEWGAME g3 SEED 3 OPEN")


def test_an_english_join_is_answered_in_english_by_a_player_of_a_german_game(
        server: Server) -> None:
    new_game(server, "LANGUAGE de", "g1")
    admin(server, "START g1")
    admin(server, "NEWGAME g3 SEED 3 OPEN")
    text = send(server, ANN, "JOIN g3 Ann")
    assert "To confirm, reply to this mail" in text
    assert parseaddr(str(last(server, ANN)["From"]))[0] == FROM["en"]
    assert english_words(text)


def test_an_error_about_a_german_game_is_german_whatever_game_came_last(
        server: Server) -> None:
    two_games(server)
    order(server, ANN, "BIETE 3 Siebener", name="g1")
    message = last(server, ANN)
    assert "[bluff g1]" in str(message["Subject"])
    text = no_english(message)
    assert "Zeile 3: BIETE 3 Siebener" in text


def test_a_reply_to_a_german_report_with_an_unreadable_line_is_answered_in_german(
        server: Server) -> None:
    two_games(server)
    report = next(r for r in outbox_rows(server, ANN) if r.kind == "report" and
                  r.game_id == 1)
    send(server, ANN, "BDI 3 Fünfer", in_reply_to=report.message_id)
    assert "Zeile 1: BDI 3 Fünfer" in no_english(last(server, ANN))


@pytest.mark.parametrize(("chosen", "expected"), [(None, "en"), ("cs", "cs")])
def test_a_replaced_player_reads_the_game_in_its_language_unless_they_chose_one(
        server: Server, clock: Clock, chosen: str | None, expected: str) -> None:
    """Bob plays a German game; put into an English game by REPLACE, his welcome, his
    reports and his reminder are all in English (or all in the language he chose)."""
    new_game(server, "LANGUAGE de", "g1")
    admin(server, "START g1")
    if chosen is not None:
        order(server, PLAYERS[0], f"LANGUAGE {chosen}")
    newcomer = PLAYERS[0]
    others = [f"other{i}@example.org" for i in range(1, 6)]
    new_game(server, "DEADLINE 24", "g2", players=others)
    admin(server, "START g2")
    admin(server, f"REPLACE g2 1 {newcomer} Newcomer")
    clock.advance(hours=13)                # the reminder: 12 h before the deadline
    server.referee.resolve_due()
    mails = [m for kind in ("notice", "report", "reminder")
             for m in mails_of(server, newcomer, kind, game_id=2)]
    assert len(mails) == 3, [m["Subject"] for m in mails]
    for message in mails:
        assert parseaddr(str(message["From"]))[0] == FROM[expected], message["Subject"]
        if expected != "en":
            no_english(message)


@pytest.mark.parametrize("language", ["de", "cs"])
def test_a_mail_of_english_words_about_no_game_is_answered_in_english(
        server: Server, language: str) -> None:
    """LIST in English from a player of a German game: the words' language."""
    new_game(server, f"LANGUAGE {language}", "g1")
    admin(server, "START g1")
    assert "Bluff by mail: the games" in send(server, ANN, "LIST")
    assert parseaddr(str(last(server, ANN)["From"]))[0] == FROM["en"]


# --- the rule itself ------------------------------------------------------------------------

SPOKEN = st.sampled_from([*LANGUAGES, None, "xx"])


@given(game=SPOKEN, own=SPOKEN, chosen=SPOKEN, written=SPOKEN, plays_in=SPOKEN,
       default=st.sampled_from(list(LANGUAGES)))
def test_the_rule_picks_the_first_spoken_language_of_its_order(
        game: str | None, own: str | None, chosen: str | None, written: str | None,
        plays_in: str | None, default: str) -> None:
    said = answer_language(game=game, own=own, chosen=chosen, written=written,
                           plays_in=plays_in, default=default)
    assert said in LANGUAGES
    order_ = [own, chosen, game] if game is not None else [written, chosen, plays_in]
    first = next((c for c in order_ if c in LANGUAGES), default)
    assert said == first
    if game in LANGUAGES and own not in LANGUAGES and chosen not in LANGUAGES:
        assert said == game                 # about a game: its language, unless chosen
    if game is not None:
        assert said != written or written in (own, chosen, game, default)


def test_the_rule_by_example() -> None:
    # about a German game: the player's own, else their address's, else the game's
    assert answer_language(game="de") == "de"
    assert answer_language(game="en", chosen="cs") == "cs"
    assert answer_language(game="en", own="de", chosen="cs") == "de"
    # about no game: the mail's words, else the address's, else its games', else the server's
    assert answer_language(game=None, written="en", chosen="de") == "en"
    assert answer_language(game=None, chosen="de", plays_in="cs") == "de"
    assert answer_language(game=None, plays_in="cs") == "cs"
    assert answer_language(game=None, default="de") == "de"
    assert answer_language(game=None, written="xx", default="xx") == "en"


# --- the fields of a usage, the count of an amount ------------------------------------------

USAGE_TEXT = st.lists(st.one_of(st.sampled_from(sorted(USAGE_FIELDS)),
                                st.sampled_from(["BID", "TO", "|", "[", "]", "<odd one>", "..."])),
                      max_size=8).map(" ".join)


@settings(deadline=None)         # the first example reads the German catalogue
@given(USAGE_TEXT)
def test_a_usage_is_said_field_by_field(usage: str) -> None:
    assert usage_said(usage) == usage                         # English: as written
    german = usage_said(usage, translator("de"))
    assert not any(field in german for field in USAGE_FIELDS)  # every field said
    assert german.count("<odd one>") == usage.count("<odd one>")   # an unknown one stays
    words = {"BID", "TO", "|", "[", "]", "..."}                # the command words stay
    assert [w for w in german.split() if w in words] == [w for w in usage.split()
                                                         if w in words]


def test_a_usage_by_example() -> None:
    assert usage_said("BID <quantity> <face>", translator("de")) == "BID <Anzahl> <Augenzahl>"
    assert usage_said("ABSENT <from-date> <to-date>", translator("cs")) == (
        "ABSENT <od-data> <do-data>")


@given(st.floats(min_value=0, max_value=1000, allow_nan=False))
def test_the_count_of_an_amount(amount: float) -> None:
    n = count_of(amount)
    assert n == amount if amount == int(amount) else n == 2
