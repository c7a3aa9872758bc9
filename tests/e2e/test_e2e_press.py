"""Private press over the real mail stack (Dovecot in, SMTP out): a player replies to
their report with an order, a word for the table and a private word in one mail, in
English and in German (AN ALLE with SAY TO). The private word reaches its one player and
the referee; no other player's mailbox has it, not as a relay nor in the next report.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from pbem.demo.robot_client import client_order_lines
from testkit.e2e import Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
# how a report marks a word said to its reader only, in each language
TO_YOU_ONLY = {"en": "to you only", "de": "nur an dich", "cs": "jen pro vás"}
NAMES = {"p1": "Ann", "p2": "Ben", "p3": "Dan", "p4": "Tereza", "p5": "Greta"}


@pytest.fixture
def table(mailstack: Any, tmp_path: Path) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS) as made:
        yield made


def mailbox_texts(mails: list[EmailMessage]) -> str:
    return "\n".join(" ".join(text_of(m).split()) for m in mails)


@pytest.mark.parametrize(("language", "table_word", "private_to"), [
    ("en", "SAY Good luck!", "SAY TO {seat} Tereza, let's gang up on Dan."),
    ("de", "AN ALLE Good luck!", "SAY TO Tereza let's gang up on Dan."),
    ("cs", "VŠEM Good luck!", "VZKAZ TO {seat} Tereza, let's gang up on Dan."),
])
def test_a_private_word_beside_a_public_one_stays_private(
        table: Table, language: str, table_word: str, private_to: str) -> None:
    game = f"press-{language}"
    table.referee_sends(f"NEWGAME {game} SEED 5 PRESS private LANGUAGE {language}",
                        *(f"ADD {game} {table.stack.address(u)} {NAMES[u]}" for u in PLAYERS),
                        f"START {game}")
    table.server.tick()
    seat_of = table.first_reports_in()
    table.referee.new_mail()
    speaker, tereza = "p1", "p4"
    msg, view = table.latest[speaker]
    orders = client_order_lines(view, random.Random(3))
    table.reply(speaker, [*orders, table_word,
                          private_to.format(seat=seat_of[tereza])], msg)
    table.server.tick()
    got = {u: c.new_mail() for u, c in table.clients.items()}
    referee = mailbox_texts(table.referee.new_mail())
    assert "gang up on Dan" in mailbox_texts(got[tereza])
    assert "gang up on Dan" in referee
    answer = mailbox_texts(got[speaker])
    assert "gang up on Dan" in answer and "Good luck!" in answer
    for user in set(PLAYERS) - {speaker, tereza}:
        texts = mailbox_texts(got[user])
        assert "Good luck!" in texts, user                 # the table's word reached them
        assert "gang up" not in texts, (user, texts)
    # the next reports: the private word only in the speaker's and Tereza's
    table.referee_sends(f"PROCESS {game}")
    table.server.tick()
    table.server.tick()
    got = {u: c.new_mail() for u, c in table.clients.items()}
    for user in PLAYERS:
        texts = mailbox_texts(got[user])
        assert "Good luck!" in texts, user
        assert ("gang up on Dan" in texts) == (user in (speaker, tereza)), (user, texts)
    assert TO_YOU_ONLY[language] in mailbox_texts(got[tereza])   # said in their language
