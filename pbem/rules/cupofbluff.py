"""Cup of Bluff (docs/rules.md section 5): a pure state machine, one move at a time.

Seats are 1..players (3 to 5); seat 1 is the first Bluffer and the role
passes clockwise (seat s -> s % players + 1). The dice are three plain d6
(faces 1..6; the Bluff star convention does not apply). Each Bluffer turn n
rolls from the label ``cupofbluff/roll/<n>``, so a replay is identical.

Who "was right" (the rulebook's table, the same for a win and a steal):

    announced total is true  + Guesser says OK    -> the Guesser was right
    announced total is false + Guesser says OK    -> the Bluffer fooled them
    announced total is false + Guesser says BLUFF -> the Guesser was right
    announced total is true  + Guesser says BLUFF -> the Bluffer was right

Announce: whoever was right takes the announced token from the centre.
Steal (the named token is one the Guesser owns): the Bluffer right -> the
Bluffer takes that token from the Guesser; the Guesser right -> the Guesser
keeps it and the Bluffer GIVEs the Guesser one of the Bluffer's own tokens.

Decisions where the texts are silent (docs/rules.md is followed where they differ):

- The Bluffer may announce any total whose token is in the centre, true or
  not. When the true total's token is gone the Bluffer must bluff, steal or
  make a doublet; announcing is always possible while the game runs, so a
  turn can never be stuck.
- Any other seat may be the Guesser, also one without tokens.
- A steal needs a token on both sides (the Bluffer's, and the named token of
  the Guesser's), else it is illegal. The rulebook's table says token 12
  "goes to the Guesser" when the Guesser is right; since the Guesser already
  owns it, that means the Guesser keeps it (and receives a gift, per docs/rules.md).
- The gift after a failed steal is the Bluffer's choice, made by a GIVE move
  once the dice are shown; a Bluffer with a single token gives it at once
  (there is no choice, and by mail that saves a round).
- Doublet: at least two of the three dice alike (a triple counts). The
  Bluffer returns at least two own tokens ("several"), all different, whose
  points add up to the points of the one centre token taken; there is no
  Guesser and the roll is shown. With no such centre token the doublet is
  illegal and the Bluffer announces or steals instead. A doublet returns
  more tokens than it takes, so it can never end the game.
- The game ends only when an announce takes the last centre token. There is
  no turn limit (the rulebook has none).
- Standings: most points first; equal points -> fewer tokens ranks higher;
  equal in both -> a shared rank (1, 1, 3 ...).

Past 400 lines: one state machine, whose moves and checks read best together; the
robots (easy, normal and strong) are pbem.rules.robot_cup's.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from pbem.rules.cupofbluff_moves import (
    Announce,
    Answer,
    Claim,
    Claimed,
    Doublet,
    DoubletMade,
    Event,
    GameEnded,
    Give,
    Given,
    Move,
    Revealed,
    Rolled,
    Standing,
    Steal,
    TurnRecord,
    move_from_json,
)
from pbem.rules.dice import DiceStream
from pbem.rules.errors import IllegalMove
from pbem.text.wording import Message, _, joined

__all__ = [
    "ACT", "ANSWER", "GIVE", "OVER", "TOKENS", "TOTAL_ODDS", "Announce", "Answer", "Claim",
    "Claimed", "CupState", "Doublet", "DoubletMade", "Event", "GameEnded", "Give", "Given",
    "Move", "Revealed", "Rolled", "Standing", "Steal", "TurnRecord", "apply_move", "can_steal",
    "doublets",
    "has_double", "move_from_json", "new_game", "points", "replay", "roll_label",
]

MIN_PLAYERS: Final = 3
MAX_PLAYERS: Final = 5
DICE: Final = 3
TOKENS: Final = tuple(range(3, 19))
_POINTS: Final = {3: 5, 18: 5, 4: 4, 17: 4, 5: 3, 6: 3, 15: 3, 16: 3,
                  7: 2, 8: 2, 13: 2, 14: 2, 9: 1, 10: 1, 11: 1, 12: 1}

ACT: Final = "act"          # the Bluffer announces, steals or makes a doublet
ANSWER: Final = "answer"    # the Guesser says OK or BLUFF
GIVE: Final = "give"        # the Bluffer gives a token after a failed steal
OVER: Final = "over"


def points(token: int) -> int:
    return _POINTS[token]


def roll_label(number: int) -> str:
    return f"cupofbluff/roll/{number}"


@functools.lru_cache(maxsize=8)
def total_distribution(dice: int = DICE) -> dict[int, float]:
    """P(the roll's total == t) for every total of ``dice`` six-sided dice (a cached
    value: not to be changed)."""
    counts: dict[int, int] = {}
    for roll in itertools.product(range(1, 7), repeat=dice):
        counts[sum(roll)] = counts.get(sum(roll), 0) + 1
    return {t: n / 6 ** dice for t, n in sorted(counts.items())}


TOTAL_ODDS: Final = total_distribution()   # total -> its probability with 3 dice


def has_double(roll: Sequence[int]) -> bool:
    return len(set(roll)) < len(roll)


def _listing(tokens: Iterable[int]) -> Message:
    items = sorted(tokens)
    return joined(items, ", ") if items else _("nothing")


# --- state ------------------------------------------------------------------

@dataclass(frozen=True)
class CupState:
    players: int
    centre: tuple[int, ...]
    holdings: tuple[tuple[int, ...], ...]   # index seat - 1, sorted
    bluffer: int
    number: int                             # the Bluffer turn, 1, 2, ...
    phase: str
    roll: tuple[int, ...]                   # secret to all but the Bluffer until revealed
    claim: Claim | None = None
    log: tuple[TurnRecord, ...] = ()

    @property
    def seats(self) -> range:
        return range(1, self.players + 1)

    @property
    def game_over(self) -> bool:
        return self.phase == OVER

    def tokens(self, seat: int) -> tuple[int, ...]:
        return self.holdings[seat - 1]

    def score(self, seat: int) -> int:
        return sum(points(t) for t in self.tokens(seat))

    def owner(self, token: int) -> int | None:
        """The seat holding token, or None (in the centre)."""
        return next((s for s in self.seats if token in self.tokens(s)), None)

    def due(self) -> dict[int, str]:
        """The seat to move -> what they may do (in English)."""
        return {seat: str(what) for seat, what in self.due_said().items()}

    def due_said(self) -> dict[int, Message]:
        """``due``, each said in its reader's language."""
        if self.phase == ACT:
            # only what this Bluffer can do: a steal needs tokens on both sides, a doublet
            # a double and tokens to swap (the due line goes to the Bluffer alone); whole
            # sentences, as languages join the choices in their own ways
            steal, doublet = can_steal(self), bool(doublets(self))
            if steal and doublet:
                what = _("you are the Bluffer: ANNOUNCE a total, STEAL a token or make a "
                         "DOUBLET")
            elif steal:
                what = _("you are the Bluffer: ANNOUNCE a total or STEAL a token")
            elif doublet:
                what = _("you are the Bluffer: ANNOUNCE a total or make a DOUBLET")
            else:
                what = _("you are the Bluffer: ANNOUNCE a total")
            return {self.bluffer: what}
        if self.phase == GIVE:
            assert self.claim is not None
            return {self.bluffer: _("your steal failed: GIVE player {guesser} one of your "
                                    "tokens", guesser=self.claim.guesser)}
        if self.phase == ANSWER:
            assert self.claim is not None
            what = (_("player {bluffer} claims your token {total}: answer OK or BLUFF",
                      bluffer=self.bluffer, total=self.claim.total)
                    if self.claim.action == "steal" else
                    _("player {bluffer} claims a total of {total}: answer OK or BLUFF",
                      bluffer=self.bluffer, total=self.claim.total))
            return {self.claim.guesser: what}
        return {}

    def waiting_for(self) -> str:
        """Whose move it is, said to everyone (in English)."""
        return str(self.waiting_for_said())

    def waiting_for_said(self) -> Message:
        """``waiting_for`` in its reader's language."""
        claim = self.claim
        if self.phase == ACT:
            return _("player {bluffer}, the Bluffer, is to announce, steal or make a doublet",
                     bluffer=self.bluffer)
        if self.phase == ANSWER and claim is not None:
            return _("player {guesser} is to answer the claim of {total}",
                     guesser=claim.guesser, total=claim.total)
        if self.phase == GIVE and claim is not None:
            return _("player {bluffer} is to give player {guesser} a token",
                     bluffer=self.bluffer, guesser=claim.guesser)
        return _("the game is over")

    def check_move(self, seat: int, move: Move) -> None:
        """Raise IllegalMove unless seat may make move now."""
        if self.game_over:
            raise IllegalMove(_("the game is over"))
        due = self.due_said()
        if seat not in due:
            raise IllegalMove(_("it is not your move: {waiting}",
                                waiting=self.waiting_for_said()))
        expected = {ACT: (Announce, Steal, Doublet), ANSWER: (Answer,), GIVE: (Give,)}[self.phase]
        if not isinstance(move, expected):
            raise IllegalMove(due[seat])
        if isinstance(move, Announce):
            self._check_announce(move)
        elif isinstance(move, Steal):
            self._check_steal(move)
        elif isinstance(move, Doublet):
            self._check_doublet(move)
        elif isinstance(move, Give) and move.token not in self.tokens(seat):
            raise IllegalMove(_("you do not own token {token}; you hold {held}",
                                token=move.token, held=_listing(self.tokens(seat))))

    def _check_other(self, seat: int) -> None:
        if seat not in self.seats:
            raise IllegalMove(_("there is no player {seat} (players 1 to {players})",
                                seat=seat, players=self.players))
        if seat == self.bluffer:
            raise IllegalMove(_("you are the Bluffer; the Guesser must be another player"))

    def _check_announce(self, move: Announce) -> None:
        if move.total not in TOKENS:
            raise IllegalMove(_("{total} is no total of three dice: announce 3 to 18",
                                total=move.total))
        if move.total not in self.centre:
            raise IllegalMove(_("token {token} is not in the centre; the centre holds "
                                "{centre}", token=move.total, centre=_listing(self.centre)))
        self._check_other(move.guesser)

    def _check_steal(self, move: Steal) -> None:
        if not self.tokens(self.bluffer):
            raise IllegalMove(_("you can steal only once you own a token; you have none yet"))
        self._check_other(move.victim)
        held = self.tokens(move.victim)
        if not held:
            raise IllegalMove(_("player {seat} owns no token to steal", seat=move.victim))
        if move.token not in held:
            raise IllegalMove(_("player {seat} does not own token {token}; they hold {held}",
                                seat=move.victim, token=move.token, held=_listing(held)))

    def _check_doublet(self, move: Doublet) -> None:
        own = self.tokens(self.bluffer)
        if not has_double(self.roll):
            raise IllegalMove(_("your roll {roll} has no double: a doublet needs two dice "
                                "alike", roll=" ".join(map(str, self.roll))))
        if len(own) < 2:
            raise IllegalMove(_("a doublet needs at least 2 tokens of yours; you hold {held}",
                                held=_listing(own)))
        if move.take not in self.centre:
            raise IllegalMove(_("token {token} is not in the centre; the centre holds "
                                "{centre}", token=move.take, centre=_listing(self.centre)))
        if len(move.give) < 2 or len(set(move.give)) != len(move.give):
            raise IllegalMove(_("give back at least two different tokens of yours"))
        missing = [t for t in move.give if t not in own]
        if missing:
            raise IllegalMove(_("you do not own token {token}; you hold {held}",
                                token=missing[0], held=_listing(own)))
        given = sum(points(t) for t in move.give)
        if given != points(move.take):
            raise IllegalMove(_("tokens {tokens} are worth {given} points but token {token} is "
                                "worth {worth}: they must be equal", tokens=_listing(move.give),
                                given=given, token=move.take, worth=points(move.take)))

    def legal_moves(self) -> list[Move]:
        """Every move of the due seat (doublets included: at most 5 tokens can be given)."""
        if self.phase == ANSWER:
            return [Answer(True), Answer(False)]
        if self.phase == GIVE:
            return [Give(t) for t in self.tokens(self.bluffer)]
        if self.phase != ACT:
            return []
        others = [s for s in self.seats if s != self.bluffer]
        moves: list[Move] = [Announce(t, g) for t in self.centre for g in others]
        if self.tokens(self.bluffer):
            moves += [Steal(t, v) for v in others for t in self.tokens(v)]
        return moves + doublets(self)

    def standings(self) -> tuple[Standing, ...]:
        keys = {s: (-self.score(s), len(self.tokens(s))) for s in self.seats}
        ordered = sorted(self.seats, key=lambda s: (keys[s], s))
        return tuple(Standing(1 + sum(1 for k in keys.values() if k < keys[s]), s,
                              self.score(s), len(self.tokens(s))) for s in ordered)


def can_steal(state: CupState) -> bool:
    """The Bluffer owns a token and another player owns one to steal."""
    return bool(state.tokens(state.bluffer)) and any(
        state.tokens(s) for s in state.seats if s != state.bluffer)


def doublets(state: CupState) -> list[Move]:
    own = state.tokens(state.bluffer)
    if state.phase != ACT or not has_double(state.roll) or len(own) < 2:
        return []
    found: list[Move] = []
    for size in range(2, min(len(own), 5) + 1):
        for give in itertools.combinations(own, size):
            value = sum(points(t) for t in give)
            found += [Doublet(t, give) for t in state.centre if points(t) == value]
    return found


# --- play -------------------------------------------------------------------

def new_game(stream: DiceStream, players: int) -> CupState:
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise ValueError(f"Cup of Bluff is for {MIN_PLAYERS} to {MAX_PLAYERS} players")
    return CupState(players, TOKENS, ((),) * players, 1, 1, ACT,
                    stream.dice(roll_label(1), DICE))


def _move_token(holdings: list[tuple[int, ...]], centre: list[int], token: int,
                source: int | None, target: int | None) -> None:
    """Move token between seats (None: the centre); the lists are edited in place."""
    if source is None:
        centre.remove(token)
    else:
        holdings[source - 1] = tuple(t for t in holdings[source - 1] if t != token)
    if target is None:
        centre.append(token)
        centre.sort()
    else:
        holdings[target - 1] = tuple(sorted(holdings[target - 1] + (token,)))


def _finish(state: CupState, record: TurnRecord, holdings: list[tuple[int, ...]],
            centre: list[int], stream: DiceStream, events: list[Event]) -> CupState:
    done = replace(state, centre=tuple(centre), holdings=tuple(holdings), claim=None,
                   log=state.log + (record,))
    if not centre:
        over = replace(done, phase=OVER, roll=())
        events.append(GameEnded(over.standings()))
        return over
    number, bluffer = state.number + 1, state.bluffer % state.players + 1
    roll = stream.dice(roll_label(number), DICE)
    events.append(Rolled(number, bluffer, roll))
    return replace(done, bluffer=bluffer, number=number, phase=ACT, roll=roll)


def apply_move(state: CupState, seat: int, move: Move,
               stream: DiceStream) -> tuple[CupState, list[Event]]:
    state.check_move(seat, move)
    holdings, centre = list(state.holdings), list(state.centre)
    events: list[Event] = []
    b = state.bluffer
    if isinstance(move, (Announce, Steal)):
        action = "announce" if isinstance(move, Announce) else "steal"
        total, guesser = ((move.total, move.guesser) if isinstance(move, Announce)
                          else (move.token, move.victim))
        events.append(Claimed(state.number, b, action, total, guesser))
        return replace(state, phase=ANSWER, claim=Claim(action, total, guesser)), events
    if isinstance(move, Doublet):
        for token in move.give:
            _move_token(holdings, centre, token, b, None)
        _move_token(holdings, centre, move.take, None, b)
        record = TurnRecord(state.number, b, state.roll, "doublet", move.take,
                            returned=move.give)
        events.append(DoubletMade(record))
        return _finish(state, record, holdings, centre, stream, events), events
    claim = state.claim
    assert claim is not None
    if isinstance(move, Give):
        _move_token(holdings, centre, move.token, b, claim.guesser)
        assert claim.ok is not None
        record = TurnRecord(state.number, b, state.roll, "steal", claim.total, claim.guesser,
                            claim.ok, claim.guesser, given=move.token)
        events.append(Given(state.number, b, claim.guesser, move.token))
        return _finish(state, record, holdings, centre, stream, events), events
    guesser_right = move.ok == (sum(state.roll) == claim.total)
    winner = claim.guesser if guesser_right else b
    record = TurnRecord(state.number, b, state.roll, claim.action, claim.total, claim.guesser,
                        move.ok, winner)
    if claim.action == "announce":
        _move_token(holdings, centre, claim.total, None, winner)
    elif winner == b:
        _move_token(holdings, centre, claim.total, claim.guesser, b)
    elif len(state.tokens(b)) == 1:   # no choice to make: give the only token now
        gift = state.tokens(b)[0]
        _move_token(holdings, centre, gift, b, claim.guesser)
        record = replace(record, given=gift)
        events += [Revealed(record), Given(state.number, b, claim.guesser, gift)]
        return _finish(state, record, holdings, centre, stream, events), events
    else:
        events.append(Revealed(record))
        return replace(state, phase=GIVE, claim=replace(claim, ok=move.ok)), events
    events.append(Revealed(record))
    return _finish(state, record, holdings, centre, stream, events), events


def replay(stream: DiceStream, players: int,
           moves: Iterable[tuple[int, Move]]) -> CupState:
    state = new_game(stream, players)
    for seat, move in moves:
        state, _events = apply_move(state, seat, move, stream)
    return state
