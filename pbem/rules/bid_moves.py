"""Moves a player can make in a Bluff game."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pbem.rules.dice import Face, face_from_json, face_json
from pbem.rules.errors import MalformedMove
from pbem.rules.ladder import Bid
from pbem.text.wording import Message, _


@dataclass(frozen=True)
class BidMove:
    """A bid, optionally followed by exposing some hidden dice and re-rolling the rest."""

    bid: Bid
    expose: tuple[Face, ...] = ()

    def __str__(self) -> str:
        if not self.expose:
            return f"BID {self.bid}"
        shown = " ".join("*" if f == 6 else str(f) for f in self.expose)
        return f"BID {self.bid}, EXPOSE {shown}"

    def said(self) -> Message:
        """The move in its reader's language (``str()``: English)."""
        if not self.expose:
            return _("BID {bid}", bid=self.bid.said())
        return _("BID {bid}, EXPOSE {shown}", bid=self.bid.said(),
                 shown=" ".join("*" if f == 6 else str(f) for f in self.expose))


@dataclass(frozen=True)
class ChallengeMove:
    def __str__(self) -> str:
        return "CHALLENGE"

    def said(self) -> Message:
        return _("CHALLENGE")


Move = BidMove | ChallengeMove
CHALLENGE = ChallengeMove()


def move_to_json(move: Move) -> dict[str, Any]:
    if isinstance(move, ChallengeMove):
        return {"challenge": True}
    data: dict[str, Any] = {"bid": {"quantity": move.bid.quantity, "face": face_json(move.bid.face)}}
    if move.expose:
        data["expose"] = [face_json(f) for f in move.expose]
    return data


def move_from_json(data: dict[str, Any]) -> Move:
    if data.get("challenge") is True:
        return CHALLENGE
    try:
        bid = data["bid"]
        return BidMove(Bid(int(bid["quantity"]), face_from_json(bid["face"])),
                       tuple(face_from_json(f) for f in data.get("expose", ())))
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedMove(_("not a move: {data}", data=repr(data))) from exc
