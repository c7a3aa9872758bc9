"""The holdings of one seat as JSON-ready data (the "minigames" of pbem.bluff.view/1)."""

from __future__ import annotations

from typing import Any

from pbem.rules.dice import Die, face_json
from pbem.rules.ladder import Bid
from pbem.rules.odds import bid_odds
from pbem.rules.postal import SEATS, MiniGame, PostalState


def dice_json(dice: tuple[Die, ...]) -> list[int | str]:
    return [face_json(d.face) for d in dice]


def bid_json(bid: Bid | None) -> dict[str, Any] | None:
    return None if bid is None else {"quantity": bid.quantity, "face": face_json(bid.face)}


def minigame_view(state: PostalState, game: MiniGame, seat: int | None) -> dict[str, Any]:
    """One mini-game as seat sees it; seat None is the public (observer) view."""
    view: dict[str, Any] = {
        "number": game.number,
        "status": "ended" if game.ended else "active",
        "dice_per_player": len(game.cups[0].dice),
        "to_move": state.mover(game.number),
        "your_dice": (None if seat is None else
                      {"hidden": dice_json(game.cup(seat).hidden),
                       "exposed": dice_json(game.cup(seat).exposed)}),
        "exposed": {str(s): dice_json(game.cup(s).exposed) for s in SEATS},
        "bids": [{"turn": b.turn, "player": b.seat, "quantity": b.bid.quantity,
                  "face": face_json(b.bid.face),
                  **({"exposed": [face_json(f) for f in b.exposed]} if b.exposed else {})}
                 for b in game.bids],
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
            odds = bid_odds(state.seat_view(seat, game.number), game.current_bid)
            result[game.number] = {"holds": odds.holds, "exact": odds.exact}
    return result


def holdings(state: PostalState, seat: int | None) -> dict[str, Any]:
    """The rules part of a report: to_move, virtual dice, mini-games, game_over."""
    return {
        "to_move": None if seat is None else state.due().get(seat),
        "virtual_dice": {str(s): v for s, v in zip(SEATS, state.virtual_dice)},
        "minigames": [minigame_view(state, g, seat) for g in state.minigames],
        "game_over": state.game_over,
    }
