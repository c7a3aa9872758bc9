"""A game's tables as the web pages draw them, from the kind's state (``GameKind.web_tables``).

One table is a postal mini-game, a classic round or the Cup of Bluff table. What
a table shows depends on who looks (``Viewer``):

- the public (``PUBLIC``): bids, exposed dice, the cups of a challenge once they
  were lifted, never a hidden die;
- one seat (``Viewer(seat)``): that seat's own hidden dice too, and its odds;
- the replay of a finished game (``REVEAL``): every die, the seed being public.

Every value is JSON-ready; the JSON endpoints return these dicts as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from pbem.kinds.jsontypes import CupRound, Odds
from pbem.kinds.words import Told
from pbem.rules import cupofbluff as cb
from pbem.rules.bid_moves import BidJSON
from pbem.rules.challenge import count_matching
from pbem.rules.classic import ClassicState, RoundEnd
from pbem.rules.classic import PlacedBid as ClassicBid
from pbem.rules.cupofbluff import CupState
from pbem.rules.dice import Die, Face, face_json
from pbem.rules.dice_cup import Cup
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.odds import bid_odds
from pbem.rules.postal import SEATS, MiniGame, PostalState, make_ladder
from pbem.rules.view import odds_view
from pbem.text.wording import _


class PointsRow(TypedDict):
    points: int
    tokens: list[int]


# Cup of Bluff: the tokens of each value in points, best first
POINTS_TABLE: list[PointsRow] = [{"points": p, "tokens": [t for t in cb.TOKENS if cb.points(t) == p]}
                                 for p in (5, 4, 3, 2, 1)]


@dataclass(frozen=True)
class Viewer:
    seat: int | None = None           # whose own dice are shown
    reveal: bool = False              # every die (a finished game's replay)

    def sees(self, seat: int) -> bool:
        return self.reveal or self.seat == seat


PUBLIC = Viewer()
REVEAL = Viewer(reveal=True)


class TrackSpace(TypedDict):
    """A space of the board's track: its number or star, the bids on it (their indexes),
    whether the current bid stands on it or passed it."""

    quantity: int
    star: bool
    bids: list[int]
    current: bool
    passed: bool


class CupJSON(TypedDict):
    """A seat's cup on a web table: its hidden dice (None: the viewer may not see them) and
    its exposed ones, the orange super die apart."""

    seat: int
    hidden_count: int
    hidden: list[int | str] | None
    hidden_super: int | str | None
    holds_super: bool
    exposed: list[int | str]
    exposed_super: int | str | None
    mine: bool


class LiftedCup(TypedDict):
    """A cup as everyone saw it at a challenge, with the dice of it that counted."""

    seat: int
    dice: list[int | str]
    super: int | str | None
    counted: int


class PlacedBid(TypedDict):
    """A bid on a bluff table: its turn (postal; classic: None), its bidder, the bid and the
    dice its expose showed."""

    turn: int | None
    seat: int
    quantity: int
    face: int | str
    exposed: list[int | str]


class Loss(TypedDict):
    seat: int
    lost: int


class ChallengeJSON(TypedDict):
    """The challenge that ended a mini-game or a round: the bid, the dice that matched it,
    who lost what, the cups as they were lifted."""

    turn: int | None
    seat: int
    bidder: int
    bid: BidJSON | None
    actual: int
    outcome: str
    losses: list[Loss]
    out: list[int]
    cups: list[LiftedCup]
    next_opener: NotRequired[int | None]      # classic


class BluffTable(TypedDict):
    """A postal mini-game or a classic round as the web pages draw it (type "bluff")."""

    type: Literal["bluff"]
    title: Told
    number: int
    bids: list[PlacedBid]
    current_bid: BidJSON | None
    bidder: int | None
    lowest_raise: BidJSON | None
    track: list[TrackSpace]
    status: Literal["running", "ended"]
    dice_in_play: int
    dice_count: int
    dice_per_player: int | None
    opener: NotRequired[int | None]           # classic
    to_move: int | None
    cups: list[CupJSON]
    challenge: ChallengeJSON | None
    odds: Odds | None


# a table of any kind, or one seat's scores, as the JSON endpoints give them
WebRow = Mapping[str, object]


class BoardToken(TypedDict):
    token: int
    points: int
    owner: int | None


class ClaimJSON(TypedDict):
    """The Bluffer's claim in play: what, to whom, its chance, the Guesser's answer."""

    action: str
    total: int
    guesser: int | None
    chance: float
    answer: Literal["OK", "BLUFF"] | None


class CupTable(TypedDict):
    """The Cup of Bluff table as the web pages draw it (type "cup")."""

    type: Literal["cup"]
    title: Told
    status: Literal["running", "ended"]
    phase: str
    round: int
    bluffer: int | None
    to_move: int | None
    waiting_for: Told
    centre: list[int]
    centre_points: int
    board: list[BoardToken]
    claim: ClaimJSON | None
    roll: list[int] | None
    roll_is_yours: bool
    rounds: list[CupRound]
    points_table: list[PointsRow]


class PostalScore(TypedDict):
    seat: int
    virtual_dice: int


# the dice a classic player holds, their value (the orange die counts two), whether they
# are still in and the round they went out in ("in" is a keyword: the functional form)
ClassicScore = TypedDict("ClassicScore", {"seat": int, "dice": int, "value": int, "super": bool,
                                          "in": bool, "out_round": int | None})


class CupScore(TypedDict):
    """A Cup of Bluff player's points and tokens."""

    seat: int
    points: int
    tokens: list[int]
    count: int


def faces(dice: Sequence[Die]) -> list[int | str]:
    """The plain dice's faces (the orange super die is listed apart)."""
    return [face_json(d.face) for d in dice if not d.super]


def orange(dice: Sequence[Die]) -> int | str | None:
    return next((face_json(d.face) for d in dice if d.super), None)


def bid_json(bid: Bid | None) -> BidJSON | None:
    return None if bid is None else {"quantity": bid.quantity, "face": face_json(bid.face)}


def track(ladder: Ladder, bids: Sequence[Bid]) -> list[TrackSpace]:
    """The board's track (number and star spaces, lowest first) with the bids on it."""
    spaces: dict[int, TrackSpace] = {}
    for bid in ladder.bids:
        spaces.setdefault(bid.position, {"quantity": bid.quantity, "star": bid.is_star,
                                         "bids": [], "current": False, "passed": False})
    current = bids[-1] if bids else None
    for i, bid in enumerate(bids):
        space = spaces.setdefault(bid.position, {"quantity": bid.quantity, "star": bid.is_star,
                                                 "bids": [], "current": False, "passed": False})
        space["bids"].append(i)
    for position, space in spaces.items():
        space["current"] = current is not None and position == current.position
        space["passed"] = current is not None and position < current.position
    return [spaces[p] for p in sorted(spaces)]


def cup_json(seat: int, cup: Cup, viewer: Viewer, mine: bool = False) -> CupJSON:
    shown = viewer.sees(seat)
    return {"seat": seat, "hidden_count": len(cup.hidden),
            "hidden": faces(cup.hidden) if shown else None,
            "hidden_super": orange(cup.hidden) if shown else None,
            "holds_super": any(d.super for d in cup.hidden),
            "exposed": faces(cup.exposed), "exposed_super": orange(cup.exposed),
            "mine": mine}


def lifted_cups(table: dict[int, tuple[Die, ...]], bid: Bid) -> list[LiftedCup]:
    """The cups as everyone saw them at a challenge, with the dice that counted."""
    return [{"seat": s, "dice": faces(d), "super": orange(d), "counted": count_matching(d, bid)}
            for s, d in sorted(table.items())]


def _bluff_table(title: Told, number: int, ladder: Ladder, bids: list[PlacedBid],
                 placed: Sequence[Bid], *, status: Literal["running", "ended"],
                 dice_in_play: int, dice_count: int, dice_per_player: int | None,
                 to_move: int | None, cups: list[CupJSON], challenge: ChallengeJSON | None,
                 odds: Odds | None) -> BluffTable:
    current = placed[-1] if placed else None
    running = status == "running"
    return {"type": "bluff", "title": title, "number": number, "bids": bids,
            "current_bid": bid_json(current),
            "bidder": bids[-1]["seat"] if bids else None,
            "lowest_raise": bid_json(ladder.lowest_raise(current)) if running else None,
            "track": track(ladder, placed), "status": status, "dice_in_play": dice_in_play,
            "dice_count": dice_count, "dice_per_player": dice_per_player, "to_move": to_move,
            "cups": cups, "challenge": challenge, "odds": odds}


def _placed(turn: int | None, seat: int, bid: Bid, exposed: Sequence[Face]) -> PlacedBid:
    return {"turn": turn, "seat": seat, "quantity": bid.quantity, "face": face_json(bid.face),
            "exposed": [face_json(f) for f in exposed]}


# --- postal -------------------------------------------------------------------------------

def _postal_minigame(state: PostalState, game: MiniGame, viewer: Viewer,
                     odds: dict[int, dict[str, float]]) -> BluffTable:
    bids = [_placed(b.turn, b.seat, b.bid, b.exposed) for b in game.bids]
    challenge: ChallengeJSON | None = None
    if game.challenge is not None:
        c, r = game.challenge, game.challenge.result
        challenge = {"turn": c.turn, "seat": c.seat, "bidder": r.bidder, "bid": bid_json(r.bid),
                     "actual": r.actual, "outcome": r.outcome,
                     "losses": [{"seat": s, "lost": n} for s, n in sorted(r.losses.items())],
                     "out": [], "cups": lifted_cups(c.table, r.bid)}
    return _bluff_table(
        Told(_("Mini-game {number}", number=game.number)), game.number, state.ladder(game.number), bids,
        [b.bid for b in game.bids], status="ended" if game.ended else "running",
        dice_in_play=game.dice_in_play, dice_count=sum(len(cup.dice) for cup in game.cups),
        dice_per_player=len(game.cups[0].dice),
        to_move=state.mover(game.number),
        cups=[] if game.ended else [cup_json(s, game.cup(s), viewer, s == viewer.seat)
                                    for s in SEATS],
        challenge=challenge, odds=odds.get(game.number))


def postal_tables(state: PostalState, viewer: Viewer) -> list[BluffTable]:
    odds = odds_view(state, viewer.seat) if viewer.seat is not None else {}
    return [_postal_minigame(state, g, viewer, odds) for g in state.minigames]


def postal_scores(state: PostalState) -> list[PostalScore]:
    return [{"seat": s, "virtual_dice": v} for s, v in zip(SEATS, state.virtual_dice)]


# --- classic ------------------------------------------------------------------------------

def _classic_bids(bids: Sequence[ClassicBid]) -> list[PlacedBid]:
    return [_placed(None, b.seat, b.bid, b.exposed) for b in bids]


def _finished_round(state: ClassicState, end: RoundEnd) -> BluffTable:
    r = end.result
    dice_in_play = sum(d.weight for dice in end.table.values() for d in dice)
    table = _bluff_table(
        Told(_("Round {number}", number=end.round)), end.round,
        make_ladder(dice_in_play, state.rules.star_bids, state.rules.board_cap),
        _classic_bids(end.bids), [b.bid for b in end.bids], status="ended",
        dice_in_play=dice_in_play, dice_count=sum(len(dice) for dice in end.table.values()),
        dice_per_player=None, to_move=None, cups=[], odds=None,
        challenge={"turn": None, "seat": end.challenger, "bidder": r.bidder,
                   "bid": bid_json(r.bid), "actual": r.actual, "outcome": r.outcome,
                   "losses": [{"seat": s, "lost": n} for s, n in sorted(end.lost.items())],
                   "out": list(end.out), "cups": lifted_cups(end.table, r.bid),
                   "next_opener": end.next_opener})
    table["opener"] = end.opener
    return table


def classic_tables(state: ClassicState, viewer: Viewer) -> list[BluffTable]:
    """The round in play (if any) first, then the finished rounds, latest first."""
    tables = [_finished_round(state, end) for end in reversed(state.finished)]
    if state.game_over:
        return tables
    odds = None
    seat = viewer.seat
    if seat is not None and state.current_bid is not None and state.is_in(seat):
        o = bid_odds(state.seat_view(seat), state.current_bid)
        odds = {"holds": o.holds, "exact": o.exact}
    current = _bluff_table(
        Told(_("Round {number}", number=state.round)), state.round, state.ladder, _classic_bids(state.bids),
        [b.bid for b in state.bids], status="running", dice_in_play=state.dice_in_play,
        dice_count=sum(hand.count for hand in state.hands),
        dice_per_player=None, to_move=state.to_move,
        cups=[cup_json(s, state.cup(s), viewer, s == seat) for s in state.seats_in],
        challenge=None, odds=odds)
    current["opener"] = state.opener
    return [current, *tables]


def classic_scores(state: ClassicState) -> list[ClassicScore]:
    return [{"seat": s, "dice": state.hand(s).count, "value": state.hand(s).value,
             "super": state.hand(s).super, "in": state.is_in(s),
             "out_round": state.out_round[s - 1]} for s in state.seats]


# --- Cup of Bluff -------------------------------------------------------------------------

def cup_tables(state: CupState, viewer: Viewer, rounds: list[CupRound]) -> list[CupTable]:
    """One table: the tokens (the board), the claim in play and every round so far
    (rounds: latest first, as the kind tells them)."""
    claim = state.claim
    running = not state.game_over
    # the roll is secret until the Guesser answers (a failed steal waiting for GIVE shows it)
    shown = claim is not None and state.phase == cb.GIVE
    roll = (list(state.roll) if running and (viewer.sees(state.bluffer) or shown) else None)
    return [{
        "type": "cup", "title": Told(_("The table")), "status": "running" if running else "ended",
        "phase": state.phase, "round": state.number,
        "bluffer": state.bluffer if running else None,
        "to_move": next(iter(state.due()), None),
        "waiting_for": Told(state.waiting_for_said()),   # English in JSON, said on a page
        "centre": list(state.centre),
        "centre_points": sum(cb.points(t) for t in state.centre),
        "board": [{"token": t, "points": cb.points(t), "owner": state.owner(t)}
                  for t in cb.TOKENS],
        "claim": None if claim is None else {
            "action": claim.action, "total": claim.total, "guesser": claim.guesser,
            "chance": cb.TOTAL_ODDS[claim.total],
            "answer": None if claim.ok is None else ("OK" if claim.ok else "BLUFF")},
        "roll": roll,
        "roll_is_yours": roll is not None and viewer.seat == state.bluffer and not shown,
        "rounds": rounds,
        "points_table": POINTS_TABLE,
    }]


def cup_scores(state: CupState) -> list[CupScore]:
    return [{"seat": s, "points": state.score(s), "tokens": list(state.tokens(s)),
             "count": len(state.tokens(s))} for s in state.seats]
