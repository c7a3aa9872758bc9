"""The rule set of a game, chosen when it is created (docs/rules.md section 4, classic Bluff)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypedDict


class ExactRule(StrEnum):
    """Who loses when a challenged bid is exactly right."""

    ALL_BUT_BIDDER = "all-but-bidder"      # English, anniversary (postal default)
    NOBODY = "nobody"                      # Czech: the challenger pays the count over the bid, 0
    CHALLENGER = "challenger"              # German basic rule
    EVERYONE = "everyone"                  # German variant
    CHALLENGER_GIVES = "challenger-gives"  # German variant: challenger gives the bidder a die


class RulesJSON(TypedDict):
    """A RuleSet as a game's rules JSON keeps it (``RuleSet.to_json``): the exact rule by
    its value ("all-but-bidder")."""

    dice_per_player: int
    super_die: bool
    exact_rule: str
    star_bids: bool
    expose: bool
    board_cap: int | None


@dataclass(frozen=True)
class RuleSet:
    """Options of a game. The postal game fixes dice per mini-game (5..1);
    ``dice_per_player`` is for classic play."""

    dice_per_player: int = 5
    super_die: bool = False
    exact_rule: ExactRule = ExactRule.ALL_BUT_BIDDER
    star_bids: bool = True
    expose: bool = True
    board_cap: int | None = None   # 20 for the printed board; None: the track runs to the dice in play

    def __post_init__(self) -> None:
        if not 1 <= self.dice_per_player <= 10:
            raise ValueError("dice per player must be 1..10")
        if self.board_cap is not None and self.board_cap < 1:
            raise ValueError("the board cap must be at least 1")

    def with_options(self, **changes: Any) -> RuleSet:
        return replace(self, **changes)

    def to_json(self) -> RulesJSON:
        return {"dice_per_player": self.dice_per_player, "super_die": self.super_die,
                "exact_rule": self.exact_rule.value, "star_bids": self.star_bids,
                "expose": self.expose, "board_cap": self.board_cap}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuleSet:
        """The rules JSON as the database or a record gives it back, unchecked (Any):
        what RuleSet() refuses raises ValueError."""
        known: dict[str, Any] = {k: data[k] for k in ("dice_per_player", "super_die", "star_bids",
                                      "expose", "board_cap") if k in data}
        if "exact_rule" in data:
            known["exact_rule"] = ExactRule(data["exact_rule"])
        return cls(**known)


POSTAL_RULES = RuleSet()
