"""The strong robot's move: the Table's prices (pbem.rules.robot_strong) turned into
one move.

Every raise up the ladder (SEARCH_WIDTH) and the call are priced by the one-move
price; moves within MIX of the best are mixed by the random stream, so the robot is
deterministic for a given stream and view. Where the next seat reads as a bid reader
(EXACT_MIN_READER), the pick and the best other raises are priced again by that seat's
actual reply over the hands it can hold (pbem.rules.robot_reply; replied). The search
(robot_search.CANDIDATES > 1, off) plays the next replies out instead (searched). A
raise now and then exposes its matching dice (expose_for).

The constants stay in pbem.rules.robot_strong, with the prices' own, read at each
move: the arena's ``--tune robot_strong.NAME`` sets every knob of the robot in one
place.
"""

from __future__ import annotations

import random

from pbem.rules import robot_search, robot_strong
from pbem.rules.bid_moves import CHALLENGE, BidMove, Move
from pbem.rules.challenge import matches
from pbem.rules.dice import Face
from pbem.rules.ladder import Bid
from pbem.rules.odds import SeatView
from pbem.rules.robot_strong import Table, outcome_value


def expose_for(view: SeatView, bid: Bid, rng: random.Random) -> tuple[Face, ...]:
    """Now and then show the matching hidden dice and re-roll at least two others."""
    if not view.rules.expose:
        return ()
    hidden = [d.face for d in view.own.hidden]
    matching = tuple(sorted(f for f in hidden if matches(f, bid)))
    if matching and len(hidden) - len(matching) >= 2 and rng.random() < robot_strong.EXPOSE_RATE:
        return matching
    return ()


def choose_strong(view: SeatView, rng: random.Random) -> Move:
    table = Table(view)
    options: list[tuple[float, Move]] = []
    if view.current is not None:
        options.append((table.challenge_value(), CHALLENGE))
    values = {bid: table.raise_value(bid)
              for bid in view.ladder.raises(view.current)[:robot_strong.SEARCH_WIDTH]}
    options += [(value, BidMove(bid)) for bid, value in values.items()]
    if not options:   # unreachable: a round with no bid always has an opening bid
        return CHALLENGE
    best = max(value for value, _ in options)
    near = [move for value, move in options if value >= best - robot_strong.MIX]
    pick = near[rng.randrange(len(near))]
    if (robot_search.CANDIDATES > 1 and values and robot_search.searchable(view)
            and (isinstance(pick, BidMove) or robot_search.SEARCH_CALLS)):
        pick = searched(view, table, values, pick, random.Random(rng.getrandbits(32)))
    elif (robot_strong.EXACT_REPLY > 0 and values and table.next is not None and view.others
          and table.reader >= robot_strong.EXACT_MIN_READER):
        pick = replied(view, table, values, pick, rng)
    if isinstance(pick, BidMove):
        return BidMove(pick.bid, expose_for(view, pick.bid, rng))
    return pick


def best_others(values: dict[Bid, float], pick: Move) -> list[Bid]:
    """The raises priced in values but the pick's, the best by the one-move price first
    (the ladder's order among equals)."""
    picked = pick.bid if isinstance(pick, BidMove) else None
    return sorted((b for b in values if b != picked), key=lambda bid: -values[bid])


def replied(view: SeatView, table: Table, values: dict[Bid, float], pick: Move,
            rng: random.Random) -> Move:
    """The move to make when raises are priced by the next seat's reply (EXACT_REPLY):
    the one-move pick and the best other raises by the one-move price, EXACT_REPLY
    raises in all, priced again (Table.exact_raise_value), and the call as it is; the
    pick stays while within MIX of the best so priced, else one of those within MIX of
    the best is drawn (the constants are robot_strong's)."""
    raises = ([pick.bid] if isinstance(pick, BidMove) else []) + best_others(values, pick)
    scored: list[tuple[float, Move]] = [(table.exact_raise_value(bid), BidMove(bid))
                                        for bid in raises[:robot_strong.EXACT_REPLY]]
    if view.current is not None:
        scored.append((table.challenge_value(), CHALLENGE))
    best = max(value for value, _ in scored)
    near = [move for value, move in scored if value >= best - robot_strong.MIX]
    if pick in near:
        return pick
    return near[rng.randrange(len(near))]


def searched(view: SeatView, table: Table, values: dict[Bid, float], pick: Move,
             rng: random.Random) -> Move:
    """The move to make: the one-move pick, unless one of the best raises by the
    one-move price does better by robot_search.MARGIN when the next replies are
    played out (pbem.rules.robot_search; a call is priced as it is)."""
    rule, players = view.rules.exact_rule, table.players

    def outcome(actual: int, quantity: int, bidder: bool) -> float:
        if robot_strong.SEARCH_STANDINGS:
            return table.outcome(actual, quantity, bidder)
        return outcome_value(actual, quantity, bidder, rule, players)

    search = robot_search.Search(view, lambda bid: values.get(bid, float("-inf")),
                                 table.bid_challenge_value, outcome, rng)
    misled = robot_strong.MISLEAD * table.misled()

    def value(move: Move) -> float:
        if isinstance(move, BidMove):
            return search.value(move.bid) + misled * table.mislead(move.bid.face)
        return table.challenge_value()

    others = best_others(values, pick)
    scored = [(value(move), move) for move in
              [pick, *(BidMove(b) for b in others[:robot_search.CANDIDATES - 1])]]
    top = max(scored, key=lambda s: s[0])
    return top[1] if top[0] > scored[0][0] + robot_search.MARGIN else pick
