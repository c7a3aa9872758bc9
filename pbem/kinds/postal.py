"""The postal game (docs/rules.md section 4) as a game kind: five players, five mini-games at once."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from pbem.kinds.base import OrderProblem, Resolution, TakenOrder, Understood
from pbem.kinds.bidding import (
    HELP_NOTE,
    STANDING_ORDERS,
    BidMoves,
    read_bid_order,
    standing_bid_move,
)
from pbem.kinds.words import Words
from pbem.orders import PLAYER_COMMANDS, Order, OrderError
from pbem.rules.dice import DiceStream, face_symbol
from pbem.rules.errors import RulesError
from pbem.rules.moves import BidMove, Move
from pbem.rules.odds import bid_odds
from pbem.rules.postal import (
    PLAYERS,
    BidPlaced,
    ChallengeResolved,
    PostalState,
    apply_turn,
    new_game,
)
from pbem.rules.robot import DEFAULT_LEVEL, choose_move
from pbem.rules.ruleset import RuleSet
from pbem.rules.view import holdings, odds_view

MOVE_NAMES = ("BID", "CHALLENGE", "EXPOSE")


def _event_lines(events: Sequence[Any], you: int | None = None) -> list[str]:
    """The turn's challenges in words, told to all (you None) or to seat you."""
    w = Words(you)
    return [f"Mini-game {e.minigame} ended: {w.who(e.seat)} challenged {e.result.bid} "
            f"and the table held {e.result.actual}." for e in events
            if isinstance(e, ChallengeResolved)]


class PostalKind(BidMoves):
    name = "postal"
    title = "postal Bluff"
    min_players = PLAYERS
    max_players = PLAYERS
    commands = tuple(c for c in PLAYER_COMMANDS if c.name in MOVE_NAMES)
    report_template = "report"
    option_help = "postal takes no options: five players, five mini-games (docs/rules.md section 4)"
    help_note = HELP_NOTE
    standing_orders: Mapping[str, str] = STANDING_ORDERS

    def parse_options(self, words: Sequence[str]) -> dict[str, Any]:
        if words:
            raise OrderError(f"unknown option {words[0]} for a postal game", self.option_help)
        return RuleSet().to_json()

    def describe_rules(self, rules: Mapping[str, Any]) -> str:
        return "postal Bluff: five mini-games, virtual dice"

    def played_rules(self, rules: Mapping[str, Any], players: int) -> dict[str, Any]:
        return dict(rules)

    def start(self, rules: Mapping[str, Any], stream: DiceStream, players: int) -> PostalState:
        return new_game(stream, RuleSet.from_json(dict(rules)))

    def due(self, state: PostalState) -> dict[int, str]:
        out = {}
        for seat, number in state.due().items():
            game = state.minigame(number)
            out[seat] = (f"bid or challenge in mini-game {number}" if game.current_bid
                         else f"open mini-game {number} with a bid")
        return out

    def orders_now(self, state: PostalState, seat: int) -> list[str]:
        number = state.due().get(seat)
        if number is None:
            return []
        game = state.minigame(number)
        raise_left = state.ladder(number).lowest_raise(game.current_bid) is not None
        return ((["BID"] if raise_left else []) + (["CHALLENGE"] if game.current_bid else [])
                + (["EXPOSE"] if state.rules.expose and raise_left else []))

    def place(self, state: PostalState, seat: int) -> int:
        return state.due().get(seat, 0)

    def take_order(self, state: PostalState, seat: int, orders: Sequence[Order]) -> TakenOrder:
        order, exposes, move = read_bid_order(orders)
        try:
            minigame = state.check_move(seat, move)
        except RulesError as exc:
            bad = exposes[0] if exposes and "expose" in str(exc).lower() else order
            raise OrderProblem(str(exc), "your report lists what you may do this turn",
                               bad) from None
        odds = None
        if isinstance(move, BidMove):
            o = bid_odds(state.seat_view(seat, minigame), move.bid)
            odds = {"holds": o.holds, "exact": o.exact}
        lines = [Understood(order, f"{move} in mini-game {minigame}", odds)]
        lines += [Understood(e, "expose " + " ".join(face_symbol(f) for f in e.args))
                  for e in exposes]
        return TakenOrder(move, lines, f"{move} in mini-game {minigame}")

    def check(self, state: PostalState, seat: int, move: Move) -> None:
        state.check_move(seat, move)

    def apply(self, state: PostalState, moves: Mapping[int, Move],
              stream: DiceStream) -> Resolution:
        after, events = apply_turn(state, moves, stream)
        extras: dict[int, list[Any]] = {e.seat: list(e.rerolled) for e in events
                                        if isinstance(e, BidPlaced)}
        return Resolution(after, _event_lines(events), extras,
                          seat_notes={s: _event_lines(events, s) for s in range(1, PLAYERS + 1)})

    def robot_move(self, state: PostalState, seat: int, rng: random.Random,
                   level: str = DEFAULT_LEVEL) -> Move:
        return choose_move(state.seat_view(seat, state.due()[seat]), rng, level)

    def standing_move(self, state: PostalState, seat: int, policy: str) -> Move | None:
        number = state.due().get(seat)
        if number is None:
            return None
        current = state.minigame(number).current_bid
        return standing_bid_move(policy, current, state.ladder(number))

    def over(self, state: PostalState) -> bool:
        return state.game_over

    def standings(self, state: PostalState) -> list[dict[str, int]]:
        return [{"rank": s.rank, "seat": s.seat, "score": s.virtual_dice}
                for s in state.standings()]

    def view(self, state: PostalState, seat: int | None) -> dict[str, Any]:
        return holdings(state, seat)

    def history(self, state: PostalState) -> list[str]:
        lines = []
        for game in state.minigames:
            for placed in game.bids:
                shown = (f", exposing {' '.join(face_symbol(f) for f in placed.exposed)}"
                         if placed.exposed else "")
                lines.append(f"turn {placed.turn}, mini-game {game.number}: player "
                             f"{placed.seat} bid {placed.bid}{shown}")
            if game.challenge is not None:
                c = game.challenge
                lost = ", ".join(f"player {s} {'loses' if n > 0 else 'gains'} {abs(n)}"
                                 for s, n in sorted(c.result.losses.items()))
                lines.append(f"turn {c.turn}, mini-game {game.number}: player {c.seat} "
                             f"challenged; the table held {c.result.actual} ({lost})")
        return sorted(lines, key=lambda line: int(line.split(",")[0].split()[1]))

    def report_extras(self, state: PostalState, seat: int | None) -> dict[str, Any]:
        return {"odds": odds_view(state, seat) if seat is not None else {}}


POSTAL = PostalKind()
