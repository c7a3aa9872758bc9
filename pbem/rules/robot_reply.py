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
from typing import Protocol

from pbem.rules import beliefs, robot_reads, robot_search
from pbem.rules.challenge import count_matching
from pbem.rules.dice import FACES, Face
from pbem.rules.ladder import Bid
from pbem.rules.odds import OtherSeat, SeatView, count_distribution, match_probability
from pbem.rules.robot_search import (
    BLUFF_RATE,
    Dist,
    Options,
    Player,
    convolve,
    holds,
    seat_distribution,
    tail,
)

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


class Priced(Protocol):
    """What the exact price needs of the robot's table of a move (robot_strong.Table)."""

    view: SeatView
    next: OtherSeat | None
    rest: tuple[OtherSeat, ...]
    reader: float
    players: int

    def counts(self, face: Face) -> tuple[int, Dist, Dist]: ...

    def outcome(self, actual: int, quantity: int, bidder: bool) -> float: ...


SoftCall = Callable[[Dist, Dist, int, float], float]   # (odds tail, read tail, need, weight)


class ExactPrice:
    """A move's raises priced by the next seat's reply over its hands (NextReply),
    the called outcome by the table, and not called, the seat after's call on the
    next seat's raise (soft_call: the robot's call model of a seat; reads: the share
    at which that seat reads the robot's bids)."""

    def __init__(self, table: Priced, soft_call: SoftCall, reads: float) -> None:
        self.table = table
        self.soft_call = soft_call
        self.reads = reads
        view = table.view
        self._replies: NextReply | None = None
        self._readers: dict[Face, Player] = {}
        self._odds: Player | None = None
        # the seat after the next, for a raise of the next seat not called
        order = sorted(view.others, key=lambda o: (o.seat < view.seat, o.seat))
        self.after: OtherSeat | None = (order[1] if len(order) > 1 and table.next is not None
                                        and order[0] is table.next else None)
        self._after: dict[tuple[int, int, int, int], float] = {}
        self._after_calls: dict[tuple[int, int, int], tuple[tuple[int, float], ...]] = {}
        self._bystander: dict[tuple[int, int], tuple[float, ...]] = {}
        self._bystander_over: dict[tuple[int, int], float] = {}
        self._after_sees: dict[tuple[int, int], tuple[int, Dist, Dist, float]] = {}
        self._rest_after: dict[Face, Dist] = {}

    def value(self, bid: Bid, after: bool) -> float:
        """The raise to bid: called, the table's outcome given the next seat's hand and
        the other seats' count by the robot's beliefs; not called, 0 or (after) the
        seat after's call on the next seat's raise."""
        table = self.table
        known, nxt, rest = table.counts(bid.face)
        called = [sum(pr * table.outcome(known + x + r, bid.quantity, True)
                      for r, pr in enumerate(rest) if pr > 1e-9) for x in range(len(nxt))]
        passed = None
        if after and self.after is not None:
            def passed(raised: Bid, matching: int, face: Face = bid.face) -> float:
                return self.after_value(face, raised, matching)
        return self.replies().value(bid, called, passed)

    def after_value(self, robot_face: Face, raised: Bid, matching: int) -> float:
        """The robot's value of the next seat's raise to raised, not called, when that
        seat holds matching of its face: the seat after calls it by its call model
        (a soft curve of its odds, as call_chance; a reader reading the robot's bids
        and the raised face as the next seat's), the robot a bystander."""
        key = (robot_face, raised.quantity, raised.face, matching)
        if key not in self._after:
            calls = self.after_calls(robot_face, raised)
            values = self.bystander(raised)
            self._after[key] = sum(w * values[matching + y] for y, w in calls)
        return self._after[key]

    def after_calls(self, robot_face: Face, raised: Bid) -> tuple[tuple[int, float], ...]:
        """(y, P(the seat after holds y of raised's face and calls it)), y with a chance."""
        key = (robot_face, raised.quantity, raised.face)
        if key not in self._after_calls:
            after = self.after
            assert after is not None
            exposed, odds_tail, read_tail, reader = self.after_sees(robot_face, raised.face)
            mine = seat_distribution(after, raised.face, self.table.view.rules.star_bids)
            calls: list[tuple[int, float]] = []
            for y, py in enumerate(mine):
                need = raised.quantity - exposed - y
                if py < 1e-9 or need <= 0:
                    continue
                called = self.soft_call(odds_tail, read_tail, need, reader)
                if called > 0.0:
                    calls.append((y, py * called))
            self._after_calls[key] = tuple(calls)
        return self._after_calls[key]

    def bystander(self, raised: Bid) -> tuple[float, ...]:
        """The robot's value, a bystander, of a call of raised when the next seat and
        the seat after hold s of its face between them, s = 0 .. (the other seats'
        count summed by the robot's beliefs)."""
        key = (raised.quantity, raised.face)
        if key not in self._bystander:
            face = raised.face
            known = count_matching(self.table.view.known, Bid(1, face))
            assert self.table.next is not None and self.after is not None
            top = (self.table.next.hidden_plain + 2 * self.table.next.hidden_super
                   + self.after.hidden_plain + 2 * self.after.hidden_super)
            self._bystander[key] = tuple(self.bystander_over(face, known + s - raised.quantity)
                                         for s in range(top + 1))
        return self._bystander[key]

    def bystander_over(self, face: Face, over: int) -> float:
        """A bystander's value of a call whose count, but the other seats' hidden
        matches of face, is over the bid by over (a value depends on that alone)."""
        key = (face, over)
        if key not in self._bystander_over:
            rule = self.table.view.rules.exact_rule
            self._bystander_over[key] = sum(
                pr * robot_search.bystander_value(over + r, 0, rule, self.table.players)
                for r, pr in enumerate(self.rest_after(face)) if pr > 1e-9)
        return self._bystander_over[key]

    def rest_after(self, face: Face) -> Dist:
        """The hidden matches of face of the seats but the robot, the next and the
        seat after, by the robot's beliefs."""
        if face not in self._rest_after:
            dist: Dist = (1.0,)
            for other in self.table.rest:
                if other is not self.after:
                    dist = convolve(dist, seat_distribution(
                        other, face, self.table.view.rules.star_bids))
            self._rest_after[face] = dist
        return self._rest_after[face]

    def after_sees(self, robot_face: Face, face: Face) -> tuple[int, Dist, Dist, float]:
        """What the seat after sees of face once the robot bid robot_face and the next
        seat raised face: the exposed matches, P(count >= c) over the dice hidden
        from it as an odds player and as a bid reader, and its reader weight."""
        key = (robot_face, face)
        if key not in self._after_sees:
            view, after, nxt = self.table.view, self.after, self.table.next
            assert after is not None and nxt is not None
            bid = Bid(1, face)
            stars = view.rules.star_bids
            exposed = count_matching(view.others_exposed + view.own.exposed, bid)
            own_plain = sum(1 for d in view.own.hidden if not d.super)
            own_super = len(view.own.hidden) - own_plain
            plain = (own_plain + nxt.hidden_plain
                     + sum(o.hidden_plain for o in self.table.rest if o is not after))
            super_ = (own_super + nxt.hidden_super
                      + sum(o.hidden_super for o in self.table.rest if o is not after))
            odds = tail(count_distribution(plain, super_, match_probability(bid)))
            robot_plain = count_distribution(own_plain, own_super, match_probability(bid))
            robot_read = beliefs.face_counts(own_plain, own_super,
                                             (*view.own_bids, Bid(1, robot_face)), face,
                                             beliefs.BLUFF, stars)
            robot = tuple(self.reads * r + (1 - self.reads) * p
                          for r, p in zip(robot_read, robot_plain))
            nxt_read = beliefs.face_counts(nxt.hidden_plain, nxt.hidden_super,
                                           (*nxt.bids, bid), face, beliefs.BLUFF, stars)
            read = tail(convolve(convolve(robot, nxt_read), self.rest_after(face)))
            self._after_sees[key] = (exposed, odds, read,
                                     robot_reads.seat_reader_weight(view.answers, after.seat))
        return self._after_sees[key]

    def replies(self) -> NextReply:
        """The next seat's replies, built once a move."""
        if self._replies is None:
            view, nxt = self.table.view, self.table.next
            assert nxt is not None
            exposed = view.others_exposed + view.own.exposed
            ladder = view.ladder
            self._replies = NextReply(
                nxt.hidden_plain, nxt.hidden_super, beliefs.faces_of(nxt.bids),
                view.rules.star_bids, [count_matching(exposed, Bid(1, f)) for f in FACES],
                self.table.reader, robot_search.exact_cost(view.rules.exact_rule),
                self.reader_player, self.odds_player,
                lambda bid: robot_search.raise_options(ladder, bid))
        return self._replies

    def faces(self) -> tuple[Face, ...]:
        return FACES if self.table.view.rules.star_bids else FACES[:5]

    def reader_player(self, robot_face: Face) -> Player:
        """The next seat as a bid reader after the robot's raise of robot_face: the
        robot's hand read from its bids since its re-roll and the raise, the other
        seats' from their bids (robot_search's reader)."""
        if robot_face not in self._readers:
            self._readers[robot_face] = robot_search.reader_player(
                self.table.view, robot_face, self.faces(),
                lambda face: self.table.counts(face)[2])
        return self._readers[robot_face]

    def odds_player(self) -> Player:
        """The next seat as an odds player: every die hidden from it at plain odds."""
        if self._odds is None:
            assert self.table.next is not None
            self._odds = robot_search.odds_player(self.table.view, self.table.next,
                                                  self.faces())
        return self._odds
