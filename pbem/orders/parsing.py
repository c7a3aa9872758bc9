"""The order language read: a mail's lines read into orders, by the commands it is given
(pbem.orders.commands: what a command is, and what reading yields).

A mail's text is read line by line: a line that starts with a command is parsed
(and a bad one is an error that quotes the line); a line that starts with
something close to a command name is an error too ("BDI 6 3: did you mean
BID?"); a line that says an order in words may be one (pbem.orders.reading); any
other line is prose and is ignored.

Pure: this module imports only the rules core.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pbem.orders.commands import Command, Order, ParsedText, TextLine
from pbem.orders.phrases import COURTESY
from pbem.orders.reading import (
    Doubt,
    Read,
    Reading,
    Vocabulary,
    bare_bids,
    read_line,
    vocabulary,
)
from pbem.orders.typos import NOT_TYPOS, mistyped
from pbem.orders.words import STAR_FACE, folded, order_said, spelled, spellings_of
from pbem.rules.dice import STAR
from pbem.rules.ladder import Bid
from pbem.text.errors import LineProblem, Refusal
from pbem.text.wording import Message, Said, _, joined

BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")   # a list's bullet or number at a line's start
# what people put after an order word or at the end of an order: "Challenge!", "Cups up!",
# "BID 3 fives.", "CHALLENGE:" (never inside a word: "a@b.org" keeps its dots)
END_PUNCTUATION = "!.:"


@dataclass(frozen=True)
class _Grammar:
    """What parse_text derives from a set of commands, once: the order words (longest
    first), the words a typo may be of, and the vocabulary of spoken orders."""

    spellings: tuple[tuple[list[str], Command, str | None], ...]
    # the spellings by their first word, longest first
    by_first: dict[str, list[tuple[list[str], Command, str | None]]]
    by_name: dict[str, Command]
    typo_words: dict[str, str]          # a folded order word -> the spelling to suggest
    vocab: Vocabulary
    typo_names: tuple[str, ...] = ()    # the keys of typo_words


# by the commands' identities (the tables are made once; a mail's tuple of them is new),
# with the commands kept so that no identity is reused while cached
_GRAMMARS: dict[tuple[int, ...], tuple[tuple[Command, ...], _Grammar]] = {}


def _grammar(commands: Sequence[Command]) -> _Grammar:
    key = tuple(map(id, commands))
    cached = _GRAMMARS.get(key)
    if cached is not None:
        return cached[1]
    spellings = tuple(sorted(((form.split(), c, lang) for c in commands
                              for lang, s in (*((None, s) for s in c.spellings),
                                              *spellings_of(c.name))
                              for form in spelled(s)),
                             key=lambda item: -len(item[0])))
    by_name = {c.name: c for c in commands}
    typo_words = {c.name: c.name for c in commands}
    # the single order words of the other languages too (BITEE: did you mean BIETE?);
    # short ones only as they are, so that no everyday word is taken for a typo
    for c in commands:
        for _lang, spelling in spellings_of(c.name):
            if " " not in spelling and len(spelling) >= 5:
                typo_words.setdefault(folded(spelling), spelling)
    # after a greeting, an order word opens an order only for a move or a reply (HELP):
    # "Hallo, BIETE 3 Fünfer", "Thanks, HELP" (never GAME, KEY, SAY ...)
    openers = tuple((tuple(words), c.name, lang) for words, c, lang in spellings
                    if c.phase in ("move", "reply"))
    by_first: dict[str, list[tuple[list[str], Command, str | None]]] = {}
    for entry in spellings:
        by_first.setdefault(entry[0][0], []).append(entry)
    grammar = _Grammar(spellings, by_first, by_name, typo_words,
                       vocabulary(tuple(by_name), openers), tuple(typo_words))
    if len(_GRAMMARS) > 64:
        _GRAMMARS.clear()
    _GRAMMARS[key] = (tuple(commands), grammar)
    return grammar


def parse_text(lines: Sequence[TextLine], commands: Sequence[Command]) -> ParsedText:
    """Read each line as a command, a bad command, or prose. A command is known by its
    English spellings and by the words of the other languages (pbem.orders.words), in any
    case and with or without accents; a line that does not open with one may still say an
    order (pbem.orders.reading: "Ich biete drei Fünfer.", "3 pětky", "Liar!"), and a line
    that may say an order but is not sure to is a problem that offers its readings."""
    grammar = _grammar(commands)
    result = ParsedText()
    for line in lines:
        text = BULLET.sub("", line.text).strip()
        tokens = text.split()
        if not tokens:
            continue
        words = [folded(t).rstrip(END_PUNCTUATION) for t in tokens]
        match = next(((sp, c, lang) for sp, c, lang in grammar.by_first.get(words[0], ())
                      if words[:len(sp)] == sp), None)
        refused = _read_order_line(line, text, tokens, match, result) if match else None
        if match and refused is None:
            continue
        found = read_line(text, grammar.vocab)
        if isinstance(found, Read):
            _read_spoken(line, found.reading, grammar, result, refused)
        elif isinstance(found, Doubt) and not (found.why == "unsure" and refused is None
                                               and _typo(tokens, words, grammar)):
            result.problems.append(doubt_problem(line, found))
        elif refused is not None:      # an order word, then what no reading takes
            result.problems.append(refused)
        else:
            _typo_or_prose(line, tokens, words, grammar, commands, result)
    return result


def _read_order_line(line: TextLine, text: str, tokens: list[str],
                     match: tuple[list[str], Command, str | None],
                     result: ParsedText) -> LineProblem | None:
    """A line that opens with an order word: the order (None returned), or the problem
    that quotes the line. A courtesy word after it is no argument ("Hilfe bitte", "BID 3
    fives, thanks"); a move that asks ("BID 3 fives?") is not acted on."""
    spelling, command, language = match
    if command.phase == "move" and text.endswith("?"):
        said = " ".join(t.rstrip(END_PUNCTUATION + "?") for t in tokens)
        result.problems.append(doubt_problem(
            line, Doubt("question", (Reading(command.name, (), language),)), said))
        return None
    args = tokens[len(spelling):]
    try:
        parsed = command.parse(_without_end_punctuation(args))
        written = text.rstrip(END_PUNCTUATION)
        read_as = _read_as(command, parsed, language, written)
        result.orders.append(Order(line.number, line.text, command, parsed, language,
                                   read_as=None if read_as == written else read_as))
        return None
    except Refusal as exc:
        refused = exc
    trimmed = _without_courtesy(args)
    if trimmed != args:
        try:
            parsed = command.parse(trimmed)
        except Refusal:
            pass
        else:
            written = " ".join((*tokens[:len(spelling)], *trimmed)).rstrip(END_PUNCTUATION)
            result.orders.append(Order(line.number, line.text, command, parsed, language,
                                       read_as=_read_as(command, parsed, language, written)))
            return None
    return LineProblem(line.number, line.text, refused.message,
                       refused.hint or _("write it as {usage}", usage=command.usage))


def _read_as(command: Command, parsed: Any, language: str | None, written: str) -> str:
    """What the confirmation says a line was read as: a bid in its order words ("BIETE 3
    Fünfer"), any other order as written without its courtesy words."""
    if isinstance(parsed, Bid):
        return order_said(command.name, (str(parsed.quantity), STAR_FACE if parsed.face == STAR
                                         else str(parsed.face)), language)
    return written


def _without_courtesy(args: list[str]) -> list[str]:
    """The arguments without the courtesy words at their end ("bitte", "thanks", "díky")
    and the punctuation before them ("Fünfer, danke" -> "Fünfer")."""
    end = len(args)
    while end > 0:
        for size in (3, 2, 1):
            tail = tuple(folded(a).strip(",.!?;:") for a in args[max(0, end - size):end])
            if len(tail) == size and tail in COURTESY:
                end -= size
                break
        else:
            break
    kept = args[:end]
    if kept and kept != args:
        last = kept[-1].rstrip(",;" + END_PUNCTUATION)
        kept = kept[:-1] + [last] if last else kept[:-1]
    return kept


def _read_spoken(line: TextLine, reading: Reading, grammar: _Grammar, result: ParsedText,
                 refused: LineProblem | None = None) -> None:
    """An order read from a sentence or a bare bid. A bad one (0 Fünfer) is a problem:
    the order word's own (``refused``) if the line opened with one; an order word after a
    greeting with a bad rest is prose, as any line without an order."""
    command = grammar.by_name[reading.name]
    try:
        parsed = command.parse(list(reading.args))
    except Refusal as exc:
        if refused is not None:
            result.problems.append(refused)
        elif reading.by_word:
            result.prose.append(line)
        else:
            result.problems.append(LineProblem(
                line.number, line.text, exc.message,
                exc.hint or _("write it as {usage}", usage=command.usage)))
        return
    written = order_said(reading.name, reading.args, reading.language)
    result.orders.append(Order(line.number, line.text, command, parsed, reading.language,
                               read_as=_read_as(command, parsed, reading.language, written)))


DOUBTS: dict[str, Message] = {
    "two": _("this line reads as more than one order"),
    "number": _("in this line either number may be the quantity"),
    "question": _("this line asks: I act on no question"),
    "unsure": _("this line speaks of an order, but I cannot be sure which"),
    "more": _("this line says more than an order"),
}


def doubt_problem(line: TextLine, doubt: Doubt, said: str | None = None) -> LineProblem:
    """The problem of a line not acted on: the line, why, and the orders it may mean, to
    write back (alone on a line)."""
    readings = [said or order_said(r.name, r.args, r.language) for r in doubt.readings]
    choices: Said = (_("{first} or {second}", first=joined(readings[:-1], ", "),
                       second=readings[-1]) if len(readings) > 1 else readings[0])
    hint = (_("nothing was done; if you mean {choices}, write it alone on a line",
              choices=choices) if len(readings) == 1
            else _("nothing was done; write the one you mean alone on a line: {choices}",
                   choices=choices))
    return LineProblem(line.number, line.text, DOUBTS[doubt.why], hint)


def _typo(tokens: list[str], words: list[str], grammar: _Grammar) -> str | None:
    """The order word the line's first word is a typo of: an English one in a short line
    (as ever), one of another language only with nothing after it but a bid's words
    ("BITEE 5 Fünfer"), never a word of its own ("Zweifel habe ich keine")."""
    if len(tokens) > 6 or words[0] in NOT_TYPOS:
        return None
    guess = _mistyped(words[0], grammar.typo_names)
    if guess is None or guess in grammar.by_name:
        return guess
    rest = words[1:]
    return guess if not rest or bare_bids(rest) else None


def _typo_or_prose(line: TextLine, tokens: list[str], words: list[str], grammar: _Grammar,
                   commands: Sequence[Command], result: ParsedText) -> None:
    """A short line whose first word is an order word mistyped is a typo (in any of the
    languages: BDI, BITEE), else the line is prose."""
    guess = _typo(tokens, words, grammar)
    if guess:
        word = grammar.typo_words[guess]
        name = next((c.name for c in commands if c.name == guess), None) or next(
            name for name in grammar.by_name
            if any(folded(w) == guess for _lang, w in spellings_of(name)))
        result.problems.append(LineProblem(
            line.number, line.text, _("'{word}' is not an order", word=tokens[0]),
            _("did you mean {name}? ({usage})", name=word,
              usage=_usage(commands, name))))
    else:
        result.prose.append(line)


@lru_cache(maxsize=4096)
def _mistyped(word: str, names: tuple[str, ...]) -> str | None:
    """mistyped, kept: the first words of a mail's lines repeat ("I", "Hi", "Thanks")."""
    return mistyped(word, names)


def _without_end_punctuation(args: list[str]) -> list[str]:
    """The arguments with the line's closing "!" or "." taken off ("fives." -> "fives");
    a lone "!" at the end is dropped."""
    if not args:
        return args
    last = args[-1].rstrip(END_PUNCTUATION)
    return args[:-1] + [last] if last else args[:-1]


def _usage(commands: Sequence[Command], name: str) -> str:
    return next(c.usage for c in commands if c.name == name)
