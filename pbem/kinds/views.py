"""The JSON of pbem's own kinds, by name: their rules, their report.json views and what
their reports add (GameKind.parse_options, view, report_extras).

GameKind declares these as read-only mappings (``KindJSON``); each kind returns its own
shape, so the kind's code and its tests are checked against it. The keys are the ones
schema/*.json and pbem/kinds/schemas document; the server adds its own to a view (the
game, the turn, the players' names: pbem.services.reports.player_view).
"""

from __future__ import annotations

from typing import TypedDict

from pbem.kinds.jsontypes import CupRound, Odds
from pbem.kinds.tables import ClaimJSON, CupScore, LiftedCup, Loss, PointsRow
from pbem.rules.bid_moves import BidJSON
from pbem.rules.ruleset import RulesJSON
from pbem.rules.view import PostalView

# --- the rules -----------------------------------------------------------------------


class ClassicRules(RulesJSON):
    """Classic Bluff's rules JSON: a RuleSet and the Czech "5 dice with six players" (an
    int until the game starts, None in the rules as played)."""

    dice_if_six_players: int | None


class CupRules(TypedDict):
    version: int


# --- classic Bluff's view (pbem.classic.view/1) -----------------------------------------


class ClassicBidJSON(TypedDict):
    """A bid of the round: its bidder, the bid and the faces its expose showed."""

    player: int
    quantity: int
    face: int | str
    exposed: list[int | str]


class ClassicRound(TypedDict):
    """A finished round with every cup shown (public once the cups are up)."""

    round: int
    opener: int
    bids: list[ClassicBidJSON]
    challenger: int
    bidder: int
    bid: BidJSON | None
    actual: int
    outcome: str
    cups: list[LiftedCup]
    losses: list[Loss]
    out: list[int]
    next_opener: int | None


# a player at the table: dice held and their value (the orange die counts two), in or
# out, the hidden dice's count and the exposed ones ("in" is a keyword: the functional form)
ClassicPlayer = TypedDict("ClassicPlayer", {
    "seat": int, "dice": int, "value": int, "super": bool, "in": bool,
    "out_round": int | None, "hidden": int, "exposed": list[int | str],
    "exposed_super": int | str | None})


class ClassicYourDice(TypedDict):
    hidden: list[int | str]
    hidden_super: int | str | None
    exposed: list[int | str]
    exposed_super: int | str | None


class ClassicStanding(TypedDict):
    rank: int
    seat: int
    dice: int
    value: int
    out_round: int | None


class ClassicView(TypedDict):
    kind: str
    round: int
    you: int | None
    rules: ClassicRules
    rules_text: str
    dice_in_play: int
    dice_count: int
    opener: int
    to_move: int | None
    game_over: bool
    winner: int | None
    players: list[ClassicPlayer]
    your_dice: ClassicYourDice | None
    bids: list[ClassicBidJSON]
    current_bid: BidJSON | None
    bidder: int | None
    lowest_raise: BidJSON | None
    odds: Odds | None
    last_round: ClassicRound | None
    standings: list[ClassicStanding] | None


# --- Cup of Bluff's view (pbem.cup.view/1) -------------------------------------------


class CupView(TypedDict):
    """The cup kind's keys of a view (the server adds game, turn, you, key, players,
    deadline): the tokens, the claim, the reader's own roll when they are the Bluffer."""

    phase: str
    round: int
    bluffer: int | None
    to_move: int | None
    waiting_for: str
    centre: list[int]
    centre_points: int
    holdings: list[CupScore]
    claim: ClaimJSON | None
    your_roll: list[int] | None
    your_roll_total: int | None
    can_doublet: bool
    can_steal: bool
    shown_roll: list[int] | None
    last_turn: CupRound | None
    points_table: list[PointsRow]
    game_over: bool


# --- what the reports add (GameKind.report_extras) ----------------------------------------


class PostalExtras(TypedDict):
    """The odds, from the reader's point of view, that each running mini-game's bid holds."""

    odds: dict[int, Odds]


class CupExtras(TypedDict):
    """The last round told to the report's reader ("you")."""

    last_lines: list[str]


__all__ = ["ClassicBidJSON", "ClassicPlayer", "ClassicRound", "ClassicRules", "ClassicStanding",
           "ClassicView", "ClassicYourDice", "CupExtras", "CupRules", "CupView", "PostalExtras",
           "PostalView"]
