"""Telling a move to one reader: "you" for the reader's own seat, "player 3" for the others.

Every kind's report notes are made once for all (a watcher's report) and once for each
seat, so a player reads "you announce" where the others read "player 3 announces": each
is a whole message of its own (pbem.text.wording), as languages conjugate "you" and "player 3"
each in their own way.

A note is a ``Told``: its English text (what the record, the web pages and the tests
read) that keeps the message it says (pbem.text.wording), which the report templates say in
their reader's language.
"""

from __future__ import annotations

from pbem.rules.ladder import Bid
from pbem.text.wording import Message, Translator, _

# the kinds' course labels (GameKind.course_label: plain text, as pbem.render.charts draws it),
# marked here so that the catalogue has them; pbem.render.charts says them in the reader's
# language
COURSE_LABELS = (_("score"), _("dice held"), _("points"), _("virtual dice"))

# the titles of pbem's own kinds (GameKind.title is their English), by the kind's name:
# the web pages and pbem verify's verdict say them in the reader's language
KIND_TITLES: dict[str, Message] = {"postal": _("postal Bluff"), "classic": _("classic Bluff"),
                                   "cup": _("Cup of Bluff")}


def bid_words(bid: Bid) -> Message:
    """A bid as a message: "4 threes", "1 star" (the rules' own words: Bid.said)."""
    return bid.said()


class Told(str):
    """A line of a report: English text, as a str, that keeps its message (``message``)
    for the templates to say in their reader's language."""

    message: Message

    def __new__(cls, message: Message | str) -> Told:
        told = super().__new__(cls, str(message))
        # (a copy or unpickling passes the text, then restores the message)
        told.message = message if isinstance(message, Message) else Message(str(message))
        return told

    def said(self, tr: Translator) -> str:
        """Its message in ``tr``'s language (a Told among a message's values is said, as
        pbem.text.wording.say says anything with a ``said``)."""
        return self.message.said(tr)
