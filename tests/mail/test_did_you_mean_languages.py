"""The "did you mean" of every language: a mistyped German or Czech order word gets the
nearest order word as an English one does (BITEE: BIETE), never a word of its own
(Zweifel); and a mail without an order names its line closest to one, never a greeting."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pbem.commands.registry import player_commands
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.guidance import closest_lines
from pbem.orders.parsing import parse_text
from pbem.orders.typos import NOT_TYPOS
from pbem.orders.words import ORDER_WORDS, folded

BLUFF = player_commands(KINDS["postal"])
MOVES = KINDS["classic"].commands
ORDER_WORDS_FOLDED = {folded(w) for c in BLUFF for w in c.spellings} | {
    folded(w) for table in ORDER_WORDS.values() for words in table.values() for w in words}


def hint(line: str) -> str:
    (problem,) = parse_text([BodyLine(1, line)], BLUFF).problems
    return str(problem.hint)


@pytest.mark.parametrize(("line", "meant"), [
    ("BITEE 5 Fünfer", "BIETE"), ("BEITE 3 Fünfer", "BIETE"), ("NEVERIN", "NEVĚŘÍM"),
    ("NEVĚŘIM!", None), ("SAZKAA 3 petky", "SÁZKA"), ("ANZWEIFLEN", "ANZWEIFELN"),
    ("BDI 6 3", "BID"),
])
def test_a_mistyped_order_word_gets_its_did_you_mean(line: str, meant: str | None) -> None:
    parsed = parse_text([BodyLine(1, line)], BLUFF)
    if meant is None:     # not a typo at all: the word without its accents is the word
        assert [o.name for o in parsed.orders] == ["CHALLENGE"]
        return
    assert f"did you mean {meant}?" in hint(line)


@pytest.mark.parametrize("line", ["Zweifel habe ich keine", "Zeigt mir das Spiel",
                                  "Hilft das?", "Seznam hráčů je dlouhý"])
def test_a_word_of_its_own_is_no_typo(line: str) -> None:
    parsed = parse_text([BodyLine(1, line)], BLUFF)
    assert parsed.problems == [] and parsed.orders == []


@given(st.sampled_from(sorted({w for table in ORDER_WORDS.values() for name in
                               ("BID", "CHALLENGE", "EXPOSE", "HELP")
                               for w in table[name] if " " not in w and len(w) >= 5})),
       st.data())
def test_two_letters_swapped_in_any_language_are_caught(word: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(word) - 2))
    typo = word[:i] + word[i + 1] + word[i] + word[i + 2:]
    assume(folded(typo) not in ORDER_WORDS_FOLDED | NOT_TYPOS and folded(typo) != folded(word))
    assert "did you mean" in hint(typo)


def test_the_line_named_is_the_closest_to_an_order_never_a_greeting() -> None:
    lines = [BodyLine(1, "Hallo zusammen,"), BodyLine(2, "ich beite drei Dreier"),
             BodyLine(3, "Viele Grüße, Hans")]
    parsed = parse_text(lines, MOVES)
    assert [p.line for p in parsed.problems] == ["ich beite drei Dreier"]
    assert "BIETE 3 Dreier" in str(parsed.problems[0].hint)
    prose = [BodyLine(1, "Ahoj všichni,"), BodyLine(2, "SAZMI tri petky"),
             BodyLine(3, "Díky")]
    assert [line.text for line in closest_lines(prose, MOVES, most=1)] == ["SAZMI tri petky"]
