"""The holdings of one seat as JSON-ready data (the "minigames" of pbem.bluff.view/1)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from pbem.rules.bid_moves import BidJSON
from pbem.rules.bid_moves import bid_json as plain_bid_json
from pbem.rules.dice import Die, face_json
from pbem.rules.ladder import Bid
from pbem.rules.odds import SeatView, bid_odds
from pbem.rules.postal import SEATS, MiniGame, PlacedBid, PostalState


class YourDice(TypedDict):
    hidden: list[int | str]
    exposed: list[int | str]


class PostalBidJSON(TypedDict):
    """A bid in a mini-game's view: its turn, its bidder, the bid, the faces it exposed."""

    turn: int
    player: int
    quantity: int
    face: int | str
    exposed: NotRequired[list[int | str]]


class PostalChallengeJSON(TypedDict):
    """The challenge that ended a mini-game: seat -> dice lost (keys strings, as JSON has
    them) and the cups as they were lifted."""

    turn: int
    player: int
    bidder: int
    bid: BidJSON | None
    actual: int
    outcome: str
    losses: dict[str, int]
    dice: dict[str, list[int | str]]


class MinigameView(TypedDict):
    """One mini-game of pbem.bluff.view/1 as a seat sees it."""

    number: int
    status: Literal["ended", "active"]
    dice_per_player: int
    to_move: int | None
    your_dice: YourDice | None
    exposed: dict[str, list[int | str]]
    bids: list[PostalBidJSON]
    current_bid: BidJSON | None
    lowest_raise: BidJSON | None
    challenge: PostalChallengeJSON | None


class PostalView(TypedDict):
    """The postal kind's part of pbem.bluff.view/1 (GameKind.view): the server adds the
    game, the turn, the players ..."""

    to_move: int | None
    virtual_dice: dict[str, int]
    minigames: list[MinigameView]
    game_over: bool


def dice_json(dice: tuple[Die, ...]) -> list[int | str]:
    return [face_json(d.face) for d in dice]


def bid_json(bid: Bid | None) -> BidJSON | None:
    return None if bid is None else plain_bid_json(bid)


def _placed_json(b: PlacedBid) -> PostalBidJSON:
    placed: PostalBidJSON = {"turn": b.turn, "player": b.seat, "quantity": b.bid.quantity,
                             "face": face_json(b.bid.face)}
    if b.exposed:
        placed["exposed"] = [face_json(f) for f in b.exposed]
    return placed


def minigame_view(state: PostalState, game: MiniGame, seat: int | None) -> MinigameView:
    """One mini-game as seat sees it; seat None is the public (observer) view."""
    view: MinigameView = {
        "number": game.number,
        "status": "ended" if game.ended else "active",
        "dice_per_player": len(game.cups[0].dice),
        "to_move": state.mover(game.number),
        "your_dice": (None if seat is None else
                      {"hidden": dice_json(game.cup(seat).hidden),
                       "exposed": dice_json(game.cup(seat).exposed)}),
        "exposed": {str(s): dice_json(game.cup(s).exposed) for s in SEATS},
        "bids": [_placed_json(b) for b in game.bids],
        "current_bid": bid_json(game.current_bid),
        "lowest_raise": (None if game.ended else
                         bid_json(state.ladder(game.number).lowest_raise(game.current_bid))),
        "challenge": None,
    }
    if game.challenge is not None:
        c = game.challenge
        view["challenge"] = {
            "turn": c.turn, "player": c.seat, "bidder": c.result.bidder,
            "bid": bid_json(c.result.bid), "actual": c.result.actual,
            "outcome": c.result.outcome,
            "losses": {str(s): n for s, n in sorted(c.result.losses.items())},
            "dice": {str(s): dice_json(d) for s, d in sorted(c.table.items())},
        }
    return view


def odds_view(state: PostalState, seat: int) -> dict[int, dict[str, float]]:
    """The odds, from seat's point of view, that each running mini-game's bid holds."""
    result: dict[int, dict[str, float]] = {}
    for game in state.minigames:
        if not game.ended and game.current_bid is not None:
            odds = bid_odds(dice_known(state, seat, game.number), game.current_bid)
            result[game.number] = {"holds": odds.holds, "exact": odds.exact}
    return result


def dice_known(state: PostalState, seat: int, number: int) -> SeatView:
    """``state.seat_view(seat, number)`` as far as the odds read it (bid_odds,
    actual_distribution): the seat's own dice, the dice the others exposed, how many they
    hide. Not what the robot reads besides (every seat's bids and answers in every
    mini-game, four fifths of the seat view's cost: bench/scale.py --profile): a report's
    odds, an order's confirmation and a bid's chart ask this. tests/rules/test_rules_view.py
    holds the two alike."""
    game = state.minigame(number)
    others = [c for s, c in enumerate(game.cups, start=1) if s != seat]
    hidden = [d for c in others for d in c.hidden]
    supers = sum(1 for d in hidden if d.super)
    return SeatView(seat=seat, own=game.cup(seat),
                    others_exposed=tuple(d for c in others for d in c.exposed),
                    unknown_plain=len(hidden) - supers, unknown_super=supers,
                    current=game.current_bid, ladder=state.ladder(number), rules=state.rules)


def holdings(state: PostalState, seat: int | None) -> PostalView:
    """The rules part of a report: to_move, virtual dice, mini-games, game_over."""
    return {
        "to_move": None if seat is None else state.due().get(seat),
        "virtual_dice": {str(s): v for s, v in zip(SEATS, state.virtual_dice)},
        "minigames": [minigame_view(state, g, seat) for g in state.minigames],
        "game_over": state.game_over,
    }
