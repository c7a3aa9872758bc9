"""Telling a move to one reader: "you" for the reader's own seat, "player 3" for the others.

Every kind's report notes are made once for all (a watcher's report) and once for each
seat, so a player reads "you announce" where the others read "player 3 announces": each
is a whole message of its own (pbem.wording), as languages conjugate "you" and "player 3"
each in their own way.

A note is a ``Told``: its English text (what the record, the web pages and the tests
read) that keeps the message it says (pbem.wording), which the report templates say in
their reader's language.
"""

from __future__ import annotations

from collections.abc import Callable

from pbem.rules.ladder import Bid
from pbem.wording import Message, _, _n

# the kinds' course labels (GameKind.course_label: plain text, as pbem.charts draws it),
# marked here so that the catalogue has them; pbem.charts says them in the reader's
# language
COURSE_LABELS = (_("score"), _("dice held"), _("points"), _("virtual dice"))

# a bid's words ("4 threes": the count and the face one message, as languages put them
# together in their own ways; the same messages as the reports' bid filter)
_BID_WORDS: dict[object, Callable[[int], Message]] = {
    1: lambda q: _n("{n} one", "{n} ones", q),
    2: lambda q: _n("{n} two", "{n} twos", q),
    3: lambda q: _n("{n} three", "{n} threes", q),
    4: lambda q: _n("{n} four", "{n} fours", q),
    5: lambda q: _n("{n} five", "{n} fives", q),
}


def bid_words(bid: Bid) -> Message:
    """A bid as a message: "4 threes", "1 star"."""
    said = _BID_WORDS.get(bid.face)
    return said(bid.quantity) if said is not None else _n("{n} star", "{n} stars",
                                                           bid.quantity)


class Told(str):
    """A line of a report: English text, as a str, that keeps its message (``message``)
    for the templates to say in their reader's language."""

    message: Message

    def __new__(cls, message: Message | str) -> Told:
        told = super().__new__(cls, str(message))
        # (a copy or unpickling passes the text, then restores the message)
        told.message = message if isinstance(message, Message) else Message(str(message))
        return told
