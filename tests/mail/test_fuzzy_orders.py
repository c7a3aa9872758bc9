"""The "did you mean" of pbem.orders.parsing: offered for a line whose first word is an order word
mistyped (a letter lost, added or two swapped), never for a word of its own (DID, HEY,
SENT) and never because of digits elsewhere in the line."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from pbem.commands.registry import player_commands
from pbem.mail.text import BodyLine
from pbem.orders.parsing import parse_text
from pbem.orders.phrases import COURTESY
from pbem.orders.typos import mistyped
from pbem.orders.words import folded

COMMANDS = player_commands()
NAMES = sorted({c.name for c in COMMANDS})
WORDS = {word for c in COMMANDS for s in c.spellings for word in s.split()}


def problems(line: str) -> int:
    return len(parse_text([BodyLine(1, line)], COMMANDS).problems)


@given(st.sampled_from([n for n in NAMES if len(n) >= 3]), st.data())
def test_two_letters_swapped_are_caught(name: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(name) - 2))
    word = name[:i] + name[i + 1] + name[i] + name[i + 2:]
    assume(word not in WORDS)
    assert mistyped(word, NAMES) is not None


@given(st.sampled_from([n for n in NAMES if len(n) >= 4]), st.data())
def test_a_letter_lost_is_caught(name: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(name) - 1))
    word = name[:i] + name[i + 1:]
    assume(word not in WORDS)
    assert mistyped(word, NAMES) is not None


@given(st.sampled_from(["Sent", "Did", "Hey", "Sat", "Bud", "Joined", "Listen", "Keep",
                        "Get", "Hi", "Regards", "Thanks", "Cheers", "Deadline?"]),
       st.lists(st.sampled_from(["3", "12:00", "2621", "fives", "<http://x.y/r?b=2621>",
                                 "from", "my", "iPhone"]), max_size=5))
def test_prose_is_prose_whatever_digits_follow(first: str, rest: list[str]) -> None:
    """Digits never make a line of prose an order or a typo. One case is a doubt: a
    question ends the first word ("Deadline?") and what follows is an order by itself
    ("3 fives"); that is never acted on, and the answer offers the order back. A greeting
    or a thanks is no prose: "Hi 3 fives" is read as "3 fives" is, as "Hallo, drei
    Fünfer" is (pbem.orders.reading)."""
    found = parse_text([BodyLine(1, " ".join([first, *rest]))], COMMANDS)
    alone = parse_text([BodyLine(1, " ".join(rest))], COMMANDS)
    if (folded(first),) in COURTESY and alone.orders:
        assert [o.read_as for o in found.orders] == [o.read_as for o in alone.orders]
        assert [p.message for p in found.problems] == [p.message for p in alone.problems]
        return
    assert found.orders == []
    if first.endswith("?") and alone.orders and not alone.problems:
        assert [p.message.source for p in found.problems] == [
            "this line asks: I act on no question"]
        assert found.problems[0].hint is not None
    else:
        assert found.problems == []


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9),
       st.lists(st.sampled_from(["3", "4", "twos", "12:00", "x"]), min_size=1, max_size=4),
       st.lists(st.sampled_from(["very", "good", "luck", "all"]), min_size=1, max_size=4))
def test_only_the_first_word_decides(first: str, digits: list[str], words: list[str]) -> None:
    assume(first.upper() not in WORDS)
    assert problems(" ".join([first, *digits])) == problems(" ".join([first, *words]))
