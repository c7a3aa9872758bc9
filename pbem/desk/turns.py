"""Player desk commands about turns: DEFAULT, HISTORY, ORDERS; and the missed-turn count.

- ``DEFAULT CHALLENGE|RAISE|ROBOT|NONE`` sets the player's standing order, what
  is played for them in a turn they miss (pbem.games.missing_move).
- ``HISTORY`` mails back every move so far, all mini-games, public
  information only (the kind's ``history``).
- ``ORDERS`` says what the player has in for the turn in play.

After each resolution ``after_turn`` counts the turns a player missed in a
row (Player.missed_turns; their own order resets it) and, when the count
reaches the game's missed-turn limit, asks the referee once to replace them.
Everything here works for every game kind through pbem.kinds.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select

from pbem.desk import PlayerAction, PlayerContext
from pbem.games import load_state, pending_orders
from pbem.kinds import kind_of
from pbem.models import Game, Move, Player
from pbem.orders import Command, Order, OrderError, no_args

if TYPE_CHECKING:
    from pbem.referee import Referee

STANDING = {"CHALLENGE": "challenge the current bid (or, if there is none, let the robot open)",
            "RAISE": "raise to the lowest legal bid (or challenge when no raise is left)",
            "ROBOT": "let the robot choose your move",
            "NONE": "no standing order: the game's policy decides (normally the robot)"}
DEFAULT_MISSED_LIMIT = 3
# how a move made for a missing order is recorded (Move.by) -> counts as a missed turn
MISSED_BY = ("standing", "policy", "robot")


def parse_default(args: list[str]) -> str:
    word = args[0].upper() if len(args) == 1 else ""
    if word not in STANDING:
        raise OrderError("DEFAULT takes one of CHALLENGE, RAISE, ROBOT or NONE",
                         "e.g. DEFAULT CHALLENGE")
    return word


def _refuse(message: str, hint: str, order: Order, game: Game) -> Exception:
    from pbem.referee import refusal
    return refusal(message, hint, order.line_no, order.line, game=game.name)


def _game_line(game: Game) -> str:
    return f"[bluff {game.name}]"


def do_default(ctx: PlayerContext, order: Order) -> str:
    assert ctx.who is not None
    player, game = ctx.who.player, ctx.who.game
    if game.status in ("over", "cancelled"):
        raise _refuse(f"game {game.name} is {game.status}", "no orders are taken now", order,
                      game)
    player.default_order = None if order.args == "NONE" else order.args
    ctx.session.add(player)
    subject = f"{_game_line(game)} your standing order: {order.args}"
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [f"line {order.line_no}: {order.line}",
                       f"Your standing order is now {order.args}: when you send no order "
                       f"in time, the referee will {STANDING[order.args]}.",
                       "An order you send for a turn always comes first. "
                       "Change this at any time with DEFAULT CHALLENGE, DEFAULT RAISE, "
                       "DEFAULT ROBOT or DEFAULT NONE."]})
    return f"standing order of {player.email} in {game.name}: {order.args}"


def _started(game: Game, order: Order) -> None:
    if game.started_at is None:
        raise _refuse(f"game {game.name} has not started yet", "", order, game)


def do_history(ctx: PlayerContext, order: Order) -> str:
    assert ctx.who is not None
    game = ctx.who.game
    _started(game, order)
    lines = kind_of(game).history(load_state(ctx.session, game))
    subject = f"{_game_line(game)} the moves so far (turn {game.turn})"
    ctx.answer("listing", subject, {
        "subject": subject, "game": game.name, "lines": lines,
        "paragraphs": [f"Every move of game {game.name} so far, in the order played "
                       f"(public information only)." if lines else "No move has been "
                       "played yet."]})
    return f"history sent ({len(lines)} lines)"


def do_orders(ctx: PlayerContext, order: Order) -> str:
    assert ctx.who is not None
    game, player = ctx.who.game, ctx.who.player
    _started(game, order)
    kind = kind_of(game)
    paragraphs = []
    if game.status != "running":
        paragraphs.append(f"Game {game.name} is {game.status}: no orders are taken now.")
    else:
        due = kind.due(load_state(ctx.session, game)).get(player.seat or 0)
        pending = pending_orders(ctx.session, game).get(player.seat or 0)
        if due is None:
            paragraphs.append(f"Turn {game.turn}: you have nothing to do this turn.")
        elif pending is None:
            paragraphs.append(f"Turn {game.turn}: you have no order in yet. You must {due}.")
        else:
            move = kind.describe_move(kind.move_from_json(json.loads(pending.move_json)))
            whose = (" (entered by the referee on your behalf)" if pending.by == "referee"
                     else "")
            paragraphs.append(f"Turn {game.turn}: your order is {move}{whose}. A new order "
                              f"before the deadline replaces it.")
        if game.deadline is not None:
            paragraphs.append(f"Deadline: {game.deadline:%Y-%m-%d %H:%M} UTC.")
    standing = player.default_order or "NONE"
    paragraphs.append(f"Your standing order for a missed turn: {standing} "
                      f"({STANDING.get(standing, standing)}).")
    if player.missed_turns:
        paragraphs.append(f"Turns missed in a row: {player.missed_turns}.")
    subject = f"{_game_line(game)} your orders for turn {game.turn}"
    ctx.answer("notice", subject, {"subject": subject, "game": game.name,
                                   "paragraphs": paragraphs})
    return "orders sent"


COMMANDS: tuple[Command, ...] = (
    Command("DEFAULT", "DEFAULT CHALLENGE|RAISE|ROBOT|NONE",
            "your standing order for a turn you miss", parse_default),
    Command("HISTORY", "HISTORY", "every move so far, all mini-games (public information)",
            no_args),
    Command("ORDERS", "ORDERS", "what you have in for this turn", no_args),
)
ACTIONS: dict[str, PlayerAction] = {"DEFAULT": do_default, "HISTORY": do_history,
                                    "ORDERS": do_orders}
NEEDS_PLAYER: set[str] = {"DEFAULT", "HISTORY", "ORDERS"}


# --- missed turns -------------------------------------------------------------

def missed_turn_limit(game: Game) -> int:
    """The game's missed-turn limit (NEWGAME MISSED <n>; 0: never ask the referee)."""
    try:
        from pbem.desk.options import options_of
        return int(options_of(game).missed_limit)
    except ImportError:   # pragma: no cover - the options module comes with the desk options
        return int(json.loads(game.options_json or "{}").get("missed_limit",
                                                             DEFAULT_MISSED_LIMIT))


def after_turn(referee: "Referee", session: Session, game: Game, turn: int) -> list[Player]:
    """Count the missed turns of turn ``turn`` (just resolved); ask the referee to replace
    whoever reaches the limit (once: when the count reaches it). Returns those players."""
    rows = session.exec(select(Move).where(Move.game_id == game.id, Move.turn == turn)
                        .order_by(col(Move.seat)))
    holders = {p.seat: p for p in session.exec(select(Player).where(
        Player.game_id == game.id, col(Player.active).is_(True))) if p.seat is not None}
    limit = missed_turn_limit(game)
    reached = []
    for row in rows:
        player = holders.get(row.seat)
        if player is None:
            continue
        if row.by == "player":
            player.missed_turns = 0
        elif row.by in MISSED_BY:
            player.missed_turns += 1
            if limit and player.missed_turns == limit:
                reached.append(player)
        session.add(player)
    for player in reached:
        referee._tell_referee(session, f"[bluff {game.name}] player {player.seat} has missed "
                              f"{limit} turns", [
            f"Player {player.seat} of game {game.name}, {player.name} <{player.email}>, has "
            f"sent no order for {limit} turns in a row (up to turn {turn}).",
            "The game goes on: their standing order or the robot plays for them meanwhile.",
            f"To give the seat to someone else: REPLACE {game.name} {player.seat} "
            f"<email> [<name>]"])
    return reached
