"""The JSON the kinds read and write (rules, views, records, web tables), by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from pbem.text.wording import Said

# A JSON object as json.loads reads it: its values are any JSON, so they are typed Any.
JSON = dict[str, Any]
JSONMap = Mapping[str, Any]   # the same, read only
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


class MoveExtra(TypedDict, total=False):
    """What a pbem.record/2 adds to a move (Resolution.record): ``dealt``, the dice the seed
    dealt with it (stars as "*"), and ``shown``, the dice an expose showed."""

    dealt: list[object]
    shown: list[dict[str, object]]
