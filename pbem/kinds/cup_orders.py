"""Cup of Bluff's orders (docs/rules.md section 5): ANNOUNCE, STEAL, DOUBLET, OK, BLUFF and
GIVE, each a command of the order language (pbem.orders.commands) with its parser.

A player is named by number (TO 3, FROM player 2) or by name (TO Ann: the shell finds
the seat, pbem.orders.commands.SeatByName); tokens and totals are 3 to 18, in digits or
English words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pbem.orders.commands import Command, SeatByName
from pbem.rules.cupofbluff_moves import Announce, Answer, Doublet, Give, Move, Steal
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _

SEAT_HINT = _("write the player's number or name, e.g. TO 3, TO player 3 or TO Ann")
_NAME = re.compile(r"^[^\W\d_][\w.' -]{0,59}$")
TOKEN_HINT = _("tokens and totals are the numbers 3 to 18")
_WORDS = dict(zip(("three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                   "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                   "eighteen"), range(3, 19), strict=True))
_SEAT = re.compile(r"^(?:player|seat|p|#)?\s*(\d+)$")


def _clean(word: str) -> str:
    return word.lower().strip(".,;:!?")


def parse_token(word: str) -> int:
    text = _clean(word)
    value = int(text) if text.isdigit() else _WORDS.get(text)
    if value is None or not 3 <= value <= 18:
        raise Refusal(_("'{word}' is not a token or total", word=word), TOKEN_HINT)
    return value


def parse_seat(words: Sequence[str]) -> int:
    match = _SEAT.match(" ".join(_clean(w) for w in words))
    if match is None or not 1 <= int(match.group(1)) <= 5:
        raise Refusal(_("'{words}' is not a player number", words=" ".join(words)), SEAT_HINT)
    return int(match.group(1))


def _write_it(usage: str) -> Message:
    return _("write it as {usage}", usage=usage)


def _split(args: list[str], word: str, usage: str) -> tuple[list[str], list[str]]:
    upper = [_clean(a).upper() for a in args]
    if word not in upper:
        raise Refusal(_("'{word}' is missing", word=word), _write_it(usage))
    at = upper.index(word)
    return args[:at], args[at + 1:]


def _one_token(words: list[str], usage: str) -> int:
    if len(words) != 1:
        raise Refusal(_("expected one token or total, not '{words}'", words=" ".join(words)),
                      _write_it(usage))
    return parse_token(words[0])


def _seat_or_name(words: Sequence[str], build: Callable[[int], Move]) -> Move | SeatByName:
    """A player by number (the move at once) or by name (found by the shell)."""
    try:
        return build(parse_seat(words))
    except Refusal:
        name = " ".join(w.strip(".,;:!?") for w in words).strip()
        if not _NAME.match(name):
            raise
        return SeatByName(name, build)


def parse_announce(args: list[str]) -> Move | SeatByName:
    usage = "ANNOUNCE <total> TO <player>, e.g. ANNOUNCE 12 TO 3"
    total, seat = _split(args, "TO", usage)
    value = _one_token(total, usage)
    return _seat_or_name(seat, lambda s: Announce(value, s))


def parse_steal(args: list[str]) -> Move | SeatByName:
    usage = "STEAL <token> FROM <player>, e.g. STEAL 15 FROM 2"
    token, seat = _split(args, "FROM", usage)
    value = _one_token(token, usage)
    return _seat_or_name(seat, lambda s: Steal(value, s))


def parse_doublet(args: list[str]) -> Doublet:
    usage = "DOUBLET TAKE <token> GIVE <token> <token> ..., e.g. DOUBLET TAKE 4 GIVE 8 13"
    before, after = _split(args, "GIVE", usage)
    if not before or _clean(before[0]) != "take":
        raise Refusal(_("'{word}' is missing", word="TAKE"), _write_it(usage))
    parts = [p for a in after for p in a.split(",") if p and _clean(p) not in ("", "and")]
    if not parts:
        raise Refusal(_("name the tokens you give back"), _write_it(usage))
    return Doublet(_one_token(before[1:], usage), tuple(parse_token(p) for p in parts))


def parse_give(args: list[str]) -> Give:
    return Give(_one_token(args, "GIVE <token>, e.g. GIVE 9"))


def _answer(ok: bool) -> Callable[[list[str]], Answer]:
    def parse(args: list[str]) -> Answer:
        # "Bluff you!" and "OK!" are the rulebook's words; anything more is a mistake
        if any(_clean(a) not in ("", "you") for a in args):
            raise Refusal(_("this order takes nothing after it, not '{words}'",
                            words=" ".join(args)))
        return Answer(ok)
    return parse


COMMANDS: tuple[Command, ...] = (
    Command("ANNOUNCE", "ANNOUNCE <total> TO <player number or name>",
            _("as the Bluffer: claim your dice show this total (3-18, its token in the centre)"),
            parse_announce),
    Command("STEAL", "STEAL <token> FROM <player number or name>",
            _("as the Bluffer: claim your dice show the total of that player's token"),
            parse_steal),
    Command("DOUBLET", "DOUBLET TAKE <token> GIVE <token> [<token> ...]",
            _("as the Bluffer with a double: swap your tokens for a centre token of equal points"),
            parse_doublet),
    Command("OK", "OK", _("as the Guesser: you believe the Bluffer's claim"), _answer(True),
            aliases=("OK!", "OKAY")),
    Command("BLUFF", "BLUFF", _("as the Guesser: you do not believe it"), _answer(False),
            aliases=("BLUFF!", "BLUFF YOU", "BLUFF YOU!")),
    Command("GIVE", "GIVE <token>",
            _("as the Bluffer after a failed steal: the token you give the Guesser"), parse_give),
)
MOVE_NAMES = tuple(c.name for c in COMMANDS)
