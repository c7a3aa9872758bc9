"""The data of each web page, by name: what the JSON endpoints return and the HTML
templates draw (``schema/web-api.schema.json`` documents it; pbem.web.pages builds it).

A kind's own parts (its tables, the scores it lists beside each player, the keys of its
standings) keep the kind's shape, which the kinds name (pbem.kinds.tables): here they are
read-only mappings, as GameKind declares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from pbem.kinds.jsontypes import BidChart, Odds
from pbem.kinds.tables import WebRow
from pbem.render.charts import Course
from pbem.text.wording import Message, Said

# a seat's row of the standings: the kind's keys (rank, seat, score ...) and the name
StandingRow = dict[str, int | str]
# a seat's row on a game page: seat, name, due, order_in, awaited and the kind's scores
PlayerRow = dict[str, object]


class Verification(TypedDict):
    """`pbem verify` of a finished game's record, as its pages show it."""

    ok: bool
    lines: list[str]


class OrderChoice(TypedDict):
    """A legal order on a player's page: its lines, its odds (a bid's, if worked out),
    a mailto: link that sends it."""

    lines: list[str]
    odds: Odds | None
    mailto: str


class DeadlineFields(TypedDict):
    """The deadline and how far off it is; a paused game has the time it will have left."""

    deadline: str | None
    deadline_relative: Message | None
    paused_left: Message | None


class Links(TypedDict):
    page: str
    json: str
    replay: str | None
    record: str | None


# a line of the table talk ("from" is a keyword: the functional form)
TalkLine = TypedDict("TalkLine", {"turn": int, "seat": int | None, "name": str,
                                  "from": Said, "text": str, "at": str | None})


class IndexRow(TypedDict):
    game: str
    kind: str
    kind_title: str
    status: str
    players: int
    min_players: int
    max_players: int
    turn: int
    deadline: str | None
    deadline_relative: Message | None
    paused_left: Message | None
    ended_at: str | None
    join: Message | None
    url: str


class Listing(TypedDict):
    """One section of the index (running, open, finished ...), one page of it."""

    name: str
    title: Message
    total: int
    page: int
    pages: int
    games: list[IndexRow]
    prev: str | None
    next: str | None
    all: str


class IndexPage(TypedDict):
    format: str
    server_address: str
    generated_at: str | None
    sections: list[Listing]


class GamePage(TypedDict):
    """pbem.web.game/1: a game as the public sees it (or one seat, on a private page)."""

    format: str
    game: str
    kind: str
    kind_title: str
    rules_text: str
    status: str
    turn: int
    deadline: str | None
    deadline_relative: Message | None
    paused_left: Message | None
    grace_until: str | None
    started_at: str | None
    ended_at: str | None
    server_address: str
    join: Message | None
    players: list[PlayerRow]
    names: dict[str, str]
    awaited: list[int]
    orders_in: list[int]
    waiting_for: str | None
    tables: Sequence[WebRow]
    standings: list[StandingRow] | None
    course: Course | None
    history: list[str]
    talk: list[TalkLine]
    commitment: str
    seed: str | None
    links: Links
    verification: Verification | None


class You(TypedDict):
    """The reader of a private page: their seat, what they owe, their key, their orders."""

    seat: int
    name: str
    due: Said | None
    order_in: bool
    game_line: str
    key_line: str
    blank_mailto: str
    orders: list[OrderChoice]
    charts: list[BidChart]
    link_expires: str | None


class PrivatePage(GamePage):
    """pbem.web.private/1: the game page as one seat sees it, and the seat's own part."""

    you: You


class SeatName(TypedDict):
    seat: int
    name: str


class ReplayMove(TypedDict):
    seat: int
    name: str
    by: str
    move: Said


class ReplayPage(TypedDict):
    """pbem.web.replay/1: a finished game at one step, every die shown."""

    format: str
    game: str
    kind: str
    kind_title: str
    step: int
    last: int
    turn: int
    players: list[SeatName]
    names: dict[str, str]
    moves: list[ReplayMove]
    notes: list[str]
    tables: Sequence[WebRow]
    scores: Sequence[WebRow]
    standings: list[StandingRow] | None
    course: Course
    prev: str | None
    next: str | None
    first: str
    end: str
    commitment: str
    seed: str
    links: Links
    verification: Verification | None
