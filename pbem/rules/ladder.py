"""Bids and the board's track (the bid ladder).

The track lays number spaces and star spaces in one line:
``1, 1*, 2, 3, 2*, 4, 5, 3*, 6, ...``: star space n lies between number
spaces 2n-1 and 2n. A bid is a space plus, on a number space, a face; a
raise is any later space, or the same number space with a higher face.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pbem.rules.dice import NUMBER_FACES, STAR, Face
from pbem.rules.errors import IllegalMove, MalformedMove
from pbem.text.wording import Message, _, _n, ngettext

_FACE_WORDS = {1: ("one", "ones"), 2: ("two", "twos"), 3: ("three", "threes"),
               4: ("four", "fours"), 5: ("five", "fives"), STAR: ("star", "stars")}
# a bid in its reader's language ("4 threes" is one message: the count and the word go
# together in each language's own way; the same messages as pbem.render.reports's bids)
_FACE_COUNTS: dict[Face, Callable[[int], Message]] = {
    1: lambda q: _n("{n} one", "{n} ones", q),
    2: lambda q: _n("{n} two", "{n} twos", q),
    3: lambda q: _n("{n} three", "{n} threes", q),
    4: lambda q: _n("{n} four", "{n} fours", q),
    5: lambda q: _n("{n} five", "{n} fives", q),
    STAR: lambda q: _n("{n} star", "{n} stars", q),
}
# a face's name in the plural ("a bid of threes")
_FACE_NAMES: dict[Face, Message] = {
    1: _n("one", "ones", 2), 2: _n("two", "twos", 2), 3: _n("three", "threes", 2),
    4: _n("four", "fours", 2), 5: _n("five", "fives", 2), STAR: _n("star", "stars", 2),
}


def face_word(face: Face, quantity: int) -> str:
    singular, plural = _FACE_WORDS[face]
    return ngettext(singular, plural, quantity)


def number_position(quantity: int) -> int:
    """0-based index of number space q on the track (1 -> 0, 2 -> 2, 3 -> 3)."""
    return quantity - 1 + quantity // 2


def star_position(quantity: int) -> int:
    """0-based index of star space n: right after number space 2n-1."""
    return 3 * quantity - 2


@dataclass(frozen=True)
class Bid:
    """'quantity face': at least that many dice show the face (or a star)."""

    quantity: int
    face: Face

    def __post_init__(self) -> None:
        if self.quantity < 1:
            raise MalformedMove(_("a bid needs a quantity of at least 1, not {quantity}",
                                  quantity=self.quantity))
        if self.face not in NUMBER_FACES and self.face != STAR:
            raise MalformedMove(_("a die shows 1 to 5 or a star, not {face}",
                                  face=self.face))

    @property
    def is_star(self) -> bool:
        return self.face == STAR

    @property
    def position(self) -> int:
        return star_position(self.quantity) if self.is_star else number_position(self.quantity)

    @property
    def key(self) -> tuple[int, int]:
        """Sort key: the bid ladder is the lexicographic order of this key."""
        return (self.position, self.face)

    def __str__(self) -> str:
        return f"{self.quantity} {face_word(self.face, self.quantity)}"

    def said(self) -> Message:
        """The bid as its reader reads it ("4 threes", "4 Dreier")."""
        return _FACE_COUNTS[self.face](self.quantity)


def is_raise(old: Bid | None, new: Bid) -> bool:
    """True when new is above old on the ladder (anything is a raise of no bid)."""
    return old is None or new.key > old.key


class Ladder:
    """The track of one game: number spaces 1..top and the stars among them."""

    def __init__(self, dice_in_play: int, *, star_bids: bool = True,
                 board_cap: int | None = None) -> None:
        top = dice_in_play if board_cap is None else min(dice_in_play, board_cap)
        if top < 1:
            raise ValueError("a ladder needs at least one die in play")
        self.top_number = top
        self.star_bids = star_bids
        # star n lies between number spaces 2n-1 and 2n, so it is on the track when 2n <= top
        # (docs/rules.md section 1: the track ends at the number space of the dice in play, as 19, 10*, 20)
        self.top_star = top // 2 if star_bids else 0
        self._bids = sorted(self._all_bids(), key=lambda b: b.key)
        self._index = {bid: i for i, bid in enumerate(self._bids)}

    def _all_bids(self) -> list[Bid]:
        bids = [Bid(q, f) for q in range(1, self.top_number + 1) for f in NUMBER_FACES]
        bids += [Bid(q, STAR) for q in range(1, self.top_star + 1)]
        return bids

    @property
    def bids(self) -> list[Bid]:
        """Every bid on the track, lowest first."""
        return list(self._bids)

    def on_track(self, bid: Bid) -> bool:
        return bid in self._index

    @property
    def top(self) -> Bid:
        return self._bids[-1]

    def raises(self, old: Bid | None) -> list[Bid]:
        """Every legal raise of old (every bid when old is None), lowest first."""
        if old is None:
            return list(self._bids)
        start = self._index[old] + 1 if old in self._index else self._first_above(old)
        return self._bids[start:]

    def _first_above(self, old: Bid) -> int:
        for i, bid in enumerate(self._bids):
            if bid.key > old.key:
                return i
        return len(self._bids)

    def lowest_raise(self, old: Bid | None) -> Bid | None:
        """The lowest legal raise, or None when the only move left is a challenge."""
        above = self.raises(old)
        return above[0] if above else None

    def check(self, old: Bid | None, new: Bid) -> None:
        """Raise IllegalMove, with a message that says what would do, unless new is legal."""
        if new.is_star and not self.star_bids:
            raise IllegalMove(_("{bid}: star bids are off in this game; bid a number from 1 "
                                "to 5", bid=new.said()))
        if not self.on_track(new):
            raise IllegalMove(_("{bid} is off the board: {end}", bid=new.said(),
                                end=self._board_end()))
        if is_raise(old, new):
            return
        assert old is not None
        lowest = self.lowest_raise(old)
        if lowest is None:
            raise IllegalMove(_("{bid} is the top of the board: you must CHALLENGE",
                                bid=old.said()))
        same_face = next((b for b in self.raises(old) if b.face == new.face), None)
        hint = _lowest_of_face(new.face, same_face)
        if same_face != lowest:
            assert lowest is not None
            hint = _("{hint}; the lowest raise is {bid}", hint=hint, bid=lowest.said())
        raise IllegalMove(_("{bid} is not above {old}: {hint}", bid=new.said(),
                            old=old.said(), hint=hint))

    def _board_end(self) -> Message:
        if self.star_bids:
            return _("the board ends at {top} of a number and {stars} stars",
                     top=self.top_number, stars=self.top_star)
        return _("the board ends at {top} of a number", top=self.top_number)


def _lowest_of_face(face: Face, same_face: Bid | None) -> Message:
    """The lowest raise of the same face as a refused bid, or that none is left."""
    if face == STAR:
        return (_("the lowest star bid above it is {bid}", bid=same_face.said())
                if same_face is not None else _("no star bid is left above it"))
    return (_("the lowest bid of {faces} above it is {bid}", faces=_FACE_NAMES[face],
              bid=same_face.said())
            if same_face is not None else _("no bid of {faces} is left above it",
                                            faces=_FACE_NAMES[face]))
