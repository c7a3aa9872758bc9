"""What a game kind (postal, classic, cup ...) gives the server.

The server (mail, storage, deadlines, referee commands, reports, the web pages)
knows games only through this interface. A kind is a subclass of ``GameKind``,
generic in its state and its move (``GameKind[PostalState, Move]``), registered
with ``pbem.kinds.register``, as python-chess variants subclass the board. Its
state is an immutable value rebuilt from the seed and the recorded moves; the
server owns the turn counter (one resolution = one turn) and keeps the moves.

A turn is a step in which a set of seats owe an order (``due``): all five in
a postal turn, the one player to move in classic Bluff, the Bluffer or the
Guesser in Cup of Bluff. The turn resolves when every due seat has an order
(or the deadline passes and the missing ones are played for them).

Everything the server would otherwise ask by the kind's name (its report's
template, its view's format, its web tables, its record) is a member here; the
ones with a body are what a kind without more to say answers.
"""

from __future__ import annotations

import json
import random
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pbem.kinds.generic_record import FORMAT as GENERIC_FORMAT
from pbem.kinds.generic_record import GameRows, generic_record
from pbem.kinds.jsontypes import JSON, BidChart, JSONMap, KindJSON, MoveExtra, Odds
from pbem.kinds.tables import Viewer, WebRow
from pbem.orders.commands import Command, Order
from pbem.rules.dice import DiceStream
from pbem.text.wording import Said

# the folders of pbem's own kinds' parts of the JSON schemas (GameKind.schema_dir), by kind
OWN_SCHEMA_PARTS = Path(__file__).parent / "schemas"

S = TypeVar("S")   # the kind's state
M = TypeVar("M")   # the kind's move


@dataclass
class Understood:
    """One order line and what the referee made of it (for the confirmation)."""

    order: Order
    understood: Said                  # said in the player's language
    odds: Odds | None = None


@dataclass
class TakenOrder(Generic[M]):
    move: M
    lines: list[Understood]
    summary: str                      # "BID 6 threes in mini-game 2"


@dataclass
class Resolution(Generic[S]):
    state: S                          # the state after the turn
    notes: list[str] = field(default_factory=list)        # public lines for the report
    # seat -> the dice dealt with its move, as the DB keeps them (pbem.record/1's "dealt")
    extras: dict[int, list[object]] = field(default_factory=dict)
    # seat -> what pbem.record/2 adds to its move: "dealt" (the dice the seed dealt with the
    # move, stars as "*"), "shown" (the dice an expose showed, which one is the orange die)
    record: dict[int, MoveExtra] = field(default_factory=dict)
    # seat -> the notes as told to that seat's player ("you announce"), in place of notes
    seat_notes: dict[int, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Demo:
    """What `pbem demo --rules <kind>` plays: how many robots, the NEWGAME words after
    RULES <kind>, and the most turns it waits for the game to end."""

    players: int
    options: str = ""
    most_turns: int = 2000


class GameKind(ABC, Generic[S, M]):
    """The JSON a kind writes (its rules, moves, views, report extras and record) is a
    KindJSON here, a read-only mapping: each kind returns its own TypedDict (pbem.kinds.views,
    pbem.kinds.tables). What it reads back from the database or a mail (rules, a move, a
    report.json) is a JSONMap: json.loads's, not checked before the kind reads it."""

    name: str                         # the RULES word: postal | classic | cup
    title: str                        # "postal Bluff"
    min_players: int
    max_players: int
    commands: tuple[Command, ...]     # the move orders of this kind (parser and HELP)
    option_help: Said                 # one line on its NEWGAME options
    help_note: Said                   # what HELP says about the game's dice and pieces
    # DEFAULT <word> -> what a standing order does in this kind (the words it accepts),
    # said in the reader's language (str() of one is its English)
    standing_orders: Mapping[str, Said]
    # the folder of its own templates (a kind outside pbem keeps them beside its module),
    # searched after a referee's templates_dir and before pbem's; None: pbem's alone
    template_dir: Path | None = None
    # the Jinja2 template pair of its turn report (NAME.txt.j2, NAME.html.j2); a kind
    # without its own shows the generic one (notes, standings, history)
    report_template: str = "generic_report"
    # the template of macros that draw its tables and scores on the web pages (its look:
    # templates/web/looks/generic.html.j2 says which); the generic look draws the tables
    # by their type and the standings' score alone
    web_look: str = "web/looks/generic.html.j2"
    # what the chart of a game's course draws (pbem.render.charts): a standing's key, its name
    course_key: str = "score"
    course_label: str = "score"
    # the format of its record (``record``): the generic one, or one of its own
    record_format: str = GENERIC_FORMAT
    # what `pbem demo` plays of it (None: its fewest players, no options)
    demo: Demo | None = None
    # the folder of its parts of pbem's JSON schemas (schema_part); None: it has none
    schema_dir: Path | None = None

    @property
    def view_format(self) -> str:
        """The format name of its report.json view."""
        return f"pbem.{self.name}.view/1"

    def schema_part(self, schema_name: str) -> JSON | None:   # a schema document: open
        """Its part of the JSON schema ``schema_name`` of schema/ (the file of that name in
        its schema_dir), which pbem.services.export.schema joins to it: "$defs" (added to
        the schema's), "then" (what a document of this kind follows as well), "one_of" and
        "properties" (added to the oneOf and the properties of the $defs they name). None:
        the kind adds nothing to that schema."""
        path = None if self.schema_dir is None else self.schema_dir / schema_name
        if path is None or not path.is_file():
            return None
        part: JSON = json.loads(path.read_text(encoding="utf-8"))
        return part

    @abstractmethod
    def parse_options(self, words: Sequence[str]) -> KindJSON:
        """NEWGAME words after RULES <kind> -> the rules JSON; raises Refusal."""

    @abstractmethod
    def describe_rules(self, rules: JSONMap) -> str:
        """The rules in words, the kind named first ("classic Bluff, German edition: ..."):
        pages and answers show it alone, without the title again."""

    def played_rules(self, rules: JSONMap, players: int) -> KindJSON:
        """The rules JSON as a game of that many players plays it (what its record and its
        report.json both say): the same game starts from it as from the stored rules."""
        return dict(rules)

    @abstractmethod
    def start(self, rules: JSONMap, stream: DiceStream, players: int) -> S:
        """The state at turn 1 (cups rolled) for seats 1..players."""

    @abstractmethod
    def due(self, state: S) -> dict[int, str]:
        """seat -> what it must do this turn ("bid or challenge in mini-game 2")."""

    def due_seats(self, state: S) -> Collection[int]:
        """The seats that owe a move this turn (``due``'s seats), without saying what each
        must do: a handling asks it for each order (the seat's check, the seats still
        owing), where the words are not read."""
        return self.due(state).keys()

    @property
    def standing_orders_said(self) -> Mapping[str, Said]:
        """``standing_orders`` in the reader's language (where a kind has them as messages)."""
        return self.standing_orders

    def due_said(self, state: S) -> Mapping[int, Said]:
        """``due``, said in the reader's language where the kind's texts are messages."""
        return self.due(state)

    @abstractmethod
    def orders_now(self, state: S, seat: int) -> list[str]:
        """The names of the move orders seat may write now ([] when it owes none), for a
        short error answer that lists only what fits."""

    @abstractmethod
    def take_order(self, state: S, seat: int, orders: Sequence[Order]) -> TakenOrder[M]:
        """Make one move of seat's order lines and check it; raises Refusal."""

    def place(self, state: S, seat: int) -> int:
        """Where seat moves this turn, for the record (the mini-game; 0 if the kind has none)."""
        return 0

    @abstractmethod
    def check(self, state: S, seat: int, move: M) -> None:
        """Raise RulesError unless seat may make move now."""

    @abstractmethod
    def apply(self, state: S, moves: Mapping[int, M], stream: DiceStream) -> Resolution[S]:
        """Play one move for every due seat; the next state and what happened."""

    @abstractmethod
    def robot_move(self, state: S, seat: int, rng: random.Random,
                   level: str = "strong") -> M:
        """The robot's move for seat at a level (pbem.kinds.options.ROBOT_LEVELS)."""

    def standing_move(self, state: S, seat: int, policy: str) -> M | None:
        """A player's standing order (CHALLENGE | RAISE) as a move now, if it is legal."""
        return None

    @abstractmethod
    def move_to_json(self, move: M) -> KindJSON: ...

    @abstractmethod
    def move_from_json(self, data: JSONMap) -> M: ...

    def describe_move(self, move: M) -> str:
        return str(move)

    def describe_move_said(self, move: M) -> Said:
        """``describe_move`` in the reader's language (where the kind says it as a message)."""
        return self.describe_move(move)

    @abstractmethod
    def over(self, state: S) -> bool: ...

    @abstractmethod
    def standings(self, state: S) -> list[dict[str, int]]:
        """[{"rank", "seat", "score"}], best first; ties share a rank."""

    def score_words(self, standing: Mapping[str, int]) -> str:
        """One standing's score in words, for `pbem verify`: "3 points, 2 tokens"."""
        return f"{standing['score']}"

    def report_standing(self, standing: Mapping[str, int]) -> dict[str, int]:
        """What a report's standings row adds to the kind's own keys (postal: its
        virtual dice under their own name)."""
        return {}

    @abstractmethod
    def view(self, state: S, seat: int | None) -> KindJSON:
        """The JSON holdings view for seat (None: the public view, no hidden dice)."""

    @abstractmethod
    def history(self, state: S) -> list[str]:
        """Every move so far, public information only, one line each."""

    def report_extras(self, state: S, seat: int | None) -> KindJSON:
        """Anything more its report template needs (the postal report shows odds); may be {}."""
        return {}

    def bid_charts(self, state: S, seat: int) -> list[BidChart]:
        """For each bid seat must answer now, what its report draws (pbem.render.charts);
        [] when seat answers no bid."""
        return []

    def waiting_for(self, state: S) -> str | None:
        """Whom the game waits for, in words, when its web page says so (Cup of Bluff)."""
        return None

    # --- the web pages -------------------------------------------------------------------

    def web_tables(self, state: S, viewer: Viewer) -> Sequence[WebRow]:
        """Its tables as the web pages draw them (pbem.kinds.tables), as viewer sees them."""
        return []

    def web_scores(self, state: S) -> Sequence[WebRow]:
        """Per seat, what the web pages list beside the player: {"seat", ...}."""
        return []

    def legal_moves(self, state: S, seat: int) -> list[M]:
        """Every move seat may make now (the web page offers each as a mail); [] if none
        or the kind does not list them."""
        return []

    def order_lines(self, move: M) -> list[str]:
        """A move as the order lines a player writes."""
        return [str(move)]

    def move_odds(self, state: S, seat: int, move: M) -> Odds | None:
        """The odds of a move from what seat can see (a bid's), if it has any."""
        return None

    def client_order_lines(self, view: JSONMap, rng: random.Random,
                           level: str = "normal") -> list[str]:
        """A robot at the other end of the mail: the order lines the player of a
        report.json (this kind's view) sends, from the view alone; [] when they have no
        move to make (pbem.demo.robot_client, the demo, the end-to-end tests)."""
        raise ValueError(f"a robot cannot play {self.title} from its reports")

    # --- the record ------------------------------------------------------------------------

    def record(self, rows: GameRows, state: S | None) -> KindJSON:
        """The game's record, as `pbem export` writes it and `pbem verify` reads it: the
        generic pbem.record/2 (pbem.kinds.generic_record), made by replaying the rows; state is the
        state now (None before the start)."""
        return generic_record(self, rows)
