"""The rule set of a game, chosen when it is created (docs/rules.md section 4, classic Bluff)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any


class ExactRule(StrEnum):
    """Who loses when a challenged bid is exactly right."""

    ALL_BUT_BIDDER = "all-but-bidder"      # English, anniversary (postal default)
    NOBODY = "nobody"                      # Czech: the challenger pays the count over the bid, 0
    CHALLENGER = "challenger"              # German basic rule
    EVERYONE = "everyone"                  # German variant
    CHALLENGER_GIVES = "challenger-gives"  # German variant: challenger gives the bidder a die


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

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["exact_rule"] = self.exact_rule.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RuleSet:
        known: dict[str, Any] = {k: data[k] for k in ("dice_per_player", "super_die", "star_bids",
                                      "expose", "board_cap") if k in data}
        if "exact_rule" in data:
            known["exact_rule"] = ExactRule(data["exact_rule"])
        return cls(**known)


POSTAL_RULES = RuleSet()
