"""What a game kind (postal, classic, cup ...) gives the server.

The server (mail, storage, deadlines, referee commands) knows games only
through this interface. A kind is a module with one object implementing
``GameKind``, listed in ``pbem.kinds.KINDS``. Its state is an immutable value
rebuilt from the seed and the recorded moves; the server owns the turn
counter (one resolution = one turn) and keeps the moves.

A turn is a step in which a set of seats owe an order (``due``): all five in
a postal turn, the one player to move in classic Bluff, the Bluffer or the
Guesser in Cup of Bluff. The turn resolves when every due seat has an order
(or the deadline passes and the missing ones are played for them).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pbem.orders import Command, Order
from pbem.rules.dice import DiceStream


class OrderProblem(Exception):
    """A player's order lines cannot make a move; said to them with the line quoted."""

    def __init__(self, message: str, hint: str = "", order: Order | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.order = order


@dataclass
class Understood:
    """One order line and what the referee made of it (for the confirmation)."""

    order: Order
    understood: str
    odds: dict[str, float] | None = None


@dataclass
class TakenOrder:
    move: Any                         # the kind's move value
    lines: list[Understood]
    summary: str                      # "BID 6 threes in mini-game 2"


@dataclass
class Resolution:
    state: Any                        # the state after the turn
    notes: list[str] = field(default_factory=list)        # public lines for the report
    # seat -> the dice dealt with its move, as the DB keeps them (pbem.record/1's "dealt")
    extras: dict[int, list[Any]] = field(default_factory=dict)
    # seat -> what pbem.record/2 adds to its move: "dealt" (the dice the seed dealt with the
    # move, stars as "*"), "shown" (the dice an expose showed, which one is the orange die)
    record: dict[int, dict[str, Any]] = field(default_factory=dict)
    # seat -> the notes as told to that seat's player ("you announce"), in place of notes
    seat_notes: dict[int, list[str]] = field(default_factory=dict)


class GameKind(Protocol):
    name: str                         # the RULES word: postal | classic | cup
    title: str                        # "postal Bluff"
    min_players: int
    max_players: int
    commands: tuple[Command, ...]     # the move orders of this kind (parser and HELP)
    report_template: str              # the Jinja2 template name of its turn report
    option_help: str                  # one line on its NEWGAME options
    help_note: str                    # what HELP says about the game's dice and pieces
    # DEFAULT <word> -> what a standing order does in this kind (the words it accepts)
    standing_orders: Mapping[str, str]

    def parse_options(self, words: Sequence[str]) -> dict[str, Any]:
        """NEWGAME words after RULES <kind> -> the rules JSON; raises OrderError."""
        ...

    def describe_rules(self, rules: Mapping[str, Any]) -> str: ...

    def played_rules(self, rules: Mapping[str, Any], players: int) -> dict[str, Any]:
        """The rules JSON as a game of that many players plays it (what its record and its
        report.json both say): the same game starts from it as from the stored rules."""
        ...

    def start(self, rules: Mapping[str, Any], stream: DiceStream, players: int) -> Any:
        """The state at turn 1 (cups rolled) for seats 1..players."""
        ...

    def due(self, state: Any) -> dict[int, str]:
        """seat -> what it must do this turn ("bid or challenge in mini-game 2")."""
        ...

    def orders_now(self, state: Any, seat: int) -> list[str]:
        """The names of the move orders seat may write now ([] when it owes none), for a
        short error answer that lists only what fits."""
        ...

    def take_order(self, state: Any, seat: int, orders: Sequence[Order]) -> TakenOrder:
        """Make one move of seat's order lines and check it; raises OrderProblem."""
        ...

    def place(self, state: Any, seat: int) -> int:
        """Where seat moves this turn, for the record (the mini-game; 0 if the kind has none)."""
        ...

    def check(self, state: Any, seat: int, move: Any) -> None:
        """Raise RulesError unless seat may make move now."""
        ...

    def apply(self, state: Any, moves: Mapping[int, Any], stream: DiceStream) -> Resolution:
        """Play one move for every due seat; the next state and what happened."""
        ...

    def robot_move(self, state: Any, seat: int, rng: random.Random,
                   level: str = "strong") -> Any: ...

    def standing_move(self, state: Any, seat: int, policy: str) -> Any | None:
        """A player's standing order (CHALLENGE | RAISE) as a move now, if it is legal."""
        ...

    def move_to_json(self, move: Any) -> dict[str, Any]: ...

    def move_from_json(self, data: Mapping[str, Any]) -> Any: ...

    def describe_move(self, move: Any) -> str: ...

    def over(self, state: Any) -> bool: ...

    def standings(self, state: Any) -> list[dict[str, int]]:
        """[{"rank", "seat", "score"}], best first; ties share a rank."""
        ...

    def view(self, state: Any, seat: int | None) -> dict[str, Any]:
        """The JSON holdings view for seat (None: the public view, no hidden dice)."""
        ...

    def history(self, state: Any) -> list[str]:
        """Every move so far, public information only, one line each."""
        ...

    def report_extras(self, state: Any, seat: int | None) -> dict[str, Any]:
        """Anything more its report template needs (the postal report shows odds); may be {}."""
        ...
