"""Whole games over the real mail stack (Dovecot in, SMTP out) where every order is
written as people write them: a sentence ("Ich erhöhe auf vier Fünfer.", "Zvyšuji na pět
pětek, díky", "I'll raise to six twos") or a bare bid ("Drei Fünfer!", "3 pětky"), a
challenge as it is said ("Das glaube ich nicht. Hoch die Becher!", "Tomu nevěřím!",
"I don't believe it"), under a greeting -- never an English order word. A postal game in
each of English, German and Czech plays to its end; every order is confirmed with the
player's own line quoted and the order it became.
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

# the faces after a quantity: (one, two to four, five and more)
FACES = {
    "en": {"1": ("one", "ones", "ones"), "2": ("two", "twos", "twos"),
           "3": ("three", "threes", "threes"), "4": ("four", "fours", "fours"),
           "5": ("five", "fives", "fives"), "*": ("star", "stars", "stars")},
    "de": {"1": ("Einser", "Einser", "Einsen"), "2": ("Zweier", "Zweier", "Zweiern"),
           "3": ("Dreier", "Dreien", "Dreier"), "4": ("Vierer", "Vierer", "Vierer"),
           "5": ("Fünfer", "Fuenfer", "Fünfen"), "*": ("Stern", "Sterne", "Sternchen")},
    "cs": {"1": ("jednička", "jedničky", "jedniček"), "2": ("dvojka", "dvojky", "dvojek"),
           "3": ("trojka", "trojky", "trojek"), "4": ("čtyřka", "čtyřky", "čtyřek"),
           "5": ("pětka", "pětky", "pětek"), "*": ("hvězdička", "hvězdičky", "hvězdiček")},
}
NUMBERS = {
    "en": "one two three four five six seven eight nine ten eleven twelve".split(),
    "de": "einen zwei drei vier fünf sechs sieben acht neun zehn elf zwölf".split(),
    "cs": "jedna dvě tři čtyři pět šest sedm osm devět deset jedenáct dvanáct".split(),
}
# how a bid is said ({bid}: a quantity and a face); the bare ones only from 2 on
BIDS = {
    "en": ["I bid {bid}.", "I'll raise to {bid}", "My bid: {bid}", "I'll say {bid}, thanks",
           "{bid}!", "Hi all, {bid}. Good luck!"],
    "de": ["Ich biete {bid}.", "Ich erhöhe auf {bid}", "Ich setze auf {bid}, danke",
           "Mein Gebot: {bid}", "{bid}!", "Hallo zusammen, ich biete {bid}. Viele Grüße"],
    "cs": ["Sázím {bid}.", "Zvyšuji na {bid}, díky", "Vsadím se o {bid}", "Nabízím {bid}",
           "{bid}!", "Ahoj, sázím {bid}. S pozdravem"],
}
CHALLENGES = {
    "en": ["You liar!", "I don't believe it", "I call!", "I don't believe it, cups up!"],
    "de": ["Das glaube ich nicht. Hoch die Becher!", "Becher hoch!", "Ich zweifle das an.",
           "Hallo, das glaube ich nicht!"],
    "cs": ["Tomu nevěřím!", "Nevěřím, ukažte kostky!", "Přijímám sázku", "Ahoj, nevěřím!"],
}
# the order word a confirmation names what was read with
READ_AS = {"en": "→ BID", "de": "→ BIETE", "cs": "→ SÁZKA"}
ENGLISH_WORDS = ("BID", "CHALLENGE", "EXPOSE", "CUPS UP", "LIAR")


def bid_said(quantity: int, face: str, language: str, rng: random.Random) -> str:
    form = 0 if quantity == 1 else 1 if quantity <= 4 else 2
    count = (NUMBERS[language][quantity - 1] if quantity <= 12 and rng.random() < 0.5
             else str(quantity))
    return f"{count} {FACES[language][face][form]}"


def spoken(lines: list[str], language: str, rng: random.Random) -> list[str]:
    """The robot's order lines as a player says them (its EXPOSE left out: a bid alone
    is a whole move)."""
    out = []
    for line in lines:
        word, *rest = line.split()
        if word == "BID":
            quantity, face = int(rest[0]), rest[1]
            forms = BIDS[language] if quantity > 1 else BIDS[language][:4]   # "1 five" asks
            out.append(rng.choice(forms).format(bid=bid_said(quantity, face, language, rng)))
        elif word == "CHALLENGE":
            out.append(rng.choice(CHALLENGES[language]))
    return out


@pytest.fixture
def table(mailstack: Any, tmp_path: Path, database: str) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS, database=database) as made:
        yield made


@pytest.mark.parametrize("language", ["en", "de", "cs"])
def test_a_whole_game_of_orders_as_people_write_them(table: Table, language: str) -> None:
    game = f"spoken-{language}"
    table.referee_sends(*table.setup(game, f"NEWGAME {game} SEED 20261206 "
                                           f"LANGUAGE {language}"))
    table.server.tick()
    table.first_reports_in()
    rng = random.Random(11)
    sent: list[str] = []
    for _turn, _views in table.turns(limit=80):
        for user, (msg, view) in sorted(table.latest.items()):
            lines = spoken(client_order_lines(view, rng), language, rng)
            if lines:
                assert not any(line.upper().startswith(ENGLISH_WORDS) for line in lines)
                sent += lines
                table.reply(user, lines, msg)
    table.check_the_mail(refusals=0)
    answers: list[EmailMessage] = [a for user in PLAYERS for a in table.answers[user]
                                   if a["In-Reply-To"] is not None]
    assert len(answers) == len(sent) > 20
    texts = [text_of(a) for a in answers]
    # every answer confirms: the player's line quoted, and what it was read as
    assert all("→" in text for text in texts), [t for t in texts if "→" not in t][:1]
    assert any(READ_AS[language] in text for text in texts)
    quote = "“" if language == "en" else "„"
    assert all(quote in text for text in texts)
