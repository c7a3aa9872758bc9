"""Where a reply quotes a mail we sent: the line at which our own words begin.

A reply to a report (or any mail of ours) often carries a copy of it, under a quote header
in the client's language, ``>``-quoted or not, re-wrapped, rendered from HTML. Whatever the
header says, our text is known: the first words of it, found in order in the reply, mark
the start of the quote. The quote header just above them (an attribution line, a
From/Sent/To block, a separator) goes with it.

Pure and total; the cost is bounded by the caps below whatever the mail holds.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from pbem.mail.newtext import QUOTED, NewText, new_text

__all__ = ["quote_span", "quote_start", "quoted_run_end", "reply_text", "words_of"]

PROBE_WORDS = 12       # words of our mail looked for in the reply, in order
MISSES_ALLOWED = 1     # of those, how many may be missing or changed (a charset lost ...)
SKIP_WORDS = 2         # words of the reply that may come between two of them
MAX_REPLY_LINES = 3000  # lines of a reply looked at
MAX_LINE_CHARS = 1000  # characters of a reply line looked at
MAX_REPLY_WORDS = 30000  # words of a reply looked at
MAX_KNOWN_CHARS = 4000   # characters of our mail read for its first words
PROBE_CHARS = 600        # read before that: they hold the first words of any mail of ours
# read first: a report's title and first lines hold its first words, before its dice
# pictures (past ASCII: taken apart character by character, pbem.mail.quotecut.words_of)
PROBE_FIRST_CHARS = 200
HEADER_LINES = 8       # lines above the quote that may be its header

_WORD = re.compile(r"[^\W_]+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_TIME = re.compile(r"\d{1,2}[:.]\d{2}")
_YEAR = re.compile(r"(?<!\d)(19|20)\d\d(?!\d)")
_ADDRESS = re.compile(r"\S@\S")
_BARE_ADDRESS = re.compile(r"^[<\[]?(mailto:)?[^\s@<>]+@[^\s<>]+[>\]]?$")
_SEPARATOR = re.compile(r"^[-_=*~—–\s]{3,}$|^-{2,}.*-{2,}$")
# the last line of a wrapped attribution: it begins inside the address or at the colon
_CONTINUED = re.compile(r"^([<(:：]|[^\s@<>]+@)")
_LABEL_VALUE = re.compile(r"^\*?[^\W\d_][^\W\d]{0,24}(\s[^\W\d]{1,12})?\s?\*?\s?[:：]\*?(\s|$)")


def words_of(text: str) -> list[str]:
    """The words of ``text`` as compared: letters and digits, lower case, accents off
    (a charset lost on the way turns "é" into "e" or into nothing, never into "é")."""
    folded = text.casefold()
    if folded.isascii():   # nothing to take apart or off (most lines, the English mail)
        return _WORD.findall(folded)
    folded = unicodedata.normalize("NFKD", folded)
    # only a character past ASCII can be a combining mark: the runs of those are looked at
    # one by one, the rest (most of a mail of ours: its tables, its words) is left to C
    return _WORD.findall(_NON_ASCII.sub(_without_marks, folded))


def _without_marks(run: re.Match[str]) -> str:
    return "".join(ch for ch in run.group() if not unicodedata.combining(ch))


def _probe(known: str) -> list[str]:
    """The first PROBE_WORDS words of our mail (its first few hundred characters hold them
    but in a mail of mostly punctuation): those of its first MAX_KNOWN_CHARS characters,
    read from a shorter start while that has them all. A word is one of its characters'
    (words_of reads each alone), so a start with one word more than needed has them (the
    last word read may be cut)."""
    for chars in (PROBE_FIRST_CHARS, PROBE_CHARS, MAX_KNOWN_CHARS):
        words = words_of(known[:chars])
        if len(words) > PROBE_WORDS or chars >= len(known):
            break
    return words[:PROBE_WORDS]


def _found_at(words: Sequence[str], at: int, probe: Sequence[str]) -> bool:
    """Do the probe's words begin at ``words[at]`` (its first word, or its second with the
    first lost) and follow in order, a few missing at most?"""
    if words[at] == probe[0]:
        missed, rest = 0, probe[1:]
    elif words[at] == probe[1] and at + 1 < len(words) and words[at + 1] == probe[2]:
        missed, rest = 1, probe[2:]
    else:
        return False
    pos = at + 1
    for wanted in rest:
        hit = next((k for k in range(pos, min(len(words), pos + SKIP_WORDS + 1))
                    if words[k] == wanted), None)
        if hit is None:
            missed += 1
            if missed > MISSES_ALLOWED:
                return False
            continue
        pos = hit + 1
    return True


def _match_line(lines: Sequence[str], probes: Sequence[Sequence[str]]) -> int | None:
    """The line at which the earliest of the probes is found. The reply's words are read
    as the scan goes, a probe's reach ahead of it: a quote begins near the top, and the
    copy of a report below it is long (every reply quotes one: bench/scale.py)."""
    usable = [p for p in probes if len(p) >= PROBE_WORDS // 2]   # else too little to tell
    if not usable:
        return None
    reach = PROBE_WORDS * (SKIP_WORDS + 1) + 2
    words: list[str] = []
    line_of: list[int] = []
    rest = iter(enumerate(lines[:MAX_REPLY_LINES]))
    at = 0
    while True:
        while len(words) < at + reach and len(words) < MAX_REPLY_WORDS:
            nxt = next(rest, None)
            if nxt is None:
                break
            i, line = nxt
            found = words_of(line[:MAX_LINE_CHARS])
            words.extend(found)
            line_of.extend([i] * len(found))
        if at >= len(words):
            return None
        # the quote begins with our first or second word (the first may be changed or lost)
        word = words[at]
        if any(word in (p[0], p[1]) and _found_at(words, at, p) for p in usable):
            return line_of[at]
        at += 1


def _plain(line: str) -> str:
    return line.lstrip().lstrip(">").strip().lstrip(">").strip()


def _is_header_line(line: str) -> bool:
    """A line of a quote header: a separator, an attribution's last line ("... wrote:",
    "... <a@b>:") or a From:/Sent:/To: line."""
    text = _plain(line)
    if _SEPARATOR.match(text) or _BARE_ADDRESS.match(text):   # an address: a From wrapped
        return True
    if text.endswith((":", "：")):
        return (text == ":" or _ADDRESS.search(text) is not None or _TIME.search(text) is not None
                or _YEAR.search(text) is not None or len(text.split()) >= 4)
    return _LABEL_VALUE.match(text) is not None


def _is_attribution_start(line: str) -> bool:
    """The first line of an attribution wrapped over two or three: a date, a time or an
    address, or it breaks inside one ("John Coe <", "John (")."""
    text = _plain(line)
    return (_TIME.search(text) is not None or _YEAR.search(text) is not None
            or _ADDRESS.search(text) is not None or text.endswith(("<", "(")))


def _header_start(lines: Sequence[str], quote: int) -> int:
    """The first line of the quote header above line ``quote`` (``quote`` if none)."""
    block: list[int] = []   # the header's lines, from the bottom up
    i = quote - 1
    while i >= 0 and quote - i <= HEADER_LINES:
        text = _plain(lines[i])
        if text:
            if not _is_header_line(lines[i]):
                break
            block.append(i)
            if _SEPARATOR.match(text):   # a separator line tops the header
                break
        i -= 1
    labels = [k for k in block if not _SEPARATOR.match(_plain(lines[k]))
              and not _plain(lines[k]).endswith((":", "："))]
    # a From/Sent/To block has two lines or more, and an address or a date; "Note: ..."
    # lines are the player's
    if labels and not (len(labels) >= 2 and any(_is_attribution_start(lines[k])
                                                 for k in labels)):
        block = block[:block.index(labels[0])]
    start = block[-1] if block else quote
    # an attribution wrapped above its last line ("pe 20. lokakuuta 2017 klo 17.50 John" /
    # "<j@x> kirjoitti:")
    if start < quote and _CONTINUED.match(_plain(lines[start])):
        above = start - 1
        if above >= 0 and _plain(lines[above]) and _is_attribution_start(lines[above]):
            start = above
    return start


def quote_span(lines: Sequence[str], known: Sequence[str]) -> tuple[int, int] | None:
    """Where in ``lines`` (a reply's text) a quote of one of the ``known`` texts (a mail we
    sent, as text and as its HTML rendered) stands: the index of its first line, its quote
    header included, and of the first line after it; None when none of them is quoted.
    A ``>``-quoted copy ends with its ``>`` lines (what follows is the player's again: a
    bottom post); an unquoted one runs to the end. Never raises."""
    try:
        probes = [p for p in (_probe(k) for k in known if isinstance(k, str)) if p]
        if not probes:
            return None
        found = _match_line(lines, probes)
        if found is None:
            return None
        end = len(lines)
        if QUOTED.match(lines[found]):
            end = quoted_run_end(lines, found)
        return _header_start(lines, found), end
    except Exception:
        return None


def quoted_run_end(lines: Sequence[str], start: int) -> int:
    """The index of the first line from ``start`` on that is neither ``>``-quoted
    (``QUOTED``, pbem.mail.newtext) nor blank; ``len(lines)`` if none. The whitespace a
    line begins with is what ``QUOTED``'s ``\\s`` matches (str.isspace, both): one strip a
    line, not a regular expression's match (a report quoted is a hundred lines)."""
    end, count = start, len(lines)
    while end < count:
        text = lines[end].lstrip()
        if text and text[0] != ">":
            break
        end += 1
    return end


def quote_start(lines: Sequence[str], known: Sequence[str]) -> int | None:
    """The index of the line of ``lines`` at which a quote of one of the ``known`` texts
    begins, its quote header included; None when none of them is quoted (quote_span)."""
    span = quote_span(lines, known)
    return span[0] if span is not None else None


def reply_text(text: str, known: Iterable[str]) -> NewText | None:
    """The new text of the reply ``text``, cut where it quotes the first of the ``known``
    texts it quotes (a mail we sent: its text, then its HTML rendered); None when it quotes
    none. The next known text is only made (an HTML part rendered) when the reply holds one
    of the first known text's first two words: the parts of a mail of ours begin alike."""
    lines = text.splitlines()
    for number, one in enumerate(known):
        span = quote_span(lines, [one])
        if span is not None:
            return new_text(text, span, lines=lines)
        if number == 0:
            first = _probe(one)[:2]
            held = set(words_of(text[:MAX_REPLY_WORDS * 10]))
            if not any(word in held for word in first):
                return None
    return None
