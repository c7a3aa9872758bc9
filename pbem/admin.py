"""Referee commands: one table for referee mail, `pbem admin` and HELP."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, select

from pbem.desk import schedule, seats
from pbem.desk.options import USAGE as NEWGAME_USAGE
from pbem.desk.options import NewGame, parse_options, save_options
from pbem.desk.schedule import desk_status
from pbem.games import (GameError, add_player, create_game, find_game, load_state,
                        missing_seats, pending_orders, players_of, start_game)
from pbem.kinds import kind_named, kind_of
from pbem.models import Game
from pbem.orders import GAME_NAME, Command, Order, OrderError, game_name, help_lines, no_args
from pbem.orders import one_word
from pbem.reports import enqueue_reports
from pbem.rules.dice import new_seed, seed_from_number

if TYPE_CHECKING:
    from pbem.referee import Referee

EMAIL = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")


@dataclass
class AdminContext:
    session: Session
    referee: "Referee"
    now: datetime


def parse_newgame(args: list[str]) -> NewGame:
    if not args:
        raise OrderError("NEWGAME needs a game name", "e.g. NEWGAME cup-1 DEADLINE 48")
    name = args[0].lower()
    if not GAME_NAME.match(name):
        raise OrderError(f"'{args[0]}' is not a valid game name", "game names use a-z, 0-9 and -")
    new = parse_options(args[1:], name)   # the desk options (pbem.desk.options)
    try:
        kind = kind_named(new.rules)
    except KeyError as exc:
        raise OrderError(str(exc.args[0]), "e.g. RULES postal") from None
    new.rules_json = kind.parse_options(new.rules_words)
    return new


def parse_add(args: list[str]) -> tuple[str, str, str]:
    if len(args) < 2:
        raise OrderError("ADD needs a game and an address", "e.g. ADD cup-1 ann@example.org Ann")
    name, email = game_name([args[0]]), args[1].strip("<>").lower()
    if not EMAIL.match(email):
        raise OrderError(f"'{args[1]}' is not a mail address")
    return name, email, " ".join(args[2:])[:60]


def optional_game(args: list[str]) -> str | None:
    return game_name(args) if args else None


def do_newgame(ctx: AdminContext, new: NewGame) -> str:
    seed = seed_from_number(new.seed) if new.seed is not None else new_seed()
    game = create_game(ctx.session, new.name, seed=seed, now=ctx.now, turn_hours=new.hours,
                       kind=new.rules, rules_json=new.rules_json)
    save_options(game, new.options)
    ctx.session.add(game)
    return (f"game {game.name} created ({kind_of(game).title}; "
            f"{new.options.describe(new.hours)}); dice commitment {game.commitment}")


def do_add(ctx: AdminContext, args: tuple[str, str, str]) -> str:
    game = find_game(ctx.session, args[0])
    player = add_player(ctx.session, game, args[1], args[2])
    return f"{player.name} <{player.email}> joins {game.name} as entrant {player.entrant}"


def do_start(ctx: AdminContext, name: str) -> str:
    game = find_game(ctx.session, name)
    start_game(ctx.session, game, ctx.now)
    state = load_state(ctx.session, game)
    rows = enqueue_reports(ctx.session, game, state, now=ctx.now, origin=ctx.referee.origin,
                           renderer=ctx.referee.renderer)
    seats = ", ".join(f"{p.seat}: {p.name}" for p in sorted(players_of(ctx.session, game),
                                                             key=lambda p: p.seat or 0))
    return f"game {game.name} started; seats {seats}; {len(rows)} first reports queued"


def do_status(ctx: AdminContext, name: str) -> str:
    game = find_game(ctx.session, name)
    players = players_of(ctx.session, game)
    line = f"game {game.name}: {game.status}, {len(players)} players"
    if game.status in ("running", "over", "paused"):
        kind = kind_of(game)
        state = load_state(ctx.session, game)
        scores = ", ".join(f"{s['seat']}: {s['score']}"
                           for s in sorted(kind.standings(state), key=lambda s: s["seat"]))
        line += f", turn {game.turn}, scores {scores}"
        if game.status == "running":
            have = pending_orders(ctx.session, game)
            waiting = missing_seats(ctx.session, game, state)
            line += f"; orders in from {sorted(have) or 'nobody'}, waiting for {waiting or 'nobody'}"
            if game.deadline:
                line += f"; deadline {game.deadline:%Y-%m-%d %H:%M} UTC"
    return line + desk_status(ctx.session, game, ctx.now)


def do_process(ctx: AdminContext, name: str) -> str:
    game = find_game(ctx.session, name)
    turn = game.turn
    ctx.referee.resolve(ctx.session, game)
    return f"game {game.name}: turn {turn} resolved" + (" - the game is over" if
                                                        game.status == "over" else "")


def do_list(ctx: AdminContext, _: None) -> str:
    games = list(ctx.session.exec(select(Game).order_by(col(Game.name))))
    if not games:
        return "no games yet"
    return "; ".join(f"{g.name} ({g.status}, turn {g.turn}"
                     + (f", deadline {g.deadline:%Y-%m-%d %H:%M} UTC" if g.deadline
                        and g.status == "running" else "") + ")" for g in games)


def do_help(ctx: AdminContext, _: None) -> str:
    return "\n".join(f"{h['usage']}: {h['summary']}" for h in help_lines(REFEREE_COMMANDS))


_CORE_COMMANDS: tuple[Command, ...] = (
    Command("KEY", "KEY <referee key>", "in referee mail: proves the mail is the referee's",
            one_word("key")),
    Command("NEWGAME", NEWGAME_USAGE,
            "create a game: turn length, deadline hour (UTC), grace, reminder, missed-turn "
            "limit, vacation cap, missing-order policy, sign-up, auto-start, wait, rule set "
            "(SEED makes the dice reproducible)", parse_newgame),
    Command("ADD", "ADD <game> <email> [<name>]", "sign a player up (before the start)", parse_add),
    Command("START", "START <game>", "draw the seats, roll, mail everyone their first report",
            game_name),
    Command("STATUS", "STATUS <game>", "where the game stands, whose orders are in", game_name),
    Command("PROCESS", "PROCESS <game>", "resolve the turn now (the robot plays missing orders)",
            game_name),
    Command("LIST", "LIST", "every game and its state", no_args),
)
_HELP = Command("HELP", "HELP", "this list", no_args)

# the desk modules add their commands (and actions) to the one table
REFEREE_COMMANDS: tuple[Command, ...] = (*_CORE_COMMANDS, *schedule.COMMANDS, *seats.COMMANDS,
                                         _HELP)

_ACTIONS: dict[str, Callable[[AdminContext, Any], str]] = {
    "NEWGAME": do_newgame, "ADD": do_add, "START": do_start, "STATUS": do_status,
    "PROCESS": do_process, "LIST": do_list, "HELP": do_help,
    **schedule.ACTIONS, **seats.ACTIONS,
}


def run_admin(ctx: AdminContext, orders: Sequence[Order]) -> list[str]:
    """Run the commands in order; the first one that fails stops the lot."""
    out = []
    for order in orders:
        try:
            out.append(_ACTIONS[order.name](ctx, order.args))
        except GameError as exc:
            raise GameError(f"{order.line}: {exc}") from None
    return out
