"""Moves a player can make in a Bluff game."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict

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


class BidJSON(TypedDict):
    """A bid as the views, records and web tables write it: how many of which face (a
    star: "*")."""

    quantity: int
    face: int | str


class BidMoveJSON(TypedDict):
    """A BID as a move's JSON: the bid, and the faces it exposed, if any."""

    bid: BidJSON
    expose: NotRequired[list[int | str]]


class ChallengeMoveJSON(TypedDict):
    challenge: Literal[True]


MoveJSON = BidMoveJSON | ChallengeMoveJSON


def bid_json(bid: Bid) -> BidJSON:
    return {"quantity": bid.quantity, "face": face_json(bid.face)}


def move_to_json(move: Move) -> MoveJSON:
    if isinstance(move, ChallengeMove):
        return {"challenge": True}
    data: BidMoveJSON = {"bid": bid_json(move.bid)}
    if move.expose:
        data["expose"] = [face_json(f) for f in move.expose]
    return data


def move_from_json(data: Mapping[str, Any]) -> Move:
    """A move's JSON as the database or a record gives it back, unchecked (Any): anything
    not a move raises MalformedMove."""
    if data.get("challenge") is True:
        return CHALLENGE
    try:
        bid = data["bid"]
        return BidMove(Bid(int(bid["quantity"]), face_from_json(bid["face"])),
                       tuple(face_from_json(f) for f in data.get("expose", ())))
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedMove(_("not a move: {data}", data=repr(data))) from exc
