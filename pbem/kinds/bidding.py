"""The order lines of the Bluff kinds (postal and classic): one BID or CHALLENGE a mail,
EXPOSE lines only with a BID (they add up)."""

from __future__ import annotations

from collections.abc import Sequence

from pbem.kinds.base import OrderProblem
from pbem.orders import Order
from pbem.rules.moves import CHALLENGE, BidMove, Move

EXPOSE_EXAMPLE = "e.g. BID 6 threes and, on the next line, EXPOSE 3 3"


def read_bid_order(orders: Sequence[Order]) -> tuple[Order, list[Order], Move]:
    """The move line, the EXPOSE lines and the move they make; raises OrderProblem."""
    moves = [o for o in orders if o.name in ("BID", "CHALLENGE")]
    exposes = [o for o in orders if o.name == "EXPOSE"]
    if not moves:
        if exposes:
            raise OrderProblem("EXPOSE goes with a BID in the same mail, never alone",
                               EXPOSE_EXAMPLE, exposes[0])
        raise OrderProblem("I found no order in your mail",
                           "write one order a line, e.g. BID 6 threes or CHALLENGE")
    if len(moves) > 1:
        raise OrderProblem("one move a turn: your mail has more than one BID or CHALLENGE",
                           "send just the one you mean; a later mail replaces an earlier order",
                           moves[1])
    order = moves[0]
    if exposes and order.name != "BID":
        raise OrderProblem("EXPOSE goes with a BID in the same mail, never with a challenge",
                           EXPOSE_EXAMPLE, exposes[0])
    move: Move = (CHALLENGE if order.name == "CHALLENGE"
                  else BidMove(order.args, tuple(f for e in exposes for f in e.args)))
    return order, exposes, move
