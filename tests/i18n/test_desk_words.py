"""The German and Czech words of the desk's commands (pbem.orders.words): every word reads
as its command, in any case, with or without accents, and tells the mail's language;
SAY's words are not part of what is said. And the check the answer tests rely on
(english_left) finds English where there is some."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from pbem.commands.registry import player_commands
from pbem.commands.table_talk import say_text
from pbem.mail.text import BodyLine
from pbem.orders.parsing import parse_text
from pbem.orders.words import ORDER_WORDS, words_language
from tests.i18n.test_answers_languages import english_left

COMMANDS = player_commands()
# what each command is written with after its word
ARGS = {"JOIN": "g1 Anna", "CONFIRM": "1a2b3c4d5e", "LEAVE": "g1", "WATCH": "g1",
        "UNWATCH": "g1", "LIST": "", "SAY": "Viel Glück!", "ORDERS": "", "HISTORY": "",
        "ABSENT": "NONE", "DEFAULT": "CHALLENGE", "LANGUAGE": "cs", "TIMEZONE": "UTC",
        "ADDRESS": "ann@example.org", "RECORD": "g1", "HELP": "", "BID": "3 4",
        "CHALLENGE": "", "EXPOSE": "3 3"}
WORDS = sorted((language, name, word) for language, table in ORDER_WORDS.items()
               for name, words in table.items() for word in words)


def plain(word: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", word)
                   if not unicodedata.combining(ch))


@st.composite
def written(draw: st.DrawFn, only: str | None = None) -> tuple[str, str, str]:
    """(language, command, the word as someone types it: any case, accents or not)."""
    language, name, word = draw(st.sampled_from([w for w in WORDS if only in (None, w[1])]))
    if draw(st.booleans()):
        word = plain(word)
    cases = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    return language, name, "".join(c.upper() if up else c.lower()
                                   for c, up in zip(word, cases, strict=True))


def test_every_command_with_words_is_a_command_players_write() -> None:
    assert {name for _l, name, _w in WORDS} <= {c.name for c in COMMANDS}
    assert set(ARGS) >= {name for _l, name, _w in WORDS}


@given(written())
def test_every_word_reads_as_its_command_and_tells_the_language(
        typed: tuple[str, str, str]) -> None:
    language, name, word = typed
    line = f"{word} {ARGS[name]}".strip()
    parsed = parse_text([BodyLine(1, line)], COMMANDS)
    assert parsed.problems == [] and parsed.prose == [], (line, parsed.problems)
    (order,) = parsed.orders
    assert order.name == name and order.language == language
    assert parsed.language == language
    assert words_language([line]) == language


@given(written("SAY"), st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
                          min_size=1, max_size=40).filter(lambda t: t.strip() == t))
def test_say_words_are_not_part_of_what_is_said(typed: tuple[str, str, str],
                                                text: str) -> None:
    word = typed[2]
    assert say_text(f"{word} {text}") == text
    assert say_text(f"- {word}: {text}") == text


def test_an_english_say_keeps_its_text_as_before() -> None:
    assert say_text("SAY: Hello  there ") == "Hello  there"
    assert say_text("say hello") == "hello"
    assert say_text("AN ALLE Hallo") == "Hallo"
    assert say_text("VŠEM ahoj") == "ahoj"


def test_english_left_finds_a_sentence_of_the_catalogue() -> None:
    assert english_left("Your mail: nothing was applied. Fix it.", "de")
    assert english_left("Deine Mail: nichts wurde ausgeführt.", "de") == []
    assert english_left("Zeile 3: I found no order in your mail", "cs")
