"""LANGUAGE and NEWGAME ... LANGUAGE: the language a player reads; HELP lists the order
words of that language beside the English ones (pbem.orders.words). Through the real
handling path on SQLite."""

from __future__ import annotations

from sqlmodel import Session, select

from pbem.runner.server import Server
from pbem.store.models import Player
from testkit.desk import PLAYERS, admin, new_game, order, outbox

ANN, BOB = PLAYERS[0], PLAYERS[1]


def languages(server: Server, email: str) -> list[str | None]:
    with Session(server.engine) as session:
        return [p.language for p in session.exec(select(Player).where(Player.email == email))]


def test_language_sets_the_words_help_lists(server: Server) -> None:
    new_game(server, "", "g1")
    new_game(server, "", "g2", players=[ANN])
    admin(server, "START g1")
    # the answer is in the new language already (issue 33)
    assert "Deine Sprache ist jetzt Deutsch" in order(server, ANN, "LANGUAGE deutsch")
    assert languages(server, ANN) == ["de", "de"] and languages(server, BOB) == [None]
    german = order(server, ANN, "HELP")
    assert "(auch BIETE, GEBOT, BIETEN)" in german
    assert "(auch HOCH DIE BECHER, ANZWEIFELN, ZWEIFLE, CUPS UP, LIAR)" in german
    assert "NEVĚŘIT" not in german                    # no Czech words for a German reader
    english = order(server, BOB, "HELP")
    assert "GEBOT" not in english and "(also CUPS UP, LIAR)" in english
    assert "Váš jazyk je nyní čeština" in order(server, ANN, "LANGUAGE cestina")
    assert "(také NEVĚŘÍM, NEVĚŘIT, CUPS UP, LIAR)" in order(server, ANN, "HELP")


def test_help_attaches_the_rules_in_the_readers_language(server: Server) -> None:
    new_game(server, "", "g1")
    admin(server, "START g1")
    order(server, ANN, "LANGUAGE cs")
    order(server, ANN, "NÁPOVĚDA")
    (rules,) = [part for part in outbox(server, ANN)[-1].iter_attachments()]
    assert rules.get_filename() == "rules.cs.md"
    assert "Nevěřím!" in rules.get_content()
    order(server, BOB, "HELP")
    (rules,) = [part for part in outbox(server, BOB)[-1].iter_attachments()]
    assert rules.get_filename() == "rules.md"


def test_a_game_language_holds_for_players_without_their_own(server: Server) -> None:
    new_game(server, "LANGUAGE cs", "g1")
    admin(server, "START g1")
    assert "(také SÁZKA, SÁZÍM, VSADIT)" in order(server, BOB, "HELP")


def test_an_unknown_language_is_refused_quoting_the_line(server: Server) -> None:
    new_game(server, "", "g1")
    admin(server, "START g1")
    answer = order(server, ANN, "LANGUAGE klingon")
    assert "LANGUAGE takes en, de or cs" in answer and "LANGUAGE klingon" in answer
    assert languages(server, ANN) == [None]
