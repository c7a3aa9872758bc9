"""The strong robot's search beyond one move: the next players' replies played out.

For the robot's one-move pick and its best raises by the one-move price, the
robot deals the other seats' hidden dice from its beliefs (pbem.rules.beliefs:
each seat's posterior over the hands it can hold, given its bids) a few times,
and plays the next seats' replies out with the bid readers' own policy (or the
odds players', mixed seat by seat by the reader weight of
pbem.rules.robot_reads), until a seat calls, for up to ROUNDS laps of the table.
A call is scored on the dealt dice: the robot as the bidder, or as a bystander
(an exact count under the postal rule costs it a die too). Back at the robot,
it calls when its one-move price of the call beats its best raise's, the call
scored on the dealt dice too; else it makes that raise (after the last lap,
the raise's one-move price stands). Another move than the pick is taken when
its searched value beats the pick's by MARGIN.

The replying players read the bids as the robot does: a reader's beliefs about
the robot's hand follow its bids since its re-roll and the new raise; about the
other seats, their bids before the search (reading the replies too would cost a
new posterior per reply, a third of a millisecond each). Every deal and reply is
drawn from one stream seeded by the move's, so the move stays a function of the
view and the stream. Off by default (CANDIDATES = 1): against four readers it
gained on three seed sets of four and not on the default seeds, and a wary
player among four searching robots came first too often (docs/robot-history.md, "A
search beyond one move"); with the standings weighed, it gained a point on fresh
seeds and lost one on the default seeds (docs/robot-history.md, "The collector's full
pass, and the search with the standings").
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from pbem.rules import beliefs, robot_reads
from pbem.rules.challenge import count_matching
from pbem.rules.dice import FACES, Face
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.odds import OtherSeat, SeatView, count_distribution, match_probability
from pbem.rules.ruleset import ExactRule

SAMPLES = 12         # deals of the hidden dice a candidate
CANDIDATES = 1       # moves weighed: the one-move pick and the best raises by that price
                     # (1: no search, the one-move robot; 3 screened, not kept)
SEARCH_CALLS = 1     # 1: a call the one-move price picks is weighed against the searched raises
ROUNDS = 3           # laps of the table played out (the robot's own moves by its one-move price)
MARGIN = 0.05        # another raise is taken when its searched value beats the pick's by this
READER_FEAR = 0.25   # a reader calls when calling costs less than this share of its raise's shortfall
ODDS_FEAR = 1.0      # ... an odds player, when it costs less than its raise's shortfall
BLUFF_RATE = 0.1     # both bluff (a bid near even odds) this often
BLUFF_SPAN = 12      # ... among the lowest raises
WIDTH = 40           # raises a player weighs
GAIN_WEIGHT = 0.5    # as pbem.rules.robot_strong: a die the field loses counts at this share

Dist = tuple[float, ...]
Outcome = Callable[[int, int, bool], float]
Deal = dict[int, tuple[tuple[int, ...], float, float]]


def tail(dist: Dist) -> Dist:
    """P(count >= c), c = 0..len(dist)."""
    out = [0.0] * (len(dist) + 1)
    for c in range(len(dist) - 1, -1, -1):
        out[c] = out[c + 1] + dist[c]
    return tuple(out)


def convolve(a: Dist, b: Dist) -> Dist:
    out = [0.0] * (len(a) + len(b) - 1)
    for i, pa in enumerate(a):
        if pa:
            for j, pb in enumerate(b):
                out[i + j] += pa * pb
    return tuple(out)


def bystander_value(actual: int, quantity: int, rule: ExactRule, players: int) -> float:
    """The robot's value of a call between two other seats, against the field: an
    exact count under the postal rule costs it a die as it costs all but the bidder;
    a die another seat loses counts GAIN_WEIGHT shared over the field."""
    field = max(1, players - 1)
    if actual == quantity:
        if rule is ExactRule.ALL_BUT_BIDDER:
            return -1.0 + (players - 2) / field
        if rule in (ExactRule.CHALLENGER, ExactRule.CHALLENGER_GIVES):
            return GAIN_WEIGHT / field
        return 0.0
    return GAIN_WEIGHT * abs(actual - quantity) / field


def call_cost(dist: Dist, need: int, exact_cost: float) -> float:
    """The dice a caller expects to lose calling a bid that needs need more of dist."""
    over = sum(pr * (c - need) for c, pr in enumerate(dist) if c > need)
    exact = dist[need] if 0 <= need < len(dist) else 0.0
    return over + exact * exact_cost


def shortfall(dist: Dist, need: int) -> float:
    """The dice a bid that needs need more of dist is expected to be short."""
    return sum(pr * (need - c) for c, pr in enumerate(dist) if c < need)


def holds(tails: Dist, need: int) -> float:
    if need <= 0:
        return 1.0
    return tails[need] if need < len(tails) else 0.0


class Player:
    """One replying seat as it sees a face: its own hidden matches come from the deal,
    the rest is a distribution (a reader's beliefs, or plain odds), per face."""

    def __init__(self, dists: Mapping[Face, Dist], fear: float) -> None:
        self.dists = dists
        self.tails = {face: tail(d) for face, d in dists.items()}
        self.fear = fear
        self._costs: dict[tuple[Face, int, float], float] = {}
        self._shorts: dict[tuple[Face, int], float] = {}

    def call_cost(self, face: Face, need: int, exact_cost: float) -> float:
        key = (face, need, exact_cost)
        if key not in self._costs:
            self._costs[key] = call_cost(self.dists[face], need, exact_cost)
        return self._costs[key]

    def shortfall(self, face: Face, need: int) -> float:
        key = (face, need)
        if key not in self._shorts:
            self._shorts[key] = shortfall(self.dists[face], need)
        return self._shorts[key]


def exact_cost(rule: ExactRule) -> float:
    """The dice a caller loses on an exact count, as the bench's players count it."""
    return 0.0 if rule in (ExactRule.NOBODY, ExactRule.EVERYONE) else 1.0


def seat_distribution(other: OtherSeat, face: Face, star_bids: bool = True) -> Dist:
    """P(count == c) of a seat's hidden dice matching a bid of face, from its bids
    since its last re-roll (pbem.rules.beliefs)."""
    return beliefs.face_counts(other.hidden_plain, other.hidden_super, other.bids, face,
                               beliefs.BLUFF, star_bids)


def reader_player(view: SeatView, robot_face: Face, faces: Sequence[Face],
                  others: Callable[[Face], Dist]) -> Player:
    """A bid reader answering the robot's raise of robot_face: the robot's hand read
    from its bids since its re-roll and that raise, others(face) the hidden matches of
    the other seats it does not see, as their bids read."""
    own_plain = sum(1 for d in view.own.hidden if not d.super)
    own_super = len(view.own.hidden) - own_plain
    read = (*view.own_bids, Bid(1, robot_face))
    return Player({f: convolve(others(f), beliefs.face_counts(own_plain, own_super, read, f,
                                                              beliefs.BLUFF,
                                                              view.rules.star_bids))
                   for f in faces}, READER_FEAR)


def odds_player(view: SeatView, other: OtherSeat, faces: Sequence[Face]) -> Player:
    """The seat other as an odds player: every die hidden from it at plain odds."""
    own_plain = sum(1 for d in view.own.hidden if not d.super)
    plain = view.unknown_plain - other.hidden_plain + own_plain
    super_ = view.unknown_super - other.hidden_super + len(view.own.hidden) - own_plain
    return Player({f: count_distribution(plain, super_, match_probability(Bid(1, f)))
                   for f in faces}, ODDS_FEAR)


Options = tuple[tuple[Bid, ...], tuple[Bid, ...]]


def raise_options(ladder: Ladder, current: Bid | None) -> Options:
    """What a player weighs raising current: the lowest raise of each face among the
    first WIDTH (a face's likeliest), in ladder order, and the first BLUFF_SPAN."""
    raises = ladder.raises(current)[:WIDTH]
    lows: list[Bid] = []
    faces: set[Face] = set()
    for bid in raises:
        if bid.face not in faces:
            faces.add(bid.face)
            lows.append(bid)
    return tuple(lows), tuple(raises[:BLUFF_SPAN])


def reply(player: Player, current: Bid | None, options: Options, seen: Sequence[int],
          bluff: bool, exact_cost: float) -> Bid | None:
    """The reader's (and the odds player's) answer to current, seeing seen[face - 1]
    dice of each face (exposed and its own), raising to one of options: a raise, or
    None for a call. As bench/readers.py: the raise most likely to hold (the lowest of
    equals), or with bluff the one nearest even odds; a call when calling costs less
    than fear times that raise's shortfall."""
    lows, span = options
    if not lows:
        return None
    tails = player.tails
    if bluff:
        best = min(enumerate(span), key=lambda p: (
            abs(holds(tails[p[1].face], p[1].quantity - seen[p[1].face - 1]) - 0.5),
            -p[0]))[1]
    else:
        best, top = lows[0], -1.0
        for bid in lows:
            chance = holds(tails[bid.face], bid.quantity - seen[bid.face - 1])
            if chance > top:
                best, top = bid, chance
    if current is not None:
        need = current.quantity - seen[current.face - 1]
        mine = best.quantity - seen[best.face - 1]
        if (player.call_cost(current.face, need, exact_cost)
                < player.fear * player.shortfall(best.face, mine)):
            return None
    return best


class Search:
    """The playouts of one move: the deals, and the replying seats' views."""

    def __init__(self, view: SeatView, robot_value: Callable[[Bid], float],
                 call_value: Callable[[Bid], float], outcome: Outcome,
                 rng: random.Random) -> None:
        self.view = view
        self.rng = rng
        self.outcome = outcome             # (actual, quantity, robot is the bidder) -> value
        self.robot_value = robot_value     # the one-move price of a raise, or -inf
        self.call_value = call_value       # the one-move price of calling a bid
        self.players = len(view.others) + 1
        self.order = _order(view)
        self.faces = FACES if view.rules.star_bids else FACES[:5]
        exposed = view.others_exposed + view.own.exposed
        self.exposed = {f: count_matching(exposed, Bid(1, f)) for f in FACES}
        self.robot_hidden = {f: count_matching(view.own.hidden, Bid(1, f)) for f in FACES}
        self._options: dict[Bid | None, Options] = {}
        self._raises: dict[Bid, tuple[float, Bid]] = {}
        self.reader = {o.seat: robot_reads.seat_reader_weight(view.answers, o.seat)
                       for o in self.order}
        stars = view.rules.star_bids
        self.dists = {o.seat: {f: seat_distribution(o, f, stars) for f in self.faces}
                      for o in self.order}
        self.deals = self._deals()
        self._readers: dict[tuple[int, Face], Player] = {}
        self._others: dict[tuple[int, Face], Dist] = {}
        self._odds: dict[int, Player] = {}
        self.exact_cost = exact_cost(view.rules.exact_rule)

    def _deals(self) -> list[Deal]:
        """SAMPLES deals: seat -> (what it sees of each face, its own hidden dice and the
        exposed ones, and the draws of its policy and of its bluff). Each seat's draws
        are stratified (one in each SAMPLES-th of the range, shuffled), so a few deals
        cover its hands and its kinds of play evenly."""
        deals: list[Deal] = [{} for _ in range(SAMPLES)]
        for other in self.order:
            hands, cumulative = _posterior(other.hidden_plain, other.hidden_super,
                                           beliefs.faces_of(other.bids),
                                           self.view.rules.star_bids)
            draws = [self._strata() for _ in range(3)]
            for deal, u, policy, bluff in zip(deals, *draws):
                hand = hands[min(len(hands) - 1, bisect.bisect_right(cumulative, u))]
                deal[other.seat] = (tuple(self.exposed[f] + beliefs.matching(hand, f)
                                          for f in FACES), policy, bluff)
        return deals

    def _strata(self) -> list[float]:
        draws = [(i + self.rng.random()) / SAMPLES for i in range(SAMPLES)]
        self.rng.shuffle(draws)
        return draws

    def _reader_player(self, seat: int, robot_face: Face) -> Player:
        """A reader at seat, after the robot's raise of robot_face: the robot's hand read
        from its bids, the other seats' from theirs."""
        key = (seat, robot_face)
        if key not in self._readers:
            self._readers[key] = reader_player(self.view, robot_face, self.faces,
                                               lambda face: self._without(seat, face))
        return self._readers[key]

    def _without(self, seat: int, face: Face) -> Dist:
        """The other seats' hidden matches of face but seat's, as their bids read:
        the same for every raise of the robot."""
        key = (seat, face)
        if key not in self._others:
            dist: Dist = (1.0,)
            for other in self.order:
                if other.seat != seat:
                    dist = convolve(dist, self.dists[other.seat][face])
            self._others[key] = dist
        return self._others[key]

    def _odds_player(self, other: OtherSeat) -> Player:
        if other.seat not in self._odds:
            self._odds[other.seat] = odds_player(self.view, other, self.faces)
        return self._odds[other.seat]

    def value(self, bid: Bid) -> float:
        """The mean value of the robot's raise to bid over the deals."""
        return sum(self._playout(bid, deal) for deal in self.deals) / len(self.deals)

    def _playout(self, bid: Bid, deal: Deal) -> float:
        current, bidder = bid, self.view.seat
        for lap in range(ROUNDS):
            for other in self.order:
                seen, policy, bluff = deal[other.seat]
                player = (self._reader_player(other.seat, bid.face)
                          if policy < self.reader[other.seat] else self._odds_player(other))
                if current not in self._options:
                    self._options[current] = raise_options(self.view.ladder, current)
                answer = reply(player, current, self._options[current], seen,
                               bluff < BLUFF_RATE, self.exact_cost)
                if answer is None:   # a call: scored on the deal
                    actual = self._actual(current, deal)
                    if bidder == self.view.seat:
                        return self.outcome(actual, current.quantity, True)
                    return bystander_value(actual, current.quantity,
                                           self.view.rules.exact_rule, self.players)
                current, bidder = answer, other.seat
            # back at the robot: it calls when its one-move price of the call beats its
            # best raise's, and the call is scored on the deal; else it raises on
            value, best = self._robot_raise(current)
            if self.call_value(current) >= value:
                return self.outcome(self._actual(current, deal), current.quantity, False)
            if lap == ROUNDS - 1:
                return value
            current, bidder = best, self.view.seat
        return 0.0   # unreachable: the last lap returns

    def _robot_raise(self, current: Bid) -> tuple[float, Bid]:
        """The robot's best raise of current by its one-move price, and that price."""
        if current not in self._raises:
            self._raises[current] = max(
                ((self.robot_value(b), b) for b in self.view.ladder.raises(current)[:6]),
                default=(float("-inf"), current), key=lambda p: p[0])
        return self._raises[current]

    def _actual(self, bid: Bid, deal: Deal) -> int:
        """The table's count of bid in the deal."""
        index = bid.face - 1
        return (self.robot_hidden[bid.face] + sum(seen[index] for seen, _, _ in deal.values())
                - (len(deal) - 1) * self.exposed[bid.face])


def _order(view: SeatView) -> tuple[OtherSeat, ...]:
    """The other seats in the order they answer, from the robot's next seat."""
    return tuple(sorted(view.others, key=lambda o: (o.seat < view.seat, o.seat)))


@lru_cache(maxsize=1024)
def _posterior(plain: int, super_: int, faces: beliefs.Faces, star_bids: bool
               ) -> tuple[tuple[beliefs.Hand, ...], tuple[float, ...]]:
    """A seat's hands and their cumulative chances, to draw a hand from (keyed by the
    faces of its bids: plain ints, untracked by the garbage collector)."""
    hands, weights = beliefs.hand_weights(plain, super_, faces, beliefs.BLUFF, star_bids)
    return hands, tuple(itertools.accumulate(weights))


def searchable(view: SeatView) -> bool:
    """A view the search can play out: the others known, and the first of them in
    seat order the next to answer."""
    order = _order(view)
    return bool(order) and order[0].seat == view.next_seat
