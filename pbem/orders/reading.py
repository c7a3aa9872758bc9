"""Orders as people write them: a small grammar a language over the words of a line.

A line that does not open with an order word (pbem.orders.parsing reads those) may still be an
order: a sentence around it ("Ich biete drei Fünfer.", "Zvyšuji na čtyři šestky",
"I'll raise to four sixes"), a bare bid ("Drei Fünfer!", "3 pětky", "3 mal die 5"), a
challenge as people say it ("Becher hoch!", "Tomu nevěřím!", "I don't believe it"), with
greetings and courtesy words around ("Hallo, ..., danke", "Hilfe bitte").

A line is cut into words once (folded: any case, accents optional, ä typed ae) and into
clauses at its punctuation; each clause is matched whole against a few finite phrase
tables (pbem.orders.phrases: sets of word tuples; no backtracking, linear in the line).
The line's reading is:

- ``None``: prose (no clause is an order) -- digits in prose never make an order;
- ``Read``: exactly one order, every other clause a greeting or courtesy word (the same
  order twice, "Das glaube ich nicht. Hoch die Becher!", is one order);
- ``Doubt``: never acted on -- two different orders, a number that may be the quantity
  or the face ("3 5"), a question ("Soll ich drei Fünfer bieten?"), a bid verb with a
  bid that the grammar does not read ("I don't bid three fives"), an order with more
  words around it. The answer quotes the line and offers the readings to write back.

Pure: no I/O; pbem.orders.parsing imports it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pbem.orders.phrases import (
    ACCEPTS,
    AMONG_BIDS,
    BID_VERBS,
    CHALLENGE_LANGUAGE,
    CHALLENGE_WORDS,
    COURTESY,
    FACE_NOUNS,
    HEDGES,
    JOINERS,
    MOST_COURTESY_WORDS,
    MOST_JOINER_WORDS,
    NEGATIONS,
    NUMBERS,
    OPENER_LANGUAGE,
    OR_WORDS,
    PLAIN_NUMBERS,
)
from pbem.orders.typos import one_slip
from pbem.orders.words import STAR_FACE, TENS_WORDS, folded

MAX_READ_CHARS = 300   # a longer line is no spoken order: only an order word opens it
MAX_CLAUSE_WORDS = 12  # a longer clause is prose
MAX_CLAUSES = 6        # a line of more clauses is prose (an order and its greetings: fewer)
MAX_READINGS = 3       # the readings a doubt offers back, at most
_TOKEN = re.compile(r"\d+(?:[:.,/]\d+)+|[^\W_]+(?:['\u2019\-][^\W_]+)*|[*\u2605]|[.!?;,:\u2026\-\u2013\u2014]|\S")
_BREAKS = frozenset(".!?;,:\u2026-\u2013\u2014")
_DIGIT_FACE = re.compile(r"^([1-6])(?:S|'S|ER|ERN|EN|KY|KA|EK|KU)$")


@dataclass(frozen=True)
class Reading:
    """An order as read: its command name, its arguments as the order word would take them
    ("3", "5"; "*" for the star) and the language of the words read (None: English)."""

    name: str
    args: tuple[str, ...] = ()
    language: str | None = None
    by_word: bool = False     # an order word opened it ("Hallo, BIETE ..."): args as written


@dataclass(frozen=True)
class Read:
    reading: Reading


Why = Literal["two", "number", "question", "unsure", "more"]


@dataclass(frozen=True)
class Doubt:
    """A line that may be an order but is not acted on: why, and the readings offered."""

    why: Why
    readings: tuple[Reading, ...]


def words_of(text: str) -> tuple[list[list[str]], bool]:
    """The clauses of a line (its words folded, cut at punctuation) and whether it asks
    (a "?" anywhere)."""
    clauses: list[list[str]] = [[]]
    asks = False
    for token in _TOKEN.findall(text[:MAX_READ_CHARS]):
        if token == ":":    # "Mein Gebot: drei Fünfer" is one clause
            continue
        word = folded(token)
        if token in _BREAKS or token == "?":
            asks = asks or token == "?"
            if clauses[-1]:
                clauses.append([])
        else:
            clauses[-1].append(word)
    return [c for c in clauses if c], asks


def strip_courtesy(words: list[str]) -> list[str]:
    """The clause without the greetings and courtesy words at its two ends."""
    start, end = 0, len(words)
    changed = True
    while changed and start < end:
        changed = False
        for size in range(min(MOST_COURTESY_WORDS, end - start), 0, -1):
            if tuple(words[start:start + size]) in COURTESY:
                start += size
                changed = True
                break
            if tuple(words[end - size:end]) in COURTESY:
                end -= size
                changed = True
                break
    return words[start:end]


def _quantity(words: Sequence[str]) -> tuple[int, str | None] | None:
    """A quantity written in one or two words (3, drei, "twenty one"), with its language."""
    if len(words) == 1:
        word = words[0].replace("-", "")
        if word.isdigit():   # "12:00", "3.5" are one word: no quantity
            return (int(word), None) if len(word) <= 3 and word[0] != "0" else None
        found = NUMBERS.get(word)     # (zero, null, nula: no quantity)
        return ((found[0], found[1]) if found and isinstance(found[0], int) and found[0] > 0
                else None)
    if len(words) == 2 and words[0] in TENS_WORDS:
        unit = NUMBERS.get(words[1])
        if unit and isinstance(unit[0], int) and 1 <= unit[0] <= 9:
            return TENS_WORDS[words[0]] + unit[0], unit[1]
    return None


def _face_noun(word: str) -> tuple[str, str | None] | None:
    """A word that can only be a face (Fünfer, pětky, fives, 5s, 5er, stars, *)."""
    if word in ("*", "\u2605"):
        return STAR_FACE, None
    found = FACE_NOUNS.get(word)
    if found is not None and word not in PLAIN_NUMBERS:
        return _face_arg(found[0]), found[1]
    digit = _DIGIT_FACE.match(word)
    if digit:
        return _face_arg(int(digit.group(1))), None
    return None


def _face_any(word: str) -> tuple[str, str | None] | None:
    """A face written as a face word or a plain number (5, fünf, pět, five; 6 = the star)."""
    noun = _face_noun(word)
    if noun is not None:
        return noun
    if word.isdigit() and len(word) == 1 and 1 <= int(word) <= 6:
        return _face_arg(int(word)), None
    found = FACE_NOUNS.get(word) or NUMBERS.get(word)
    if found and (found[0] == STAR_FACE or isinstance(found[0], int) and 1 <= found[0] <= 6):
        return _face_arg(found[0]), found[1]
    return None


def _face_arg(face: object) -> str:
    return STAR_FACE if face in (STAR_FACE, 6) else str(face)


def _bid(q: int, face: str, *languages: str | None) -> Reading:
    return Reading("BID", (str(q), face), next((x for x in languages if x), None))


def bare_bids(words: Sequence[str]) -> list[Reading]:
    """The bids a clause that is only a quantity and a face may be: one ("drei Fünfer",
    "3 mal die 5"), two (the numbers "3 5": either may be the face) or none."""
    n = len(words)
    found: list[Reading] = []
    for q_size in (1, 2):
        if n <= q_size:
            break
        quantity = _quantity(words[:q_size])
        if quantity is None:
            continue
        rest = words[q_size:]
        if len(rest) == 1:
            noun = _face_noun(rest[0])
            if noun is not None:
                return [_bid(quantity[0], noun[0], noun[1], quantity[1])]
            face = _face_any(rest[0])
            if face is not None and q_size == 1:   # "3 5": which is the face?
                found = [_bid(quantity[0], face[0], face[1], quantity[1])]
                back_quantity = _quantity(rest)
                back_face = _face_any(words[0])
                if back_quantity is not None and back_face is not None:
                    other = _bid(back_quantity[0], back_face[0], back_face[1])
                    if other != found[0]:
                        found.append(other)
                return found
        elif 1 < len(rest) <= MOST_JOINER_WORDS + 1 and tuple(rest[:-1]) in JOINERS:
            face = _face_any(rest[-1])
            if face is not None:
                return [_bid(quantity[0], face[0], face[1], quantity[1])]
    return found


def _hedged(core: Sequence[str]) -> bool:
    """One or two words, then a bid, where a word is a maybe or a verb of bidding
    mistyped ("Ich beite drei Dreier": did you mean "biete"?)."""
    for size in (2, 3):
        if len(core) in (size + 1, size + 2) and bare_bids(core[-size:]):
            before = core[:-size]
            return any(w in HEDGES or any(one_slip(w, v) for v in BID_VERBS if len(v) >= 4)
                       for w in before)
    return False


def _pairs_in(words: Sequence[str]) -> tuple[list[Reading], set[str]]:
    """The bids in a clause, each a quantity and a face word ("... drei Fünfer ..."),
    and the clause's other words."""
    found: list[Reading] = []
    rest: set[str] = set()
    i = 0
    while i < len(words):
        quantity = _quantity(words[i:i + 1]) if i + 1 < len(words) else None
        noun = _face_noun(words[i + 1]) if quantity is not None else None
        if quantity is not None and noun is not None:
            bid = _bid(quantity[0], noun[0], noun[1], quantity[1])
            found += [bid] if bid not in found else []
            i += 2
        else:
            rest.add(words[i])
            i += 1
    return found, rest


@dataclass(frozen=True)
class Vocabulary:
    """What the grammar may read for one set of commands: bids (BID), the challenge's
    order name (CHALLENGE, or Cup of Bluff's BLUFF), and the order words that a clause may
    open with after a greeting ("Hallo, BIETE 3 Fünfer")."""

    bids: bool
    challenge: str | None
    # (words, name, language) by the first word, longest first
    openers_by_word: dict[str, list[tuple[tuple[str, ...], str, str | None]]]


@lru_cache(maxsize=64)
def vocabulary(names: tuple[str, ...],
               openers: tuple[tuple[tuple[str, ...], str, str | None], ...]) -> Vocabulary:
    challenge = next((n for n in ("CHALLENGE", "BLUFF") if n in names), None)
    by_word: dict[str, list[tuple[tuple[str, ...], str, str | None]]] = {}
    for opener in sorted(openers, key=lambda o: -len(o[0])):
        by_word.setdefault(opener[0][0], []).append(opener)
    return Vocabulary("BID" in names, challenge, by_word)


def _clause(words: list[str], vocab: Vocabulary) -> tuple[str, list[Reading]]:
    """What one clause is: "empty" (greetings), "order" (its readings: one, or two for a
    number that may be either), "either" (orders joined by "or"), "unsure" (it speaks of
    an order the grammar does not read; the readings it may mean), or "prose"."""
    core = strip_courtesy(words)
    if not core:
        return "empty", []
    if len(core) > MAX_CLAUSE_WORDS:
        return "prose", []
    if OR_WORDS & set(core[1:-1]):
        # "drei Fünfer oder vier Vierer", "Liar or four fives": orders on both sides are
        # two readings; else the whole clause is read as one
        parts: list[list[str]] = [[]]
        for word in core:
            if word in OR_WORDS:
                parts.append([])
            else:
                parts[-1].append(word)
        found = [_clause(part, vocab) for part in parts]
        if all(kind == "order" for kind, _r in found):
            return "either", [r for _kind, readings in found for r in readings]
    key = tuple(core)
    said_in = CHALLENGE_LANGUAGE.get(key) if vocab.challenge else None
    # to accept the bet is to challenge it in Bluff, but in Cup of Bluff (BLUFF) it may as
    # well be OK: never read there
    if said_in is not None and vocab.challenge and not (vocab.challenge == "BLUFF"
                                                        and key in ACCEPTS):
        return "order", [Reading(vocab.challenge, (), None if said_in == "en" else said_in)]
    by_word: list[Reading] = []
    for spelling, name, word_language in vocab.openers_by_word.get(core[0], ()):
        if tuple(core[:len(spelling)]) == spelling:
            rest = core[len(spelling):]
            bids = bare_bids(rest) if name == "BID" else []
            if bids:   # after the order word, the quantity comes first ("BIETE 3 5")
                return "order", [Reading(name, bids[0].args, word_language)]
            by_word = [Reading(name, tuple(rest), word_language, by_word=True)]
            break
    if not vocab.bids:
        return ("order", by_word) if by_word else ("prose", [])
    # a bid ends with its face: no other clause is one (most prose ends here)
    cuts = range(0, min(len(core) - 1, 9)) if _face_any(core[-1]) else range(0)
    for cut in cuts:
        language = OPENER_LANGUAGE.get(key[:cut], "" if cut == 0 else None)
        if language is None:
            continue
        bids = bare_bids(core[cut:])
        if bids:
            lang = language if language not in ("", "en") else None
            # after a verb of bidding, the quantity comes first ("Ich biete 3 5")
            return "order", [Reading(b.name, b.args, b.language or lang)
                             for b in (bids[:1] if cut else bids)]
    if by_word:
        return "order", by_word
    if _hedged(core):
        return "unsure", bare_bids(core[-2:])[:1] or bare_bids(core[-3:])[:1]
    pairs, others = _pairs_in(core)
    talks = set(core)
    if pairs and (talks & BID_VERBS or len(pairs) > 1 and others <= AMONG_BIDS):
        # a bid spoken of ("I don't bid three fives"), or bids and little else ("drei
        # Fünfer oder vier Vierer")
        return "unsure", pairs
    if vocab.challenge and len(core) <= 6 and talks & CHALLENGE_WORDS and talks & NEGATIONS:
        return "unsure", [Reading(vocab.challenge)]
    return "prose", []


def read_line(text: str, vocab: Vocabulary) -> Read | Doubt | None:
    """The order a line says, a doubt (never acted on), or None for prose."""
    if len(text) > MAX_READ_CHARS or sum(map(text.count, ".!?;,@")) > 2 * MAX_CLAUSES:
        return None      # (counted before the line is cut into words: C-fast)
    clauses, asks = words_of(text)
    if len(clauses) > MAX_CLAUSES:
        return None
    readings: list[Reading] = []
    prose = unsure = False
    numbers = False
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for words in clauses:
        kind, found = _clause(words, vocab)
        if kind == "prose":
            prose = True
        elif kind == "unsure":
            unsure = True
        numbers = numbers or (kind == "order" and len(found) > 1)   # "3 5"
        for r in found:
            if (r.name, r.args) not in seen:
                seen.add((r.name, r.args))
                readings.append(r)
        if len(readings) >= MAX_READINGS:   # a doubt already: enough to offer back
            break
    if not readings:
        return None
    offered = tuple(readings)
    moves = [r for r in readings if r.name in ("BID", vocab.challenge)]
    if numbers:
        return Doubt("number", offered)
    if len(readings) > 1:
        return Doubt("two", offered)
    if asks and moves:
        return Doubt("question", offered)
    if unsure:
        return Doubt("unsure", offered)
    if prose:
        return Doubt("more", offered)
    return Read(readings[0])
