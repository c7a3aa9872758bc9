"""The arguments of an order: a die face, a quantity, a bid, the faces to show, one word
(a game name, a key), a turn number; each read as people write them (words, German and
Czech ones too: pbem.orders.words), a bad one a Refusal that says how to write it.

Pure: imports only the rules core and the order words.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pbem.orders.words import FOLDED_FACES, FOLDED_NUMBERS, STAR_FACE, folded
from pbem.rules.dice import STAR, Face
from pbem.rules.ladder import Bid
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _

GAME_NAME = re.compile(r"^[a-z0-9-]{1,40}$")
GAME_NAME_HINT = _("game names use a-z, 0-9 and -")


_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty twentyone twentytwo twentythree "
    "twentyfour twentyfive twentysix twentyseven twentyeight twentynine thirty".split())}
_FACE_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "star": STAR}
FACE_HINT = _("a face is 1 to 5 (or one..five, 1s..5s) or star / *")


def parse_face(token: str) -> Face:
    word = token.lower().strip(".,;:!")
    if word in ("*", "\u2605", "6"):
        return STAR
    if word.isdigit() and 1 <= int(word) <= 5:
        return int(word)
    for suffix in ("'s", "es", "s", ""):
        stem = word.removesuffix(suffix) if suffix else word
        if stem.isdigit() and 1 <= int(stem) <= 5:
            return int(stem)
        if stem in _FACE_WORDS:
            return _FACE_WORDS[stem]
    other = FOLDED_FACES.get(folded(word))       # German, Czech (pbem.orders.words)
    if isinstance(other, int):
        return other
    if other == STAR_FACE:
        return STAR
    raise Refusal(_("'{token}' is not a die face", token=token), FACE_HINT)


def parse_quantity(token: str) -> int:
    word = token.lower().strip(".,;:!").replace("-", "")
    if word.isdigit():
        value = int(word)
    elif word in _NUMBER_WORDS:
        value = _NUMBER_WORDS[word]
    elif folded(word) in FOLDED_NUMBERS:        # German, Czech (pbem.orders.words)
        value = FOLDED_NUMBERS[folded(word)]
    else:
        raise Refusal(_("'{token}' is not a quantity", token=token),
                      _("write the quantity as a number, e.g. BID 6 threes"))
    if value < 1:
        raise Refusal(_("a bid needs a quantity of at least 1"), _("e.g. BID 1 five"))
    return value


def parse_bid(args: list[str]) -> Bid:
    if len(args) != 2:
        raise Refusal(_("a bid is a quantity and a face"),
                      _("e.g. BID 6 threes, BID 6 3 or BID 4 stars"))
    return Bid(parse_quantity(args[0]), parse_face(args[1]))   # the rules' refusal, if any


def parse_faces(args: list[str]) -> tuple[Face, ...]:
    if not args:
        raise Refusal(_("EXPOSE needs the faces of the dice to show"), _("e.g. EXPOSE 3 3 *"))
    faces: list[Face] = []
    for token in args:
        for part in token.split(","):
            if part:
                faces.append(parse_face(part))
    return tuple(faces)


def no_args(args: list[str]) -> None:
    if args:
        raise Refusal(_("this order takes nothing after it, not '{words}'",
                        words=" ".join(args)))


# what one word may be, as the problems name it: (one of it expected, not a valid one)
_ONE_WORD: dict[str, tuple[Message, Callable[[str], Message]]] = {
    "key": (_("expected one key"), lambda v: _("'{value}' is not a valid key", value=v)),
    "game name": (_("expected one game name"),
                  lambda v: _("'{value}' is not a valid game name", value=v)),
}


def one_word(what: str, pattern: re.Pattern[str] | None = None) -> Callable[[list[str]], str]:
    expected, invalid = _ONE_WORD[what]

    def parse(args: list[str]) -> str:
        if len(args) != 1:
            raise Refusal(expected)
        value = args[0].strip()
        if pattern is not None and not pattern.match(value.lower()):
            raise Refusal(invalid(value),
                          GAME_NAME_HINT if what == "game name" else "")
        return value.lower() if what == "game name" else value
    return parse


def parse_turn(args: list[str]) -> int:
    if len(args) != 1 or not args[0].isdigit():
        raise Refusal(_("TURN takes the turn number"), _("e.g. TURN 3"))
    return int(args[0])


game_name = one_word("game name", GAME_NAME)
