"""pbem.mail.quotecut: where a reply's quote of our mail begins, whatever its header."""

from __future__ import annotations

import re
import textwrap
import time
import unicodedata
from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.mail.newtext import new_text
from pbem.mail.quotecut import (
    MAX_KNOWN_CHARS,
    MAX_REPLY_LINES,
    PROBE_FIRST_CHARS,
    PROBE_WORDS,
    _probe,
    quote_span,
    quote_start,
    quoted_run_end,
    reply_text,
    words_of,
)

OURS = """BLUFF BY MAIL -- game g1, turn 3
========================================================================
You are player 2 (Bea).
Deadline: 2026-12-05 12:00 UTC

WHAT TO DO NOW
  You move in mini-game 2: raise above 3 fours or CHALLENGE. The lowest raise is 4 ones.
"""
HEADERS = [
    "", "On Fri, 4 Dec 2026 at 12:00, Bluff <bluff@example.org> wrote:",
    "Klingon header nobody knows:", "-----Original Message-----\nFrom: Bluff\nSent: Friday, 4 December 2026\nTo: Bea",
    "pe 4. jouluk. 2026 klo 12.00 Bluff\n<bluff@example.org> kirjoitti:",
    "________________________________\nOd: Bluff\nOdesláno: pátek 4. prosince 2026 12:00\nKomu: Bea\nPředmět: turn 3",
]
NEW = st.lists(st.sampled_from(["BID 4 ones", "CHALLENGE", "Hi all,", "", "Cheers, Bea",
                                "SAY good luck 12:00", "Note: my bid"]), max_size=6)


def quoted(text: str, style: str) -> list[str]:
    lines = text.splitlines()
    if style == "gt":
        return ["> " + line if line else ">" for line in lines]
    if style == "wrapped":
        return [w for line in lines for w in (textwrap.wrap(line, 40) or [""])]
    return lines


@given(NEW, st.sampled_from(HEADERS), st.sampled_from(["plain", "gt", "wrapped"]),
       st.booleans())
def test_the_new_text_is_what_stands_above_our_quoted_mail(
        new: list[str], header: str, style: str, blank: bool) -> None:
    lines = [*new, *([""] if blank else []), *header.splitlines(), *quoted(OURS, style)]
    span = quote_span(lines, [OURS])
    assert span is not None and span[0] <= len(new) + 1
    found = new_text("\n".join(lines), span)
    assert [line.text for line in found.lines] == [x for x in new if x.strip()]


@given(NEW, NEW, st.sampled_from(HEADERS))
def test_below_a_quote_marked_with_gt_the_text_is_new_again(
        above: list[str], below: list[str], header: str) -> None:
    lines = [*above, "", *header.splitlines(), *quoted(OURS, "gt"), *below]
    found = new_text("\n".join(lines), quote_span(lines, [OURS]))
    assert [line.text for line in found.lines] == [x for x in [*above, *below] if x.strip()]


@given(st.lists(st.text(max_size=60), max_size=40))
def test_a_mail_without_our_words_has_no_quote_of_it(lines: list[str]) -> None:
    assert quote_start(lines, [OURS]) is None


@given(st.lists(st.text(max_size=80), max_size=30), st.lists(st.text(max_size=80), max_size=5))
@settings(max_examples=200)
def test_quote_start_is_total(lines: list[str], known: list[str]) -> None:
    cut = quote_start(lines, known)
    assert cut is None or 0 <= cut < max(len(lines), 1)


def test_a_few_changed_words_still_match() -> None:
    changed = OURS.replace("--", "\u2014").replace("(Bea)", "(Béa)").replace("BLUFF", "Bluff")
    lines = ["BID 4 ones", "", "Le 4 déc. 2026, Bluff a écrit :", *quoted(changed, "gt")]
    assert quote_start(lines, [OURS]) == 2


def test_our_first_words_alone_are_not_our_mail() -> None:
    lines = ["BID 4 ones", "bluff by mail is fun", "game g1 turn 3 you are player"]
    assert quote_start(lines, [OURS]) is None


def test_a_hostile_reply_costs_little() -> None:
    lines = ["bluff by mail game g1 turn " * 40] * MAX_REPLY_LINES * 3
    started = time.thread_time()   # CPU: a stalled machine must not fail the test
    assert quote_start(lines, [OURS]) is None
    assert time.thread_time() - started < 2.0


def test_a_reply_without_our_words_never_renders_our_html() -> None:
    rendered: list[str] = []

    def ours() -> Iterator[str]:
        yield OURS
        rendered.append("html")
        yield OURS

    assert reply_text("BID 4 ones\nCheers", ours()) is None
    assert not rendered
    assert reply_text("BID 4 ones\n> Bluff by mail, game", ours()) is None
    assert rendered == ["html"]


@given(st.text(max_size=60))
def test_words_are_compared_case_folded_and_without_accents(text: str) -> None:
    """words_of's ASCII shortcut reads every text as the whole rule does: case folded,
    taken apart (NFKD), combining marks off, then letters and digits."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    assert words_of(text) == re.findall(r"[^\W_]+", plain)
    assert words_of("Ďábel SCHLIEẞT die Tür, 3 Fünfer") == [
        "dabel", "schliesst", "die", "tur", "3", "funfer"]


# pieces of our mails' first lines: words, accents taken apart or whole, die pictures,
# rules, punctuation; a mail of mostly punctuation has its first words late
_PIECES = st.sampled_from(["BLUFF", "by", "mail", "--", " ", "\n", "=" * 72, "Ďábel", "Tu\u0308r",
                           "ẞ", "★ ⚁ ⚄", "(* 2 * 5 1)", "player", "3", "-" * 50, "e\u0301",
                           "\u0301", "ﬁn", "x" * 30, "_", "…"])


@given(st.lists(_PIECES, max_size=400))
def test_our_first_words_are_those_of_its_start_however_much_is_read(pieces: list[str]) -> None:
    """The probe (our mail's first words) reads a short start of our mail first, a longer
    one only when that lacks a word: the words are those of the first MAX_KNOWN_CHARS
    characters all the same (a word is cut only at the end of what is read)."""
    known = "".join(pieces)
    assert _probe(known) == words_of(known[:MAX_KNOWN_CHARS])[:PROBE_WORDS]


def test_a_last_word_cut_where_the_first_read_ends_is_read_whole() -> None:
    words = " ".join(["ab"] * (PROBE_WORDS - 1)) + " "
    known = words + "-" * (PROBE_FIRST_CHARS - 5 - len(words)) + "abcdefghij and more"
    assert _probe(known)[-1] == "abcdefghij"


_LINE = st.text(st.sampled_from([" ", "\t", "\u00a0", "\u2003", "\u3000", "\x1c", "\x85", ">",
                                 "a", "B", "1", "\u0301", "»"]), max_size=8)


@given(st.lists(_LINE, max_size=12), st.integers(0, 12))
def test_a_quoted_run_ends_where_the_quote_mark_says(lines: list[str], start: int) -> None:
    """quoted_run_end reads a line's quote mark as ``^\\s*>`` does, and a blank line as
    one that strips to nothing."""
    end = start
    while end < len(lines) and (re.match(r"^\s*>", lines[end]) or not lines[end].strip()):
        end += 1
    assert quoted_run_end(lines, start) == end
