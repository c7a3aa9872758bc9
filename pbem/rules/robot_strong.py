"""The strong robot: reads the bids, prices a raise by the next player's call.

Beliefs. A player who bids a face tends to hold that face: each seat's
hidden dice have an exact posterior from its bids since its last re-roll
(pbem.rules.beliefs); the count of a face over the table is the convolution
of the seats' counts, once per face for the whole move.

Values. An outcome is scored against the field: the robot's dice lost,
minus the mean of the others' (the exact rule of the game as played: under
the postal rule an exact bid costs every other player a die, +1 for the
bidder), weighed for first place rather than the mean: what puts the robot
ahead counts half (a die the field loses helps only against the seat that
loses it) and a die lost past the first counts half (the first one already
costs first place). A challenge is worth its expected outcome. A raise is worth the
chance that the next player, seeing their own hand and reading the other
players' bids, calls it, times the outcome when they do (given their hand);
not called, the risk passes on (worth 0). How they call is read from their
answers earlier in the game (pbem.rules.robot_reads): an odds player by the
plain odds of the robot's hand, a bid reader by its bids too and more rarely.
The move is chosen from these prices in pbem.rules.robot_choice (near-equal
moves mixed by the random stream); the robot's constants, its choice's too, are
here, where the arena's --tune sets them.

Standings. In postal an outcome is also weighed by what it changes in the
robot's share of first place over the five mini-games (pbem.rules.robot_standings),
half and half; level with the leaders (every seat at the start) that half counts
only as far as the next seat reads as a bid reader: four robots chasing exact
counts at each other left a fifth player first too often (docs/robot-history.md).

Search (off: robot_search.CANDIDATES is 1). The move so picked can be weighed
against the best raises by that price with the next players' replies played
out (pbem.rules.robot_search); not kept, for the goals it missed (docs/robot-history.md).

Exact replies. Where the next seat reads as a bid reader (EXACT_MIN_READER), the
pick and the best other raises are priced again by that seat's actual reply summed
over the hands it can hold, and not called, by the seat after's call on its raise
(pbem.rules.robot_reply): a point against four readers on fresh seeds (docs/robot-history.md).
"""

from __future__ import annotations

from pbem.rules import beliefs, robot_reads, robot_reply, robot_standings
from pbem.rules.challenge import count_matching
from pbem.rules.dice import Face
from pbem.rules.ladder import Bid
from pbem.rules.odds import OtherSeat, SeatView, count_distribution, match_probability
from pbem.rules.robot_search import Dist, convolve, seat_distribution, tail
from pbem.rules.ruleset import ExactRule

SEARCH_WIDTH = 40     # raises above the standing bid worth weighing
CALL_BELOW = 0.4      # the next player calls a bid they think holds less often than this
CALL_SOFTNESS = 0.3   # ... blurred over this width of their odds
READER_CALL_BELOW = 0.25  # ... a bid reader, less often than this
READER_READS = 0.5    # a bid reader reads the robot's bids at this share (the rest plain odds)
MISLEAD = 0.1         # value of a die a bid reader is led to think the robot holds, unheld
MIX = 0.04            # moves within this value of the best are mixed
EXPOSE_RATE = 0.3     # how often a worthwhile expose is made
# First place, not the mean: a die the field loses helps only against the seat that
# loses it, a die of the robot's own is first place lost, a second one costs less
GAIN_WEIGHT = 0.5     # an outcome that puts the robot ahead counts at this share
LOSS_TAIL = 0.5       # each die lost after the first counts at this share
# postal: an outcome is worth what it changes in the robot's share of first place over
# the five mini-games (pbem.rules.robot_standings) at this weight, the rest as above,
# while the robot has the most virtual dice alone; behind, at STANDINGS_BEHIND (0: off,
# the one-move robot's values)
STANDINGS = 0.5
STANDINGS_BEHIND = 0.5
# ... level with the leaders rather than ahead (every seat at the start): this weight,
# or STANDINGS when negative
STANDINGS_LEVEL = -1.0
# ... an exact count of the robot's own bid is weighed by the standings at this share of
# the weight (the rest as the one-move robot: +1/2)
STANDINGS_EXACT = 1.0
# ... level with the leaders, the weight is scaled towards how much the next seat reads
# as a bid reader beyond even odds (Table.misled) at this share (0: not at all). At 0 a
# wary player among four robots came first 16.2% of the time (13.7 at 1; docs/robot-history.md)
STANDINGS_READS = 1.0
START_DICE = 5        # postal's virtual dice at the start (pbem.rules.postal)
# the search (robot_search.CANDIDATES > 1) scores the robot's calls and its called bids
# with the standings too (Table.outcome) when 1; the one-move values when 0 (1 gained
# nothing against four readers: 27.4 against 27.7, seeds from 300000; docs/robot-history.md)
SEARCH_STANDINGS = 0
# the one-move pick and the best other raises by the one-move price, this many raises
# in all, are priced again by the next seat's actual reply summed over its hands
# (pbem.rules.robot_reply; 0: off, the soft call curve alone)
EXACT_REPLY = 3
# ... only when the next seat's reader weight (robot_reads) is at least this (0: always)
EXACT_MIN_READER = 0.75
# ... not called, the next seat's raise is answered by the seat after, the robot a
# bystander (1), or worth 0 as the one-move robot (0)
REPLY_AFTER = 1



def exact_values(rule: ExactRule, players: int) -> tuple[float, float]:
    """(bidder's, challenger's) value of an exact count, against the field."""
    field = max(1, players - 1)
    if rule is ExactRule.ALL_BUT_BIDDER:
        return 1.0, -1.0 + (players - 2) / field
    if rule is ExactRule.CHALLENGER:
        return 1.0 / field, -1.0
    if rule is ExactRule.CHALLENGER_GIVES:   # the die goes to the bidder below the start
        return 0.5 + 1.0 / field, -1.0 - 0.5 / field
    return 0.0, 0.0   # NOBODY; EVERYONE costs all alike


def outcome_value(actual: int, quantity: int, bidder: bool, rule: ExactRule,
                  players: int) -> float:
    """The robot's dice against the field's mean, as bidder or as challenger,
    weighed for first place: a gain counts GAIN_WEIGHT, a loss past one die LOSS_TAIL."""
    field = max(1, players - 1)
    if actual == quantity:
        value = exact_values(rule, players)[0 if bidder else 1]
        return value * GAIN_WEIGHT if value > 0 else value
    short = actual < quantity
    lost = abs(actual - quantity)
    gain = GAIN_WEIGHT * lost / field
    loss = -(min(lost, 1) + LOSS_TAIL * max(0, lost - 1))
    return (loss if short else gain) if bidder else (gain if short else loss)


class Table:
    """The counts of one move: for each face, the known part and the hidden beliefs."""

    def __init__(self, view: SeatView) -> None:
        self.view = view
        self.players = len(view.others) + 1
        nxt = [o for o in view.others if o.seat == view.next_seat]
        self.next: OtherSeat | None = nxt[0] if nxt else None
        self.rest = tuple(o for o in view.others if o is not self.next)
        self._cache: dict[Face, tuple[int, Dist, Dist]] = {}
        self._tails: dict[Face, tuple[int, Dist, Dist]] = {}
        self._mislead: dict[Face, float] = {}
        self._calls: dict[Bid, float] = {}
        # how much the next player is a bid reader, from their answers earlier in the game
        self.reader = (robot_reads.seat_reader_weight(view.answers, self.next.seat)
                       if self.next is not None else 0.0)
        self._outcomes: dict[tuple[int, bool], float] = {}
        self._exact: robot_reply.ExactPrice | None = None
        self.standings = (max(STANDINGS, STANDINGS_BEHIND, STANDINGS_LEVEL) > 0.0
                          and len(view.virtual_dice) == self.players
                          and self.next is not None)
        if self.standings:
            seats = len(view.virtual_dice)
            self.scores = dict(enumerate(view.virtual_dice, start=1))
            self.previous = (view.seat - 2) % seats + 1   # who made the standing bid
            self.weight = standings_weight(view.virtual_dice, view.seat)
            if STANDINGS_READS > 0.0 and level_with_leaders(view.virtual_dice, view.seat):
                self.weight *= 1.0 - STANDINGS_READS + STANDINGS_READS * self.misled()
            self.share_now = robot_standings.share_after(
                self.scores, view.seat, {}, (*view.later, len(view.own.dice)))

    def outcome(self, actual: int, quantity: int, bidder: bool) -> float:
        """outcome_value, and in postal weighed by the standings (STANDINGS): the
        change in the robot's share of first place over the game, in lost dice at
        the start (robot_standings.unit)."""
        rule = self.view.rules.exact_rule
        if not self.standings:
            return outcome_value(actual, quantity, bidder, rule, self.players)
        key = (actual - quantity, bidder)   # who loses what depends on this alone
        if key not in self._outcomes:
            plain = outcome_value(actual, quantity, bidder, rule, self.players)
            me = self.view.seat
            assert self.next is not None
            losses = challenge_losses(actual, quantity, me if bidder else self.previous,
                                      self.next.seat if bidder else me, self.scores, rule)
            share = robot_standings.share_after(self.scores, me, losses, self.view.later)
            shift = (share - self.share_now) / robot_standings.unit()
            weight = self.weight
            if bidder and actual == quantity:
                weight *= STANDINGS_EXACT
            self._outcomes[key] = weight * shift + (1.0 - weight) * plain
        return self._outcomes[key]

    def counts(self, face: Face) -> tuple[int, Dist, Dist]:
        """(known matching, next seat's hidden dist, the other seats' hidden dist)."""
        if face not in self._cache:
            bid = Bid(1, face)
            known = count_matching(self.view.known, bid)
            if not self.view.others:   # a view without beliefs: plain odds
                rest = count_distribution(self.view.unknown_plain, self.view.unknown_super,
                                          match_probability(bid))
                self._cache[face] = (known, (1.0,), rest)
            else:
                rest_dist: Dist = (1.0,)
                stars = self.view.rules.star_bids
                for other in self.rest:
                    rest_dist = convolve(rest_dist, seat_distribution(other, face, stars))
                nxt = seat_distribution(self.next, face, stars) if self.next else (1.0,)
                self._cache[face] = (known, nxt, rest_dist)
        return self._cache[face]

    def challenge_value(self) -> float:
        assert self.view.current is not None
        return self.bid_challenge_value(self.view.current)

    def bid_challenge_value(self, bid: Bid) -> float:
        """The robot's value of calling bid, by its beliefs now (cached: the search asks
        it of the bids that come back round)."""
        if bid not in self._calls:
            known, nxt, rest = self.counts(bid.face)
            total = 0.0
            for c, pr in enumerate(convolve(nxt, rest)):
                if pr > 1e-9:
                    total += pr * self.outcome(known + c, bid.quantity, False)
            self._calls[bid] = total
        return self._calls[bid]

    def next_sees(self, face: Face) -> tuple[int, Dist, Dist]:
        """What the next player sees of a face: the exposed matches, and P(count >= c)
        over the dice hidden from them as an odds player and as a bid reader sees it."""
        if face not in self._tails:
            view = self.view
            bid = Bid(1, face)
            exposed = count_matching(view.others_exposed + view.own.exposed, bid)
            hidden = list(view.own.hidden)
            own_plain = sum(1 for d in hidden if not d.super)
            own_super = sum(1 for d in hidden if d.super)
            # the others' bids are read in both; the robot's hand is plain odds to an
            # odds player (taking them to read its new bid too made it bluff too boldly:
            # in classic Bluff against the odds players 35% of first places, not 42%)
            stars = view.rules.star_bids
            rest: Dist = (1.0,)
            for other in self.rest:
                rest = convolve(rest, seat_distribution(other, face, stars))
            plain = count_distribution(own_plain, own_super, match_probability(bid))
            tails = [tail(convolve(plain, rest))]
            if self.reader > 0.0:   # a reader reads the robot's bids, the new one too
                # a bid's face is all a reading of it weighs (one cache key a face)
                read = beliefs.face_counts(own_plain, own_super, (*view.own_bids, Bid(1, face)),
                                           face, beliefs.BLUFF, stars)
                mixed = tuple(READER_READS * r + (1 - READER_READS) * p
                              for r, p in zip(read, plain))
                self._mislead[face] = (sum(c * pr for c, pr in enumerate(read))
                                       - count_matching(view.own.hidden, bid))
                tails.append(tail(convolve(mixed, rest)))
            else:
                tails.append(tails[0])
            self._tails[face] = (exposed, tails[0], tails[1])
        return self._tails[face]

    def mislead(self, face: Face) -> float:
        """How many more hidden dice of face than it holds a bid reader takes the robot
        to hold after a bid of face (its bids since its re-roll read by the beliefs);
        0 when the next seat reads as an odds player."""
        if self.reader <= 0.0:
            return 0.0
        self.next_sees(face)
        return self._mislead[face]

    def call_chance(self, bid: Bid, next_matching: int) -> float:
        """How likely the next player calls bid when holding next_matching of it:
        their odds from their own hidden dice, the exposed ones and the bids, and
        the call model of the kind of player their answers so far show."""
        if self.next is None:
            return 1.0
        exposed, tail, read_tail = self.next_sees(bid.face)
        need = bid.quantity - exposed - next_matching
        if need <= 0:
            return 0.0
        chance = (1 - self.reader) * _call(tail, need, CALL_BELOW)
        if self.reader > 0.0:
            chance += self.reader * _call(read_tail, need, READER_CALL_BELOW)
        return chance

    def raise_value(self, bid: Bid) -> float:
        known, nxt, rest = self.counts(bid.face)
        total = 0.0
        for x, px in enumerate(nxt):
            if px < 1e-9:
                continue
            called = self.call_chance(bid, x)
            if called <= 0.0:
                continue
            outcome = 0.0
            for r, pr in enumerate(rest):
                if pr > 1e-9:
                    outcome += pr * self.outcome(known + x + r, bid.quantity, True)
            total += px * called * outcome
        # a reader who takes the robot to hold dice it does not overbids that face later;
        # only when the next seat reads as a reader more than as an odds player (weighed
        # at the reader weight, misleading cost 1.8 points against four odds players)
        return total + MISLEAD * self.misled() * self.mislead(bid.face)

    def exact_raise_value(self, bid: Bid) -> float:
        """raise_value with the next seat's call its actual reply, summed over the hands
        it can hold (pbem.rules.robot_reply), not the soft call curve; not called,
        worth the seat after's call on the next seat's raise with REPLY_AFTER."""
        total = self.exact_price().value(bid, bool(REPLY_AFTER))
        return total + MISLEAD * self.misled() * self.mislead(bid.face)

    def exact_price(self) -> robot_reply.ExactPrice:
        if self._exact is None:
            self._exact = robot_reply.ExactPrice(self, soft_call, READER_READS)
        return self._exact

    def misled(self) -> float:
        """How much misleading the next seat counts: 0 up to a reader weight of a half,
        then rising to 1 for a sure reader; 0 with a super die, whose answers' plain
        odds count it as a plain die and so read odds players as readers (0.66 in
        classic anniversary: misleading them cost 17 points of first place)."""
        if self.view.rules.super_die:
            return 0.0
        return max(0.0, 2.0 * self.reader - 1.0)


def level_with_leaders(virtual_dice: tuple[int, ...], seat: int) -> bool:
    """Whether seat has the most virtual dice, level with another seat."""
    top = max(virtual_dice)
    return virtual_dice[seat - 1] == top and virtual_dice.count(top) > 1


def standings_weight(virtual_dice: tuple[int, ...], seat: int) -> float:
    """The weight of the standings in an outcome's value: STANDINGS while the robot
    has the most virtual dice alone, STANDINGS_LEVEL level with the most (STANDINGS
    when negative), STANDINGS_BEHIND behind."""
    if virtual_dice[seat - 1] < max(virtual_dice):
        return STANDINGS_BEHIND
    if level_with_leaders(virtual_dice, seat) and STANDINGS_LEVEL >= 0.0:
        return STANDINGS_LEVEL
    return STANDINGS


def challenge_losses(actual: int, quantity: int, bidder: int, challenger: int,
                     scores: dict[int, int], rule: ExactRule) -> dict[int, int]:
    """Who loses how many dice when a bid of quantity is called and the table holds
    actual (pbem.rules.challenge.resolve_challenge, from the count alone)."""
    if actual < quantity:
        return {bidder: quantity - actual}
    if actual > quantity:
        return {challenger: actual - quantity}
    if rule is ExactRule.ALL_BUT_BIDDER:
        return {seat: 1 for seat in scores if seat != bidder}
    if rule is ExactRule.EVERYONE:
        return {seat: 1 for seat in scores}
    if rule is ExactRule.NOBODY:
        return {}
    if rule is ExactRule.CHALLENGER_GIVES and scores[bidder] < START_DICE:
        return {challenger: 1, bidder: -1}
    return {challenger: 1}


def soft_call(odds_tail: Dist, read_tail: Dist, need: int, reader: float) -> float:
    """P(a call) of a player needing need more dice, its odds P(count >= c) as an odds
    player and as a bid reader sees them, by the call model of each mixed at reader."""
    return ((1 - reader) * _call(odds_tail, need, CALL_BELOW)
            + reader * _call(read_tail, need, READER_CALL_BELOW))


def _call(tail: Dist, need: int, below: float) -> float:
    """P(a call) of a player whose odds of need more dice are tail[need]: a soft
    threshold at below, over CALL_SOFTNESS of odds."""
    holds = tail[need] if need < len(tail) else 0.0
    return min(1.0, max(0.0, 0.5 + (below - holds) / (2 * CALL_SOFTNESS)))
