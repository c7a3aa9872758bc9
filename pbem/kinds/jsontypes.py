"""The JSON the kinds read and write (rules, views, records, web tables), by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from pbem.text.wording import Said

# A JSON object as json.loads reads it, before anything checked its shape: its values are
# any JSON, so they are typed Any. Kept only for what comes back unchecked (a game's rules
# and moves from the database, a record to verify, a report.json a robot player reads, a
# schema document); what pbem writes has a name (a TypedDict) and is a KindJSON outside
# its kind.
JSON = dict[str, Any]
JSONMap = Mapping[str, Any]   # the same, read only
# A JSON object whose shape its kind knows (the kind's own TypedDict: pbem.kinds.views,
# pbem.kinds.tables), as GameKind declares it for every kind: read only, values object.
KindJSON = Mapping[str, object]
# a move's odds as the confirmation and the web pages show them: {"holds", "exact"}
Odds = dict[str, float]


class BidChart(TypedDict):
    """What a report draws of a bid its reader must answer now (GameKind.bid_charts,
    pbem.render.charts): how many matching dice (or what total) there may be, from what the
    reader can see; ``bars``: [n, its probability]."""

    title: Said
    quantity: int
    rule: Literal["at_least", "exactly"]
    question: Said
    bars: list[list[float]]


class CupRound(TypedDict):
    """A Cup of Bluff round, revealed (pbem.kinds.cup.record_json): a view's last_turn, the
    rounds of its web table."""

    round: int
    bluffer: int
    action: str
    total: int
    guesser: int | None
    roll: list[int]
    roll_total: int
    truthful: bool | None
    answer: Literal["OK", "BLUFF"] | None
    winner: int | None
    given: int | None
    returned: list[int]
    lines: list[str]


class ShownDie(TypedDict):
    """A die an expose showed: its face, and whether it is the orange super die."""

    face: int | str
    orange: bool


class MoveExtra(TypedDict, total=False):
    """What a pbem.record/2 adds to a move (Resolution.record): ``dealt``, the dice the seed
    dealt with it (stars as "*"), and ``shown``, the dice an expose showed."""

    dealt: list[int | str]
    shown: list[ShownDie]
