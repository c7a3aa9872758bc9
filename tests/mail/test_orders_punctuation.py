"""Orders as people write them: "Challenge!", "Cups up!", "BID 3 fives." are orders; and
when a mail has no order, the lines that came closest are the ones to quote."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.commands.registry import player_commands
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.guidance import closeness, closest_lines
from pbem.orders.parsing import parse_text
from pbem.rules.dice import STAR
from pbem.rules.ladder import Bid

BLUFF = player_commands(KINDS["postal"])   # the bid orders and every line of a player mail
CUP = KINDS["cup"].commands
MOVES = KINDS["classic"].commands   # what an answer that found no move compares lines with


def read(text: str, commands=BLUFF):  # type: ignore[no-untyped-def]
    return parse_text([BodyLine(i, t) for i, t in enumerate(text.splitlines(), 1)], commands)


@pytest.mark.parametrize(("line", "name", "args"), [
    ("Challenge!", "CHALLENGE", None),
    ("challenge.", "CHALLENGE", None),
    ("CHALLENGE!!!", "CHALLENGE", None),
    ("Challenge !", "CHALLENGE", None),
    ("Cups up!", "CHALLENGE", None),
    ("Liar!", "CHALLENGE", None),
    ("BID 3 fives.", "BID", Bid(3, 5)),
    ("Bid 3 fives!", "BID", Bid(3, 5)),
    ("bid 4 stars.", "BID", Bid(4, STAR)),
    ("EXPOSE 3 3.", "EXPOSE", (3, 3)),
    ("- Challenge!", "CHALLENGE", None),
])
def test_an_order_word_may_end_with_punctuation(line: str, name: str, args: object) -> None:
    parsed = read(line)
    assert parsed.problems == [] and parsed.prose == []
    (order,) = parsed.orders
    assert order.name == name and order.args == args
    assert order.line == line          # the line is quoted as the player wrote it


@pytest.mark.parametrize(("line", "name"), [
    ("OK!", "OK"), ("Ok.", "OK"), ("Bluff!", "BLUFF"), ("Bluff you!", "BLUFF"),
    ("ANNOUNCE 12 TO 3.", "ANNOUNCE"), ("Steal 15 from 2!", "STEAL"), ("GIVE 9.", "GIVE"),
])
def test_cup_orders_may_end_with_punctuation(line: str, name: str) -> None:
    parsed = read(line, CUP)
    assert parsed.problems == [] and [o.name for o in parsed.orders] == [name]


def test_punctuation_is_no_licence_for_words_after_an_order() -> None:
    parsed = read("Challenge! Or four fives.")
    assert parsed.orders == []
    (problem,) = parsed.problems
    assert problem.line == "Challenge! Or four fives." and "more than one order" in str(
        problem.message)
    parsed = read("Challenge! Your turn, Finn.")
    assert parsed.orders == []
    (problem,) = parsed.problems
    assert "more than an order" in str(problem.message) and "CHALLENGE" in str(problem.hint)
    parsed = read("Challenge you bluffer")
    assert parsed.orders == []
    (problem,) = parsed.problems
    assert "nothing after it" in str(problem.message)


def test_addresses_and_dates_keep_their_inner_dots() -> None:
    parsed = read("BID 3 fives.\nCHALLENGE.")
    assert [o.name for o in parsed.orders] == ["BID", "CHALLENGE"]


@given(st.sampled_from([s for c in BLUFF + CUP for s in c.spellings if c.name in
                        ("CHALLENGE", "OK", "BLUFF", "STATUS", "HELP")]),
       st.text(alphabet="!.", min_size=1, max_size=4), st.booleans())
def test_trailing_punctuation_never_changes_the_order(spelling: str, tail: str,
                                                      lower: bool) -> None:
    commands = CUP if spelling.rstrip("!") in ("OK", "OKAY", "BLUFF", "BLUFF YOU") else BLUFF
    written = (spelling.lower() if lower else spelling)
    plain, punctuated = read(written, commands), read(written + tail, commands)
    assert [o.name for o in punctuated.orders] == [o.name for o in plain.orders]
    assert [o.args for o in punctuated.orders] == [o.args for o in plain.orders]
    assert punctuated.problems == plain.problems == []


@given(st.integers(1, 30), st.sampled_from(["1", "2", "3", "4", "5", "ones", "twos", "threes",
                                            "fours", "fives", "stars", "*"]),
       st.text(alphabet="!.", max_size=3))
def test_a_bid_reads_the_same_with_a_full_stop(quantity: int, face: str, tail: str) -> None:
    plain, punctuated = read(f"BID {quantity} {face}"), read(f"BID {quantity} {face}{tail}")
    assert [o.args for o in punctuated.orders] == [o.args for o in plain.orders] != []


# --- the lines that came closest ----------------------------------------------------------


def lines(*texts: str) -> list[BodyLine]:
    return [BodyLine(i, t) for i, t in enumerate(texts, 1)]


def test_the_closest_lines_are_the_ones_that_look_like_orders() -> None:
    mail = lines("Hi Bob,", "I think I will chalenge this time", "thanks for the game",
                 "Cheers", "Bidd 3 fives please")
    best = closest_lines(mail, MOVES, most=2)
    assert [b.number for b in best] == [5, 2]


def test_closest_lines_from_an_html_only_mail_quote_the_line_as_read() -> None:
    mail = lines("Dear referee", "Cupz up?")
    assert [b.text for b in closest_lines(mail, MOVES, most=1)] == ["Cupz up?"]


@given(st.lists(st.text(max_size=40), max_size=12), st.integers(0, 5))
def test_closest_lines_are_a_ranked_subset(texts: list[str], most: int) -> None:
    mail = lines(*texts)
    best = closest_lines(mail, BLUFF, most)
    assert len(best) <= most
    assert all(b in mail and b.text.strip() for b in best)
    scores = [closeness(b.text, BLUFF) for b in best]
    assert scores == sorted(scores, reverse=True)
    left = [closeness(line.text, BLUFF) for line in mail if line not in best and line.text.strip()]
    assert not scores or not left or min(scores) >= max(left)


@given(st.sampled_from([c.name for c in BLUFF]), st.text(alphabet="abcdefgh ", max_size=20))
def test_a_line_naming_an_order_is_as_close_as_it_gets(name: str, rest: str) -> None:
    assert closeness(f"{name.lower()} {rest}", BLUFF) == 1.0
    assert 0.0 <= closeness(rest, BLUFF) <= 1.0
