"""The next seat's reply to the robot's raise, summed exactly over its hands.

The one-move robot prices a raise by a soft call curve of the next seat's odds
(pbem.rules.robot_strong.Table.call_chance). Here the next seat answers with the
policy it is read to play (pbem.rules.robot_reads: a bid reader at the reader
weight, else an odds player), the same replies the search plays out
(pbem.rules.robot_search.reply, the bench's players rewritten): it raises to the
likeliest raise (or, 1 move in 10, to the one nearest even odds among the lowest)
and calls when calling costs less than its fear times that raise's shortfall.
Its reply is decided for every hand its hidden dice can form (the robot's beliefs,
pbem.rules.beliefs: at most 462 hands) and summed with that hand's chance, so the
price of a raise has no sampling noise:

    value(raise) = sum over hands of P(hand) * [P(call | hand) * outcome if called
                                                + (1 - P(call | hand)) * not called]

The outcome if called knows the next seat's matching dice (the hand) and sums the
other seats' by their beliefs; not called is worth 0 (as the one-move robot), or
with after, the seat after answers the next seat's raise by the soft call curve
and the robot is a bystander (robot_search.bystander_value).

Each hand's reply is found with a few C-level passes over columns of the hands
(a table per face and matching count, mapped over the hands' counts), not a loop
of Python a hand. The hands' counts are cached by the seat's dice, plain ints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

from pbem.rules import beliefs
from pbem.rules.dice import FACES, Face
from pbem.rules.ladder import Bid
from pbem.rules.robot_search import BLUFF_RATE, Options, Player, holds
from pbem.rules.ruleset import ExactRule

Column = tuple[int, ...]


@lru_cache(maxsize=64)
def hand_columns(plain: int, super_: int) -> tuple[Column, ...]:
    """For each face of FACES, the matching count of every hand of
    beliefs.hands(plain, super_), in that order (keyed by plain ints)."""
    found = [hand for hand, _ in beliefs.hands(plain, super_)]
    return tuple(tuple(beliefs.matching(hand, face) for hand in found) for face in FACES)


Row = tuple[float, int, float]   # (the key a raise is chosen by, -its index, fear x short)


def reply_rows(player: Player, bid: Bid, options: Options, exposed: Sequence[int],
               columns: Sequence[Column], exact_cost: float, bluff: bool
               ) -> tuple[list[float], list[Row], list[Row]]:
    """For each hand of columns (its matching count of each face, FACES order, is
    columns[face - 1][hand]; it sees exposed[face - 1] more): the dice calling bid
    costs it, its raise without a bluff (the likeliest of the lowest raise of each
    face, the lowest of equals: lows[-row[1]]), and with bluff its bluff (the raise
    of the lowest nearest even odds, the highest of equals: span[-row[1]]); each
    raise's row ends with its fear times its shortfall (robot_search.reply)."""
    lows, span = options
    top = max(len(column) and max(column) for column in columns)
    counts = range(top + 1)
    fear = player.fear

    def table(rows: Callable[[int], Row], face: Face) -> list[Row]:
        made = [rows(m) for m in counts]
        return [made[m] for m in columns[face - 1]]

    def row_of(index: int, low: Bid, bluffing: bool) -> Callable[[int], Row]:
        tails = player.tails[low.face]

        def row(m: int) -> Row:
            need = low.quantity - exposed[low.face - 1] - m
            chance = holds(tails, need)
            return (abs(chance - 0.5) if bluffing else chance, -index,
                    fear * player.shortfall(low.face, need) if need > 0 else 0.0)
        return row

    best = list(map(max, zip(*(table(row_of(i, low, False), low.face)
                                for i, low in enumerate(lows)))))
    cost_row = [player.call_cost(bid.face, bid.quantity - exposed[bid.face - 1] - m,
                                 exact_cost) for m in counts]
    costs = [cost_row[m] for m in columns[bid.face - 1]]
    bluffs = list(map(min, zip(*(table(row_of(i, low, True), low.face)
                                 for i, low in enumerate(span))))) if bluff else []
    return costs, best, bluffs


def call_chances(player: Player, bid: Bid, options: Options, exposed: Sequence[int],
                 columns: Sequence[Column], exact_cost: float,
                 bluff_rate: float = BLUFF_RATE) -> list[float]:
    """P(player calls bid) for each hand of columns (reply_rows): a call when calling
    costs less than its fear times its raise's shortfall, that raise its bluff at
    bluff_rate (robot_search.reply)."""
    if not options[0]:
        return [1.0] * len(columns[0])
    costs, best, bluffs = reply_rows(player, bid, options, exposed, columns, exact_cost,
                                     bluff_rate > 0.0)
    plain = 1.0 - bluff_rate
    if bluff_rate <= 0.0:
        return [plain if c < b[2] else 0.0 for c, b in zip(costs, best)]
    return [(plain if c < b[2] else 0.0) + (bluff_rate if c < f[2] else 0.0)
            for c, b, f in zip(costs, best, bluffs)]


def exact_cost(rule: ExactRule) -> float:
    """The dice a caller loses on an exact count, as the bench's players count it."""
    return 0.0 if rule in (ExactRule.NOBODY, ExactRule.EVERYONE) else 1.0


class NextReply:
    """The next seat's replies to the robot's raises in one move: its hands and their
    chances, the policies it may play and their weights."""

    def __init__(self, plain: int, super_: int, faces: beliefs.Faces, star_bids: bool,
                 exposed: Sequence[int], reader: float, exact_cost: float,
                 reader_player: Callable[[Face], Player], odds_player: Callable[[], Player],
                 options: Callable[[Bid], Options]) -> None:
        self.weights = beliefs.hand_weights(plain, super_, faces, beliefs.BLUFF, star_bids)[1]
        self.columns = hand_columns(plain, super_)
        self.exposed = tuple(exposed)
        self.reader = reader
        self.exact_cost = exact_cost
        self.reader_player = reader_player
        self.odds_player = odds_player
        self.options = options

    def calls(self, bid: Bid) -> list[float]:
        """P(the next seat calls bid) for each of its hands, the policies mixed."""
        options = self.options(bid)
        mixed: list[float] | None = None
        for weight, player in ((1.0 - self.reader, self.odds_player),
                               (self.reader, lambda: self.reader_player(bid.face))):
            if weight <= 0.0:
                continue
            chances = call_chances(player(), bid, options, self.exposed, self.columns,
                                   self.exact_cost)
            mixed = ([weight * c for c in chances] if mixed is None else
                     [m + weight * c for m, c in zip(mixed, chances)])
        return mixed if mixed is not None else [0.0] * len(self.weights)

    def value(self, bid: Bid, called: Sequence[float],
              after: Callable[[Bid, int], float] | None = None) -> float:
        """sum over hands of P(hand) [P(call) called[m] + (1 - P(call)) not called],
        m the hand's matching count of bid's face; not called is 0, or with after,
        after(its raise, its matching count of that raise's face)."""
        column = self.columns[bid.face - 1]
        if after is None:
            calls = self.calls(bid)
            return sum(w * c * called[m] for w, c, m in zip(self.weights, calls, column))
        options = self.options(bid)
        lows, span = options
        if not lows:   # no raise left: a call
            return sum(w * called[m] for w, m in zip(self.weights, column))
        plain = 1.0 - BLUFF_RATE
        total = 0.0
        memo: dict[int, float] = {}   # a raise's index (bluffs after lows), its count

        def passed(index: int, raised: Bid, hand: int) -> float:
            matching = self.columns[raised.face - 1][hand]
            key = index * 64 + matching
            found = memo.get(key)
            if found is None:
                found = memo[key] = after(raised, matching)
            return found

        for weight, player in ((1.0 - self.reader, self.odds_player),
                               (self.reader, lambda: self.reader_player(bid.face))):
            if weight <= 0.0:
                continue
            costs, best, bluffs = reply_rows(player(), bid, options, self.exposed,
                                             self.columns, self.exact_cost, True)
            bluffed = len(lows)
            for hand, (w, c, b, f) in enumerate(zip(self.weights, costs, best, bluffs)):
                if c < b[2]:
                    value = plain * called[column[hand]]
                else:
                    value = plain * passed(-b[1], lows[-b[1]], hand)
                if c < f[2]:
                    value += BLUFF_RATE * called[column[hand]]
                else:
                    value += BLUFF_RATE * passed(bluffed - f[1], span[-f[1]], hand)
                total += weight * w * value
        return total


def options_cache(ladder_raises: Callable[[Bid], Options]) -> Callable[[Bid], Options]:
    found: dict[Bid, Options] = {}

    def get(bid: Bid) -> Options:
        if bid not in found:
            found[bid] = ladder_raises(bid)
        return found[bid]
    return get
