"""The order lines of the Bluff kinds (postal and classic): one BID or CHALLENGE a mail,
EXPOSE lines only with a BID (they add up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pbem.kinds.base import GameKind
from pbem.kinds.jsontypes import BidChart, JSONMap
from pbem.kinds.words import bid_words
from pbem.orders.commands import Order
from pbem.rules.bid_moves import (
    CHALLENGE,
    BidMove,
    Move,
    MoveJSON,
    move_from_json,
    move_to_json,
)
from pbem.rules.dice import face_symbol
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.odds import SeatView, actual_distribution
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _

EXPOSE_EXAMPLE = _("e.g. BID 6 threes and, on the next line, EXPOSE 3 3")
HELP_NOTE = _("The dice show 1 to 5 and a star, which replaces the 6; for a number bid the "
              "stars are wild.")
STANDING_ORDERS_SAID: dict[str, Message] = {
    "CHALLENGE": _("challenge the current bid (or, if there is none, let the robot open)"),
    "RAISE": _("raise to the lowest legal bid (or challenge when no raise is left)"),
    "ROBOT": _("let the robot choose your move"),
    "NONE": _("no standing order: the game's policy decides (normally the robot)")}


def read_bid_order(orders: Sequence[Order]) -> tuple[Order, list[Order], Move]:
    """The move line, the EXPOSE lines and the move they make; raises Refusal."""
    moves = [o for o in orders if o.name in ("BID", "CHALLENGE")]
    exposes = [o for o in orders if o.name == "EXPOSE"]
    if not moves:
        if exposes:
            raise Refusal(_("EXPOSE goes with a BID in the same mail, never alone"),
                          EXPOSE_EXAMPLE, exposes[0])
        raise Refusal(_("I found no order in your mail"),
                      _("write one order a line, e.g. BID 6 threes or CHALLENGE"))
    if len(moves) > 1:
        raise Refusal(_("one move a turn: your mail has more than one BID or CHALLENGE"),
                      _("send just the one you mean; a later mail replaces an earlier order"),
                      moves[1])
    order = moves[0]
    if exposes and order.name != "BID":
        raise Refusal(_("EXPOSE goes with a BID in the same mail, never with a challenge"),
                      EXPOSE_EXAMPLE, exposes[0])
    move: Move = (CHALLENGE if order.name == "CHALLENGE"
                  else BidMove(order.args, tuple(f for e in exposes for f in e.args)))
    return order, exposes, move


def standing_bid_move(policy: str, current: Bid | None, ladder: Ladder) -> Move | None:
    """A standing order as a move: CHALLENGE the current bid, or RAISE to the lowest raise
    (at the top of the board the challenge is the only move left); None if it cannot be."""
    if policy == "CHALLENGE":
        return CHALLENGE if current is not None else None
    if policy == "RAISE":
        bid = ladder.lowest_raise(current)
        return BidMove(bid) if bid is not None else (CHALLENGE if current else None)
    return None


def order_lines(move: Move) -> list[str]:
    """A move as the order lines a player writes."""
    if isinstance(move, BidMove):
        lines = [f"BID {move.bid.quantity} {face_symbol(move.bid.face)}"]
        return lines + ([f"EXPOSE {' '.join(face_symbol(f) for f in move.expose)}"]
                        if move.expose else [])
    return ["CHALLENGE"]


S = TypeVar("S")


class BidMoves(GameKind[S, Move]):
    """The Bluff kinds (postal, classic): their move values, the JSON of these
    (pbem.rules.bid_moves) and the order lines that make them."""

    def move_to_json(self, move: Move) -> MoveJSON:
        return move_to_json(move)

    def move_from_json(self, data: JSONMap) -> Move:
        return move_from_json(dict(data))

    def describe_move(self, move: Move) -> str:
        return str(move)

    def describe_move_said(self, move: Move) -> Message:
        return move.said()

    def order_lines(self, move: Move) -> list[str]:
        return order_lines(move)


def count_chart(view: SeatView, bid: Bid) -> BidChart:
    """The chart of a standing bid for the seat that must answer it (GameKind.bid_charts):
    how many dice may match it in all, from what the seat can see."""
    dist = actual_distribution(view, bid)
    return {"title": bid_words(bid), "quantity": bid.quantity, "rule": "at_least",
            "question": _("How many dice match it in all?"),
            "bars": [[c, dist[c]] for c in sorted(dist)]}
