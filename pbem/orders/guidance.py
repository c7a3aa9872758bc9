"""What an answer shows of the order language: HELP's lines (each command's usage and
summary, in the reader's words), and for a mail without an order the lines that came
nearest to one.

Pure: imports only the order language (pbem.orders.commands, .parsing) and its words.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from functools import lru_cache
from typing import TypedDict

from pbem.orders.commands import Command, TextLine
from pbem.orders.parsing import BULLET, END_PUNCTUATION
from pbem.orders.reading import strip_courtesy, words_of
from pbem.orders.words import folded, spelled, spellings_of
from pbem.text.wording import Said, _


def closeness(line: str, commands: Sequence[Command]) -> float:
    """How much a line looks like an order, 0..1: the best likeness of one of its first
    words to an order word of any language (1.0 when it names one), a little less when the
    order word comes later in the line ("I challenge you"); a greeting ("Hallo zusammen,")
    or a thank-you is no order at all (0)."""
    clauses, _asks = words_of(line)
    if all(not strip_courtesy(c) for c in clauses):
        return 0.0
    words = [folded(w).strip(END_PUNCTUATION + ",;?()'\"") for w in
             BULLET.sub("", line).split()[:12]]
    names = _first_words(tuple(commands))
    best = 0.0
    for at, word in enumerate(w for w in words if w):
        for name in names:
            ratio = difflib.SequenceMatcher(None, word, name).ratio()
            best = max(best, ratio * (1.0 if at == 0 else 0.9))
    return best


@lru_cache(maxsize=32)
def _first_words(commands: tuple[Command, ...]) -> frozenset[str]:
    """The first word of every order word of the commands, in every language, folded."""
    return frozenset(form.split()[0] for c in commands
                     for s in (*c.spellings, *(w for _lang, w in spellings_of(c.name)))
                     for form in spelled(s))


def closest_lines(lines: Sequence[TextLine], commands: Sequence[Command],
                  most: int = 3) -> list[TextLine]:
    """The lines of a mail that looked most like an order, best first (at most ``most``),
    for an answer that found no order: the player sees what was read and what came near."""
    # among lines equally near (prose: none near at all), the longest says the most
    scored = sorted(((closeness(line.text, commands), -len(line.text.strip()), i)
                     for i, line in enumerate(lines) if line.text.strip()),
                    key=lambda item: (-item[0], item[1], item[2]))
    return [lines[i] for _near, _length, i in scored[:most]]


class HelpLine(TypedDict):
    usage: str                        # English, with the reader's own words (for the shell)
    written: Said                     # the same, said in the reader's language
    summary: Said


def help_lines(commands: Sequence[Command], language: str = "en") -> list[HelpLine]:
    """HELP's lines: each command's usage and summary, its other English spellings, and
    the words of the reader's language (pbem.orders.words) where it has its own: ``usage``
    with them (English, for the shell), ``written`` with them said in the reader's
    language, ``summary`` (said there too)."""
    lines: list[HelpLine] = []
    for c in commands:
        own = [w for lang, w in spellings_of(c.name) if lang == language]
        also = ", ".join([*own, *c.aliases])
        written: Said = (_("{usage}  (also {words})", usage=c.usage, words=also) if also
                         else c.usage)
        lines.append({"usage": str(written), "written": written, "summary": c.summary})
    return lines
