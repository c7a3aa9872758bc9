"""The postal game (docs/rules.md section 4): five players, five mini-games at once.

A pure state machine: ``new_game`` rolls the cups from a dice stream,
``apply_turn`` takes one move per due seat and returns the next state and
what happened. Nothing here knows of mail, storage or clocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from pbem.rules.bid_moves import CHALLENGE, BidMove, ChallengeMove, Move
from pbem.rules.challenge import ChallengeResult, resolve_challenge
from pbem.rules.dice import DiceStream, Die, Face, hand_label, reroll_label
from pbem.rules.dice_cup import Cup
from pbem.rules.errors import IllegalMove
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.odds import Answer, SeatView, answers, bids_since_reroll, other_seats
from pbem.rules.ruleset import POSTAL_RULES, RuleSet
from pbem.text.wording import _

PLAYERS = 5
MINIGAMES = 5
START_VIRTUAL_DICE = 5
SEATS = tuple(range(1, PLAYERS + 1))


def dice_per_player(minigame: int) -> int:
    """Mini-game 1 has 5 dice a player, mini-game 5 has 1."""
    return MINIGAMES + 1 - minigame


def mover(minigame: int, turn: int) -> int:
    """The seat that moves in a mini-game in a turn: ((k + t - 2) mod 5) + 1."""
    return (minigame + turn - 2) % PLAYERS + 1


def minigame_of(seat: int, turn: int) -> int:
    """The one mini-game a seat moves in during a turn (the inverse of mover)."""
    return (seat - turn) % MINIGAMES + 1


@lru_cache(maxsize=256)
def make_ladder(dice_in_play: int, star_bids: bool, board_cap: int | None) -> Ladder:
    return Ladder(dice_in_play, star_bids=star_bids, board_cap=board_cap)


@dataclass(frozen=True)
class PlacedBid:
    turn: int
    seat: int
    bid: Bid
    exposed: tuple[Face, ...] = ()
    rerolled: tuple[Face, ...] = ()   # the new faces of the re-rolled dice


@dataclass(frozen=True)
class Challenge:
    turn: int
    seat: int
    result: ChallengeResult
    table: dict[int, tuple[Die, ...]]   # every seat's dice at the reveal


@dataclass(frozen=True)
class MiniGame:
    number: int
    cups: tuple[Cup, ...]   # index seat - 1
    bids: tuple[PlacedBid, ...] = ()
    challenge: Challenge | None = None

    @property
    def ended(self) -> bool:
        return self.challenge is not None

    @property
    def current_bid(self) -> Bid | None:
        return self.bids[-1].bid if self.bids else None

    @property
    def bidder(self) -> int | None:
        return self.bids[-1].seat if self.bids else None

    @property
    def dice_in_play(self) -> int:
        return sum(d.weight for cup in self.cups for d in cup.dice)

    def cup(self, seat: int) -> Cup:
        return self.cups[seat - 1]


@dataclass(frozen=True)
class BidPlaced:
    minigame: int
    seat: int
    bid: Bid
    exposed: tuple[Face, ...]
    rerolled: tuple[Face, ...]


@dataclass(frozen=True)
class ChallengeResolved:
    minigame: int
    seat: int
    result: ChallengeResult


@dataclass(frozen=True)
class Standing:
    rank: int
    seat: int
    virtual_dice: int


@dataclass(frozen=True)
class GameEnded:
    standings: tuple[Standing, ...]


Event = BidPlaced | ChallengeResolved | GameEnded


def rank(scores: Mapping[int, int]) -> tuple[Standing, ...]:
    """Most dice first; equal scores share a rank (1, 1, 3, ...)."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return tuple(Standing(1 + sum(1 for v in scores.values() if v > score), seat, score)
                 for seat, score in ordered)


@dataclass(frozen=True)
class PostalState:
    rules: RuleSet
    turn: int
    minigames: tuple[MiniGame, ...]
    virtual_dice: tuple[int, ...]   # index seat - 1

    @property
    def game_over(self) -> bool:
        return all(m.ended for m in self.minigames)

    def minigame(self, number: int) -> MiniGame:
        return self.minigames[number - 1]

    def ladder(self, number: int) -> Ladder:
        return make_ladder(self.minigame(number).dice_in_play, self.rules.star_bids,
                           self.rules.board_cap)

    def mover(self, number: int) -> int | None:
        return None if self.minigame(number).ended else mover(number, self.turn)

    def due(self) -> dict[int, int]:
        """seat -> the mini-game it must move in this turn, for running mini-games."""
        return {mover(m.number, self.turn): m.number for m in self.minigames if not m.ended}

    def legal_moves(self, number: int) -> list[Move]:
        """Every bid (without expose) and the challenge open to the mover now."""
        game = self.minigame(number)
        if game.ended:
            return []
        raises: list[Move] = [BidMove(b) for b in self.ladder(number).raises(game.current_bid)]
        return raises + [CHALLENGE] if game.current_bid is not None else raises

    def check_move(self, seat: int, move: Move) -> int:
        """Raise IllegalMove unless seat may make move now; return its mini-game."""
        number = self.due().get(seat)
        if number is None:
            raise IllegalMove(_("player {seat} has no move this turn", seat=seat))
        game = self.minigame(number)
        if isinstance(move, ChallengeMove):
            if game.current_bid is None:
                raise IllegalMove(_("mini-game {number} has no bid yet: you open it, so you "
                                    "must BID", number=number))
            return number
        self.ladder(number).check(game.current_bid, move.bid)
        if move.expose:
            if not self.rules.expose:
                raise IllegalMove(_("exposing dice is off in this game"))
            game.cup(seat).check_expose(move.expose)
        return number

    def seat_view(self, seat: int, number: int) -> SeatView:
        game = self.minigame(number)
        others = [c for s, c in enumerate(game.cups, start=1) if s != seat]
        hidden = [d for c in others for d in c.hidden]
        placed = [(b.seat, b.bid, bool(b.exposed)) for b in game.bids]
        return SeatView(
            seat=seat, own=game.cup(seat),
            others_exposed=tuple(d for c in others for d in c.exposed),
            unknown_plain=sum(1 for d in hidden if not d.super),
            unknown_super=sum(1 for d in hidden if d.super),
            current=game.current_bid, ladder=self.ladder(number), rules=self.rules,
            others=other_seats(list(enumerate(game.cups, start=1)), placed, seat),
            next_seat=seat % PLAYERS + 1, own_bids=bids_since_reroll(placed, seat),
            answers=self.answers(seat), virtual_dice=self.virtual_dice,
            later=tuple(dice_per_player(m.number) for m in self.minigames
                        if not m.ended and m.number != number))

    def answers(self, seat: int) -> tuple[Answer, ...]:
        """The other seats' answers to bids in every mini-game (the cups of the ended
        ones shown)."""
        out: list[Answer] = []
        for m in self.minigames:
            placed = tuple((b.seat, b.bid, b.exposed) for b in m.bids)
            sizes = {s: len(m.cup(s).dice) for s in SEATS}
            c = m.challenge
            found = (answers(placed, sizes) if c is None else
                     answers(placed, sizes, c.seat, c.table))
            out += [a for a in found if a.seat != seat]
        return tuple(out)

    def standings(self) -> tuple[Standing, ...]:
        return rank(dict(zip(SEATS, self.virtual_dice)))


def new_game(stream: DiceStream, rules: RuleSet = POSTAL_RULES) -> PostalState:
    games = tuple(
        MiniGame(k, tuple(Cup.rolled(stream.dice(hand_label(k, s), dice_per_player(k)),
                                     super_die=rules.super_die) for s in SEATS))
        for k in range(1, MINIGAMES + 1))
    return PostalState(rules, 1, games, (START_VIRTUAL_DICE,) * PLAYERS)


def _apply_bid(state: PostalState, game: MiniGame, seat: int, move: BidMove,
               stream: DiceStream) -> tuple[MiniGame, BidPlaced]:
    cup = game.cup(seat)
    rerolled: tuple[Face, ...] = ()
    if move.expose:
        label = reroll_label(game.number, seat, cup.rerolls + 1)
        rerolled = stream.dice(label, len(cup.hidden) - len(move.expose))
        cup = cup.expose(move.expose, rerolled)
    cups = tuple(cup if s == seat else c for s, c in enumerate(game.cups, start=1))
    placed = PlacedBid(state.turn, seat, move.bid, move.expose, rerolled)
    return (replace(game, cups=cups, bids=game.bids + (placed,)),
            BidPlaced(game.number, seat, move.bid, move.expose, rerolled))


def _apply_challenge(state: PostalState, game: MiniGame, seat: int,
                     virtual: list[int]) -> tuple[MiniGame, ChallengeResolved]:
    bid, bidder = game.current_bid, game.bidder
    assert bid is not None and bidder is not None
    table = {s: c.dice for s, c in enumerate(game.cups, start=1)}
    result = resolve_challenge(bid, bidder, seat, table, state.rules.exact_rule,
                               bidder_at_max=virtual[bidder - 1] >= START_VIRTUAL_DICE)
    for loser, lost in result.losses.items():
        virtual[loser - 1] -= lost
    done = replace(game, challenge=Challenge(state.turn, seat, result, table))
    return done, ChallengeResolved(game.number, seat, result)


def apply_turn(state: PostalState, moves: Mapping[int, Move],
               stream: DiceStream) -> tuple[PostalState, list[Event]]:
    """Play one move per due seat and advance the turn.

    Every due seat must have a move (the shell fills in missing ones first);
    a move from a seat that is not due, or an illegal move, raises.
    """
    if state.game_over:
        raise IllegalMove(_("the game is over"))
    due = state.due()
    extra = sorted(set(moves) - set(due))
    if extra:
        raise IllegalMove(_("player {seat} has no move this turn", seat=extra[0]))
    missing = sorted(set(due) - set(moves))
    if missing:
        raise ValueError(f"turn {state.turn}: no move for seats {missing}")
    games = list(state.minigames)
    virtual = list(state.virtual_dice)
    events: list[Event] = []
    for seat in sorted(due):
        move = moves[seat]
        number = state.check_move(seat, move)
        game = games[number - 1]
        if isinstance(move, BidMove):
            game, event = _apply_bid(state, game, seat, move, stream)
            events.append(event)
        else:
            game, resolved = _apply_challenge(state, game, seat, virtual)
            events.append(resolved)
        games[number - 1] = game
    after = PostalState(state.rules, state.turn + 1, tuple(games), tuple(virtual))
    if after.game_over:
        events.append(GameEnded(after.standings()))
    return after, events
