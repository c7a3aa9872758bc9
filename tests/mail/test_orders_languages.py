"""Orders in German and Czech (pbem.orders.words): the words of the games' own rule texts,
any case, accents optional, number words; the English words keep working. Examples and
properties: an English order and its German or Czech wording read as the same order."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.commands.registry import player_commands
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.parsing import parse_text
from pbem.orders.words import FACE_WORDS, NUMBER_WORDS, ORDER_WORDS, STAR_FACE
from pbem.rules.dice import STAR
from pbem.rules.ladder import Bid

BLUFF = player_commands(KINDS["postal"])


def read(text: str):  # type: ignore[no-untyped-def]
    return parse_text([BodyLine(i, t) for i, t in enumerate(text.splitlines(), 1)], BLUFF)


def plain(word: str) -> str:
    """The word as a keyboard without accents writes it."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", word)
                   if not unicodedata.combining(ch))


@pytest.mark.parametrize(("line", "name", "args"), [
    ("BIETE 3 Fünfer", "BID", Bid(3, 5)),
    ("Gebot 3 5", "BID", Bid(3, 5)),
    ("biete drei funfer", "BID", Bid(3, 5)),
    ("GEBOT zwölf Sternchen", "BID", Bid(12, STAR)),
    ("Hoch die Becher!", "CHALLENGE", None),
    ("ANZWEIFELN", "CHALLENGE", None),
    ("ZEIGE 3 3 Stern", "EXPOSE", (3, 3, STAR)),
    ("SÁZKA 3 pětky", "BID", Bid(3, 5)),
    ("sazka tri petky", "BID", Bid(3, 5)),
    ("Sázka dvě hvězdičky", "BID", Bid(2, STAR)),
    ("NEVĚŘÍM", "CHALLENGE", None),
    ("neverim!", "CHALLENGE", None),
    ("UKÁZAT 4 čtyřky", "EXPOSE", (4, 4)),
    ("BID 6 threes", "BID", Bid(6, 3)),          # English always works
    ("Cups up!", "CHALLENGE", None),
])
def test_german_and_czech_orders_read_as_their_english_twins(line: str, name: str,
                                                            args: object) -> None:
    parsed = read(line)
    assert parsed.problems == [] and parsed.prose == [], (line, parsed)
    (order,) = parsed.orders
    assert order.name == name and order.args == args


@pytest.mark.parametrize("line", ["Stand der Dinge: ich bin dabei", "Zweifel habe ich keine",
                                  "Stav hry je dobrý", "Danke und viel Glück!"])
def test_everyday_sentences_stay_prose(line: str) -> None:
    assert read(line).orders == [] and read(line).problems == []


faces = st.sampled_from([1, 2, 3, 4, 5, STAR])


@given(st.sampled_from(sorted(ORDER_WORDS)), st.integers(1, 20), faces, st.booleans(),
       st.booleans(), st.data())
def test_any_bid_in_any_language_is_the_same_bid(lang: str, quantity: int, face: object,
                                                 accents: bool, lower: bool,
                                                 data: st.DataObject) -> None:
    order_word = data.draw(st.sampled_from(ORDER_WORDS[lang]["BID"]))
    face_word = data.draw(st.sampled_from(sorted(
        w for w, f in FACE_WORDS[lang].items() if f == (STAR_FACE if face == STAR else face))))
    numbers = sorted(w for w, n in NUMBER_WORDS[lang].items() if n == quantity)
    count = data.draw(st.sampled_from([str(quantity), *numbers]))
    line = f"{order_word} {count} {face_word}"
    line = line if accents else plain(line)
    line = line.lower() if lower else line
    (order,) = read(line).orders
    assert order.name == "BID" and order.args == Bid(quantity, face), line  # type: ignore[arg-type]


@given(st.sampled_from(sorted(ORDER_WORDS)), st.booleans())
def test_every_challenge_word_is_a_challenge(lang: str, accents: bool) -> None:
    for word in ORDER_WORDS[lang]["CHALLENGE"]:
        line = word if accents else plain(word)
        (order,) = read(line.capitalize()).orders
        assert order.name == "CHALLENGE", line
