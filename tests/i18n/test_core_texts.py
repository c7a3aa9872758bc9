"""What the rules core, the kinds, the clock, the referee's notices and the mail reading
say, in German and in Czech: through the real handling path on SQLite (the desk helpers),
each answer holds the language's words and none of the catalogue's English phrases."""

from __future__ import annotations

import re
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from pbem.rules.dice import STAR, face_symbol
from pbem.runner.server import Server
from testkit.catalogue import english_left
from testkit.desk import (
    PLAYERS,
    REFEREE,
    SERVER,
    Clock,
    admin,
    by_seat,
    deliver,
    last_text,
    make_server,
    new_game,
    order,
    outbox,
    started_game,
    state_of,
    subjects,
    text_of,
)

# what each language says, as the catalogues have it (core.po)
WORDS = {
    "de": {
        "off the board": ["40 Dreier liegt außerhalb des Spielbretts",
                          "das Spielbrett endet bei"],
        "not above": ["2 Zweier liegt nicht über 3 Fünfer",
                      "das niedrigste Gebot auf Zweier darüber ist"],
        "no bid": ["Runde 1 hat noch kein Gebot: du eröffnest sie"],
        "expose": ["du kannst nicht 1 x {face} zeigen: deine verdeckten Würfel sind"],
        "reminder": ["Erinnerung, dein Befehl fehlt noch"],
        "reminder text": ["Dein Befehl für Zug 1 im Spiel g1 ist noch nicht da",
                          "noch 11 Stunden", "Antworte mit deinem Befehl"],
        "grace": ["Zug 1: Nachfrist bis 2026-12-02 18:00 UTC"],
        "grace text": ["Die Frist für Zug 1 ist abgelaufen", "noch 5 Stunden 59 Minuten"],
        "missed": ["hat 1 Zug verpasst"],
        "missed text": ["hat 1 Zug in Folge keinen Befehl geschickt", "Das Spiel geht weiter"],
        "attachments": ["Die Mail hat keinen Textteil, nur Anhänge",
                        "1 Anhang wurde übergangen: plan.pdf (application/pdf)"],
        "signature": ["die Signatur"],
        "steal": ["stehlen kannst du erst, wenn du einen Chip hast; du hast noch keinen"],
        "token": ["'25' ist kein Chip und keine Summe",
                  "Chips und Summen sind die Zahlen 3 bis 18"],
        "guesser": ["du bist der Bluffer; der Rater muss ein anderer Spieler sein"],
    },
    "cs": {
        "off the board": ["40 trojek je mimo hrací plán", "hrací plán končí počtem"],
        "not above": ["2 dvojky není víc než 3 pětky", "nejnižší sázka na dvojky nad ní je"],
        "no bid": ["kolo 1 ještě nemá sázku: zahajujete ho"],
        "expose": ["nemůžete ukázat 1 x {face}: vaše skryté kostky jsou"],
        "reminder": ["připomínka, váš příkaz ještě nepřišel"],
        "reminder text": ["Váš příkaz pro tah 1 ve hře g1 ještě nepřišel", "ještě 11 hodin",
                          "Odpovězte svým příkazem"],
        "grace": ["tah 1: dodatečná lhůta do 2026-12-02 18:00 UTC"],
        "grace text": ["Lhůta tahu 1 uplynula", "ještě 5 hodin 59 minut"],
        "missed": ["zmeškal 1 tah"],
        "missed text": ["neposlal příkaz 1 tah za sebou", "Hra pokračuje"],
        "attachments": ["E-mail nemá textovou část, jen přílohy",
                        "1 příloha byla přeskočena: plan.pdf (application/pdf)"],
        "signature": ["podpis"],
        "steal": ["krást můžete, až budete mít žeton; zatím žádný nemáte"],
        "token": ["'25' není žeton ani součet", "žetony a součty jsou čísla 3 až 18"],
        "guesser": ["jste blafař; hádající musí být jiný hráč"],
    },
}
LANGUAGES = sorted(WORDS)


def said(text: str, language: str, what: str, **values: str) -> None:
    """``text`` says what ``WORDS`` has for ``what`` and no English phrase of the
    catalogue."""
    for words in WORDS[language][what]:
        assert words.format(**values) in text, (words, text)
    assert english_left(text, language) == [], text


def refused(server: Server, email: str, language: str, what: str, **values: str) -> None:
    """The last answer to ``email`` refuses in its reader's language: the paragraph of
    each problem (what is wrong and the fix: the core's words, while the mail around them
    is the answers' own) says what ``WORDS`` has for ``what``, in no English phrase of the
    catalogue."""
    body = outbox(server, email)[-1].get_body(("plain",))
    assert body is not None
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body.get_content())]
    wanted = [w.format(**values) for w in WORDS[language][what]]
    problem = " ".join(p for p in paragraphs if any(w in p for w in wanted))
    said(problem, language, what, **values)


def mover(server: Server) -> str:
    return by_seat(server)[state_of(server).to_move].email


def classic_game(server: Server, language: str) -> None:
    new_game(server, f"LANGUAGE {language} RULES classic english")
    admin(server, "START g1")


# --- the rules' refusals -------------------------------------------------------------------

@pytest.mark.parametrize("language", LANGUAGES)
def test_illegal_bids_are_refused_in_the_players_language(server: Server,
                                                         language: str) -> None:
    classic_game(server, language)
    first = mover(server)
    order(server, first, "BID 40 threes")
    refused(server, first, language, "off the board")
    order(server, first, "CHALLENGE")
    refused(server, first, language, "no bid")
    order(server, first, "BID 3 fives")               # accepted: the next player's move
    second = mover(server)
    order(server, second, "BID 2 twos")
    refused(server, second, language, "not above")


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_expose_of_dice_you_do_not_hold_is_refused(server: Server, language: str) -> None:
    classic_game(server, language)
    first = mover(server)
    state = state_of(server)
    held = {d.face for d in state.cup(state.to_move).hidden}
    face = next(f for f in (1, 2, 3, 4, 5, STAR) if f not in held)
    order(server, first, "BID 1 two", f"EXPOSE {face_symbol(face)}")
    refused(server, first, language, "expose", face=face_symbol(face))


@pytest.mark.parametrize("language", LANGUAGES)
def test_cup_of_bluff_token_errors(server: Server, language: str) -> None:
    new_game(server, f"LANGUAGE {language} RULES cup", players=PLAYERS[:3])
    admin(server, "START g1")
    bluffer = state_of(server).bluffer
    email = by_seat(server)[bluffer].email
    for line, what in (("STEAL 15 FROM 2", "steal"), ("ANNOUNCE 25 TO 2", "token"),
                       (f"ANNOUNCE 12 TO {bluffer}", "guesser")):
        order(server, email, line)
        refused(server, email, language, what)


# --- the clock: a reminder, a deadline notice ----------------------------------------------

@pytest.mark.parametrize("language", LANGUAGES)
def test_a_reminder_in_the_players_language(server: Server, clock: Clock,
                                            language: str) -> None:
    started_game(server, f"DEADLINE 48 LANGUAGE {language}")
    clock.advance(hours=37)
    server.referee.resolve_due()
    (subject,) = [s for s in subjects(server, PLAYERS[1]) if "[bluff g1]" in s][-1:]
    said(subject, language, "reminder")
    said(last_text(server, PLAYERS[1]), language, "reminder text")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_grace_notice_in_the_players_language(server: Server, clock: Clock,
                                                  language: str) -> None:
    started_game(server, f"DEADLINE 24 GRACE 6 LANGUAGE {language}")
    clock.advance(hours=24, minutes=1)
    server.referee.resolve_due()
    said(subjects(server, PLAYERS[2])[-1], language, "grace")
    said(last_text(server, PLAYERS[2]), language, "grace text")


# --- a referee's notice, in the referee's language -----------------------------------------

@pytest.mark.parametrize("language", LANGUAGES)
def test_a_missed_turn_is_told_in_the_referees_language(tmp_path: Path, clock: Clock,
                                                        language: str) -> None:
    server = make_server(tmp_path, clock, referee_language=language)
    started_game(server, "DEADLINE 24 MISSED 1")
    clock.advance(hours=24, minutes=1)
    server.referee.resolve_due()
    told = [m for m in outbox(server, REFEREE) if "[bluff g1]" in str(m["Subject"])]
    assert len(told) == len(PLAYERS)
    said(str(told[0]["Subject"]), language, "missed")
    said(text_of(told[0]), language, "missed text")
    assert "sent no order" in last_text(server, PLAYERS[0])   # the players' game: English


# --- the mail reading's notes --------------------------------------------------------------

def attachment_only(sender: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, SERVER, "orders"
    msg["Message-ID"] = "<attached-1@client.example>"
    msg.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf",
                       filename="plan.pdf")
    return msg.as_bytes(policy=policy.SMTP)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_notes_of_the_mail_reading_in_the_readers_language(server: Server,
                                                               language: str) -> None:
    started_game(server, f"LANGUAGE {language}")
    deliver(server, attachment_only(PLAYERS[0]))
    refused(server, PLAYERS[0], language, "attachments")
    text = order(server, PLAYERS[1], "BID 1 one", "-- ", "Bob")
    assert WORDS[language]["signature"][0] in text
