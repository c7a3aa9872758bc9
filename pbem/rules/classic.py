"""Classic (non-postal) Bluff, 2 to 6 players (docs/rules.md sections 1-4).

Rounds of roll, bid round the table, one challenge. The dice lost leave the
game; the player who was right at the challenge opens the next round; a
player with no dice is out and skipped; the last player with dice wins.

A pure state machine in the style of ``postal``: ``new_game`` rolls round 1,
``apply_move`` plays the one due seat's move. Dice come from the stream with
labels keyed by round and seat, so a replay rebuilds the same game.

Choices where the rule texts are silent (docs/rules.md writes them down):

- Seat 1 opens round 1 (the server draws seats at random).
- The player who was right: the bidder when the bid held (``actual >= bid``,
  so also on an exact bid under every exact rule), else the challenger. When
  that player is out, the next seat still in opens.
- Super die (anniversary): a hand is ``plain`` dice and maybe the orange die
  worth 2. A loser pays exactly what is owed when the dice allow it, keeping
  the orange die as long as possible (plain dice go first; the orange die
  goes when the plain dice cannot cover the loss, keeping one plain die when
  that pays exactly). The one overpayment is the rule's own case: one die
  owed and only the orange die left: it goes, nothing comes back.
- Challenger gives (German variant): the challenger always loses one die;
  the bidder gains one plain die only while holding fewer than
  ``dice_per_player`` dice (as in ``resolve_challenge``).
- Everyone loses one (German variant): if that would leave nobody with dice,
  the bidder, who was right, keeps their dice and wins.
- Standings: players still in by dice left; players out by the round they
  went out in, later is better; out in the same round = a shared rank.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pbem.rules.bid_moves import CHALLENGE, BidMove, ChallengeMove, Move
from pbem.rules.challenge import ChallengeResult, resolve_challenge
from pbem.rules.dice import DiceStream, Die, Face
from pbem.rules.dice_cup import Cup
from pbem.rules.errors import IllegalMove
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.odds import Answer, SeatView, answers, bids_since_reroll, other_seats
from pbem.rules.postal import make_ladder
from pbem.rules.ruleset import RuleSet
from pbem.text.wording import Message, _

MIN_PLAYERS = 2
MAX_PLAYERS = 6


def hand_label(round_no: int, seat: int) -> str:
    return f"classic/hand/{round_no}/{seat}"


def reroll_label(round_no: int, seat: int, nth: int) -> str:
    return f"classic/reroll/{round_no}/{seat}/{nth}"


@dataclass(frozen=True)
class Hand:
    """The dice a player owns between rounds: plain dice and maybe the orange super die."""

    plain: int
    super: bool = False

    @property
    def count(self) -> int:
        """Dice on the table (the orange die is one die)."""
        return self.plain + int(self.super)

    @property
    def value(self) -> int:
        """Dice as the ladder and losses count them (the orange die is two)."""
        return self.plain + 2 * int(self.super)

    def lose(self, owed: int) -> Hand:
        if owed <= 0:
            return self
        if owed >= self.value:
            return Hand(0)
        if owed <= self.plain:
            return Hand(self.plain - owed, self.super)
        # owed == plain + 1 with the orange die: it pays 2, so one plain die stays,
        # unless there is none, the "only the orange die left" rule: it goes
        return Hand(1) if self.plain >= 1 else Hand(0)


@dataclass(frozen=True)
class PlacedBid:
    seat: int
    bid: Bid
    exposed: tuple[Face, ...] = ()
    rerolled: tuple[Face, ...] = ()   # the new faces of the re-rolled dice


@dataclass(frozen=True)
class RoundEnd:
    """A finished round and its reveal."""

    round: int
    opener: int
    bids: tuple[PlacedBid, ...]
    challenger: int
    result: ChallengeResult
    table: dict[int, tuple[Die, ...]]   # every seat still in: its dice at the reveal
    lost: dict[int, int]                # dice value really given up (negative: gained)
    out: tuple[int, ...]                # seats that went out in this round
    next_opener: int | None             # None when the game is over


@dataclass(frozen=True)
class BidPlaced:
    round: int
    seat: int
    bid: Bid
    exposed: tuple[Face, ...]
    rerolled: tuple[Face, ...]


@dataclass(frozen=True)
class RoundEnded:
    end: RoundEnd


@dataclass(frozen=True)
class RoundStarted:
    round: int
    opener: int


@dataclass(frozen=True)
class Standing:
    rank: int
    seat: int
    dice: int                # dice value left, as losses count them (0 once out)
    out_round: int | None    # the round the seat went out in; None while in
    held: int = 0            # dice held: the orange die is one die (worth two in ``dice``)


@dataclass(frozen=True)
class GameEnded:
    winner: int
    standings: tuple[Standing, ...]


Event = BidPlaced | RoundEnded | RoundStarted | GameEnded


@dataclass(frozen=True)
class ClassicState:
    rules: RuleSet
    players: int
    round: int
    hands: tuple[Hand, ...]              # index seat - 1
    cups: tuple[Cup, ...]                # this round's cups; empty for a seat that is out
    opener: int
    bids: tuple[PlacedBid, ...] = ()     # this round's bids
    to_move: int | None = None           # None once the game is over
    finished: tuple[RoundEnd, ...] = ()
    out_round: tuple[int | None, ...] = ()

    @property
    def seats(self) -> range:
        return range(1, self.players + 1)

    def hand(self, seat: int) -> Hand:
        return self.hands[seat - 1]

    def cup(self, seat: int) -> Cup:
        return self.cups[seat - 1]

    def is_in(self, seat: int) -> bool:
        return self.hand(seat).count > 0

    @property
    def seats_in(self) -> tuple[int, ...]:
        return tuple(s for s in self.seats if self.is_in(s))

    @property
    def game_over(self) -> bool:
        return len(self.seats_in) <= 1

    @property
    def winner(self) -> int | None:
        return self.seats_in[0] if self.game_over and self.seats_in else None

    @property
    def dice_in_play(self) -> int:
        return sum(h.value for h in self.hands)

    @property
    def current_bid(self) -> Bid | None:
        return self.bids[-1].bid if self.bids else None

    @property
    def bidder(self) -> int | None:
        return self.bids[-1].seat if self.bids else None

    @property
    def ladder(self) -> Ladder:
        return make_ladder(self.dice_in_play, self.rules.star_bids, self.rules.board_cap)

    @property
    def last_round(self) -> RoundEnd | None:
        return self.finished[-1] if self.finished else None

    def next_in(self, seat: int) -> int:
        """The next seat after seat (clockwise) that still has dice."""
        for step in range(1, self.players + 1):
            candidate = (seat - 1 + step) % self.players + 1
            if self.is_in(candidate):
                return candidate
        raise ValueError("nobody has dice")

    def due(self) -> dict[int, str]:
        """Only the player to move: seat -> what they must do (in English)."""
        return {seat: str(what) for seat, what in self.due_said().items()}

    def due_said(self) -> dict[int, Message]:
        """``due``, each said in its reader's language."""
        if self.to_move is None:
            return {}
        bid = self.current_bid
        if bid is None:
            what = _("open round {round} with a bid", round=self.round)
        elif self.ladder.lowest_raise(bid) is None:
            what = _("challenge {bid} (the top of the board) in round {round}",
                     bid=bid.said(), round=self.round)
        else:
            what = _("raise {bid} or challenge in round {round}", bid=bid.said(),
                     round=self.round)
        return {self.to_move: what}

    def legal_moves(self) -> list[Move]:
        """Every bid (without expose) and the challenge open to the mover now."""
        if self.to_move is None:
            return []
        raises: list[Move] = [BidMove(b) for b in self.ladder.raises(self.current_bid)]
        return raises + [CHALLENGE] if self.current_bid is not None else raises

    def check_move(self, seat: int, move: Move) -> None:
        """Raise IllegalMove, saying what would do, unless seat may make move now."""
        if self.to_move is None:
            raise IllegalMove(_("the game is over"))
        if not 1 <= seat <= self.players:
            raise IllegalMove(_("there is no player {seat} in this game", seat=seat))
        if not self.is_in(seat):
            raise IllegalMove(_("player {seat} is out of the game (no dice left)", seat=seat))
        if seat != self.to_move:
            raise IllegalMove(_("it is player {mover}'s move in round {round}, not player "
                                "{seat}'s", mover=self.to_move, round=self.round, seat=seat))
        if isinstance(move, ChallengeMove):
            if self.current_bid is None:
                raise IllegalMove(_("round {round} has no bid yet: you open it, so you must "
                                    "BID", round=self.round))
            return
        self.ladder.check(self.current_bid, move.bid)
        if move.expose:
            if not self.rules.expose:
                raise IllegalMove(_("exposing dice is off in this game"))
            self.cup(seat).check_expose(move.expose)

    def seat_view(self, seat: int) -> SeatView:
        """What seat knows of this round, for the odds and the robot."""
        others = [self.cup(s) for s in self.seats if s != seat]
        hidden = [d for c in others for d in c.hidden]
        placed = [(b.seat, b.bid, bool(b.exposed)) for b in self.bids]
        return SeatView(
            seat=seat, own=self.cup(seat),
            others_exposed=tuple(d for c in others for d in c.exposed),
            unknown_plain=sum(1 for d in hidden if not d.super),
            unknown_super=sum(1 for d in hidden if d.super),
            current=self.current_bid, ladder=self.ladder, rules=self.rules,
            others=other_seats([(s, self.cup(s)) for s in self.seats_in], placed, seat),
            next_seat=self.next_in(seat), own_bids=bids_since_reroll(placed, seat),
            answers=self.answers(seat))

    def answers(self, seat: int) -> tuple[Answer, ...]:
        """The other seats' answers to bids in the last finished round (its cups
        shown) and in this one: what a report.json shows of them too."""
        found: tuple[Answer, ...] = ()
        end = self.last_round
        if end is not None:
            found = answers(tuple((b.seat, b.bid, b.exposed) for b in end.bids),
                            {s: len(d) for s, d in end.table.items()}, end.challenger,
                            end.table)
        found += answers(tuple((b.seat, b.bid, b.exposed) for b in self.bids),
                         {s: len(self.cup(s).dice) for s in self.seats_in})
        return tuple(a for a in found if a.seat != seat)

    def standings(self) -> tuple[Standing, ...]:
        """Best first: still in by dice left, then out by the round they went out in."""
        def key(seat: int) -> tuple[int, int]:
            gone = self.out_round[seat - 1]
            return (1, self.hand(seat).value) if gone is None else (0, gone)

        ordered = sorted(self.seats, key=lambda s: (tuple(-k for k in key(s)), s))
        return tuple(Standing(1 + sum(1 for o in self.seats if key(o) > key(s)), s,
                              self.hand(s).value, self.out_round[s - 1], self.hand(s).count)
                     for s in ordered)


def _roll(stream: DiceStream, round_no: int, hands: tuple[Hand, ...]) -> tuple[Cup, ...]:
    return tuple(Cup.rolled(stream.dice(hand_label(round_no, seat), hand.count),
                            super_die=hand.super)
                 for seat, hand in enumerate(hands, start=1))


def new_game(stream: DiceStream, rules: RuleSet, players: int) -> ClassicState:
    """Round 1 rolled for seats 1..players; seat 1 opens."""
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise ValueError(f"classic Bluff is for {MIN_PLAYERS} to {MAX_PLAYERS} players, "
                         f"not {players}")
    start = (Hand(rules.dice_per_player - 1, True) if rules.super_die
             else Hand(rules.dice_per_player))
    hands = (start,) * players
    return ClassicState(rules, players, 1, hands, _roll(stream, 1, hands), opener=1,
                        to_move=1, out_round=(None,) * players)


def _apply_bid(state: ClassicState, seat: int, move: BidMove,
               stream: DiceStream) -> tuple[ClassicState, BidPlaced]:
    cup = state.cup(seat)
    rerolled: tuple[Face, ...] = ()
    if move.expose:
        label = reroll_label(state.round, seat, cup.rerolls + 1)
        rerolled = stream.dice(label, len(cup.hidden) - len(move.expose))
        cup = cup.expose(move.expose, rerolled)
    cups = tuple(cup if s == seat else c for s, c in enumerate(state.cups, start=1))
    placed = PlacedBid(seat, move.bid, move.expose, rerolled)
    after = replace(state, cups=cups, bids=state.bids + (placed,), to_move=state.next_in(seat))
    return after, BidPlaced(state.round, seat, move.bid, move.expose, rerolled)


def _pay(state: ClassicState, result: ChallengeResult) -> tuple[Hand, ...]:
    """The hands after the losers pay (and the bidder gains, when the challenger gives)."""
    hands = list(state.hands)
    for seat, owed in result.losses.items():
        hand = hands[seat - 1]
        # a negative loss is the die the challenger gives; it is always a plain one
        hands[seat - 1] = Hand(hand.plain + 1, hand.super) if owed < 0 else hand.lose(owed)
    if all(h.count == 0 for h in hands):   # only "everyone loses one" can do this
        hands[result.bidder - 1] = state.hand(result.bidder)   # see the module docstring
    return tuple(hands)


def _apply_challenge(state: ClassicState, seat: int,
                     stream: DiceStream) -> tuple[ClassicState, list[Event]]:
    bid, bidder = state.current_bid, state.bidder
    assert bid is not None and bidder is not None
    table = {s: state.cup(s).dice for s in state.seats_in}
    result = resolve_challenge(bid, bidder, seat, table, state.rules.exact_rule,
                               bidder_at_max=state.hand(bidder).count >= state.rules.dice_per_player)
    hands = _pay(state, result)
    lost = {s: state.hand(s).value - hands[s - 1].value for s in state.seats
            if hands[s - 1] != state.hand(s)}
    out = tuple(s for s in state.seats_in if hands[s - 1].count == 0)
    out_round = tuple(state.round if s in out else r
                      for s, r in enumerate(state.out_round, start=1))
    paid = replace(state, hands=hands, out_round=out_round)
    right = bidder if result.actual >= bid.quantity else seat
    next_opener = None if paid.game_over else (right if paid.is_in(right) else paid.next_in(right))
    end = RoundEnd(state.round, state.opener, state.bids, seat, result, table, lost, out,
                   next_opener)
    events: list[Event] = [RoundEnded(end)]
    finished = state.finished + (end,)
    if next_opener is None:
        after = replace(paid, cups=tuple(Cup(()) for _seat in state.seats), bids=(), to_move=None,
                        finished=finished)
        winner = after.winner
        assert winner is not None
        events.append(GameEnded(winner, after.standings()))
        return after, events
    round_no = state.round + 1
    after = replace(paid, round=round_no, cups=_roll(stream, round_no, hands),
                    opener=next_opener, bids=(), to_move=next_opener, finished=finished)
    events.append(RoundStarted(round_no, next_opener))
    return after, events


def apply_move(state: ClassicState, seat: int, move: Move,
               stream: DiceStream) -> tuple[ClassicState, list[Event]]:
    """Play seat's move; an illegal move raises IllegalMove and changes nothing."""
    state.check_move(seat, move)
    if isinstance(move, BidMove):
        after, placed = _apply_bid(state, seat, move, stream)
        return after, [placed]
    return _apply_challenge(state, seat, stream)
