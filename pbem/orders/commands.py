"""The commands of the order language, and what reading a mail's lines yields.

Each command (as in GNU Mailman's email commands) is a small object with its
name, aliases, usage, a one-line summary and an argument parser: one table of
commands drives the parser (pbem.orders.parsing), HELP (pbem.orders.guidance) and
the docs. A ``Command`` here is a command's syntax, who may write it and its phase;
a move order of a game kind (BID, ANNOUNCE ...) is nothing more, the kind takes it.
The commands layer declares the rest (pbem.commands.context.MailCommand: the same
and an action) and lists them all in pbem.commands.registry.

A mail's lines come in as anything with a ``number`` and a ``text`` (``TextLine``;
pbem.mail.text.BodyLine is one) and are read into ``Order``s, problems and prose
(``ParsedText``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pbem.orders.arguments import game_name, no_args, one_word, parse_bid, parse_faces, parse_turn
from pbem.text.errors import LineProblem
from pbem.text.wording import Said, _


class TextLine(Protocol):
    """One line of a mail's new text: its 1-based number and the text (quoted in errors)."""

    @property
    def number(self) -> int: ...

    @property
    def text(self) -> str: ...


# who may use a command: a known player (a reply to a report, or GAME + KEY), the referee,
# or anyone who writes (HELP, JOIN ...)
Who = Literal["player", "referee", "anyone"]
# when a command runs in a player mail: "change" first (SAY, JOIN ...), then the "move"
# (the game's kind takes it), then a "look" (HISTORY, ORDERS: it shows what the mail
# changed); a "reply" (HELP, STATUS) answers only a mail with nothing else to do; a "line"
# never runs (GAME, KEY, TURN: read by the commands that need them). A referee mail runs
# its commands in the order of its lines.
Phase = Literal["line", "change", "move", "look", "reply"]


@dataclass(frozen=True)
class Command:
    """A command as the parser and HELP see it: its name (and other spellings), its usage,
    a one-line summary (the help text), its argument parser, who may write it and its
    phase; by default a player's move order, as a game kind declares them."""

    name: str
    usage: str
    summary: Said               # said in the reader's language (HELP)
    parse: Callable[[list[str]], Any]
    aliases: tuple[str, ...] = ()
    who: Who = "player"
    phase: Phase = "move"

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Order:
    line_no: int
    line: str
    command: Command
    args: Any
    # the language of the order word written (pbem.orders.words), None for an English one
    language: str | None = None
    # the order the line was read as, when it was not written as one ("Ich biete drei
    # Fünfer." -> "BIETE 3 Fünfer"): the confirmation shows what was read
    read_as: str | None = None

    @property
    def name(self) -> str:
        return self.command.name


@dataclass(frozen=True)
class SeatByName:
    """An order that names a player (ANNOUNCE 5 TO Finn): the parser does not know the
    game's players, so the shell finds the seat (``seat_for``) and builds the order."""

    name: str
    build: Callable[[int], Any]

    def seat_for(self, names: dict[int, str]) -> int | None:
        """The seat whose player has this name (case and spacing aside; a unique start
        of a name will do); None if no one, or more than one, fits."""
        wanted = " ".join(self.name.lower().split())
        exact = [s for s, n in names.items() if " ".join(n.lower().split()) == wanted]
        if len(exact) == 1:
            return exact[0]
        starts = [s for s, n in names.items() if n.lower().startswith(wanted)]
        return starts[0] if len(starts) == 1 and not exact else None


@dataclass
class ParsedText:
    orders: list[Order] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    prose: list[TextLine] = field(default_factory=list)

    def first(self, name: str) -> Order | None:
        return next((o for o in self.orders if o.name == name), None)

    def all(self, name: str) -> list[Order]:
        return [o for o in self.orders if o.name == name]

    @property
    def language(self) -> str | None:
        """The language the mail's orders were written in (that of its first order word
        of another language than English), None if only English words were used."""
        return next((o.language for o in self.orders if o.language), None)


# --- player orders ----------------------------------------------------------

# the lines of a fresh player mail that say who writes and for which turn
MAIL_LINES: tuple[Command, ...] = (
    Command("GAME", "GAME <game>", _("in a fresh mail (not a reply): the game you play in"),
            game_name, who="anyone", phase="line"),
    Command("KEY", "KEY <key>", _("in a fresh mail: your order key from your report"),
            one_word("key"), who="anyone", phase="line"),
    Command("TURN", "TURN <n>", _("optional: the turn your order is for"), parse_turn,
            who="anyone", phase="line"),
)
# the bid orders (postal and classic Bluff take them) and the lines of a player mail
PLAYER_COMMANDS: tuple[Command, ...] = (
    Command("BID", "BID <quantity> <face>",
            _("raise to a new bid, e.g. BID 6 threes or BID 4 stars"), parse_bid),
    Command("CHALLENGE", "CHALLENGE", _("challenge the current bid (cups up)"), no_args,
            aliases=("CUPS UP", "LIAR")),
    Command("EXPOSE", "EXPOSE <face> [<face> ...]",
            _("with a BID: show these dice from your cup and re-roll the rest"), parse_faces),
    *MAIL_LINES,
)
