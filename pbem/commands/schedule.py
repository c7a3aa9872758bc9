"""Referee desk commands about time and the game's life: DEADLINE, EXTEND, PAUSE, RESUME,
WAIT, REMOVE, CANCEL.

Every change players should know of is announced to the game's players (one
notice each, pbem.services.post.announce) and recorded as an AuditEntry. While a game
is paused no deadline runs and no turn resolves; orders sent meanwhile are
refused ("not running"), and the pause notice says so.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlmodel import Session, col, delete, select

from pbem.commands.context import CommandContext, MailCommand
from pbem.deadlines import relative, utc
from pbem.errors import Refusal
from pbem.games import audit, find_game, players_of, remove_entrant
from pbem.models import Game, Signup, Watcher
from pbem.options import ROBOT_LEVELS, options_of, save_options
from pbem.orders import Order, game_name
from pbem.services.post import announce, notice, tagged
from pbem.services.turns import resolve_if_complete
from pbem.wording import plural

EMAIL_HINT = "e.g. REMOVE cup-1 ann@example.org"


# --- argument parsers ---------------------------------------------------------------------

def parse_when(words: list[str]) -> tuple[str, float | datetime]:
    """`+hours` (from now) or an ISO time (UTC unless it says otherwise)."""
    text = " ".join(words).strip()
    if text.startswith("+"):
        try:
            hours = float(text[1:])
        except ValueError:
            hours = -1.0
        if not 0 < hours <= 24 * 365:
            raise Refusal(f"'{text}' is not a number of hours", "e.g. +24 or +1.5")
        return "in", hours
    cleaned = text.upper().removesuffix("UTC").strip().removesuffix("Z")
    try:
        when = datetime.fromisoformat(cleaned)
    except ValueError:
        raise Refusal(f"'{text}' is not a time",
                         "an ISO time in UTC, e.g. 2026-12-05T18:00, or +hours from now") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return "at", when.astimezone(UTC)


def parse_deadline(args: list[str]) -> tuple[str, tuple[str, float | datetime]]:
    if len(args) < 2:
        raise Refusal("DEADLINE needs a game and a time",
                         "e.g. DEADLINE cup-1 2026-12-05T18:00 or DEADLINE cup-1 +24")
    return game_name([args[0]]), parse_when(args[1:])


def parse_extend(args: list[str]) -> tuple[str, float]:
    if len(args) != 2:
        raise Refusal("EXTEND needs a game and a number of hours", "e.g. EXTEND cup-1 24")
    try:
        hours = float(args[1].lstrip("+"))
    except ValueError:
        hours = -1.0
    if not 0 < hours <= 24 * 365:
        raise Refusal(f"'{args[1]}' is not a number of hours", "e.g. EXTEND cup-1 24")
    return game_name([args[0]]), hours


def parse_wait(args: list[str]) -> tuple[str, bool]:
    if len(args) != 2 or args[1].lower() not in ("on", "off"):
        raise Refusal("WAIT needs a game and on or off", "e.g. WAIT cup-1 on")
    return game_name([args[0]]), args[1].lower() == "on"


def parse_level(args: list[str]) -> tuple[str, str]:
    if len(args) != 2 or args[1].lower() not in ROBOT_LEVELS:
        raise Refusal("LEVEL needs a game and easy, normal or strong", "e.g. LEVEL g1 normal")
    return game_name([args[0]]), args[1].lower()


def parse_remove(args: list[str]) -> tuple[str, str]:
    if len(args) != 2 or "@" not in args[1]:
        raise Refusal("REMOVE needs a game and the player's address", EMAIL_HINT)
    return game_name([args[0]]), args[1].strip("<>").lower()


# --- helpers ------------------------------------------------------------------------------

def _game(session: Session, name: str, statuses: tuple[str, ...], what: str) -> Game:
    game = find_game(session, name)
    if game.status not in statuses:
        raise Refusal(f"game '{name}' is {game.status}: cannot {what} it")
    return game


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} hours"


def desk_status(session: Session, game: Game, now: datetime) -> str:
    """What STATUS adds for the desk: pause, grace, sign-ups, watchers, the options."""
    parts = []
    if game.status == "paused":
        left = game.paused_left_seconds
        parts.append("paused" + (f" with {_hours(left)} left on the deadline"
                                 if left is not None else ""))
    if game.status == "running" and game.grace_until is not None:
        parts.append(f"grace until {utc(game.grace_until)}")
    if game.status == "new":
        pending = session.exec(select(Signup).where(Signup.game_id == game.id,
                                                    Signup.status == "pending")).all()
        if pending:
            parts.append(plural("{n} sign-up", "{n} sign-ups", len(pending))
                         + " waiting for confirmation")
    watchers = session.exec(select(Watcher).where(Watcher.game_id == game.id)).all()
    if watchers:
        parts.append(plural("{n} watcher", "{n} watchers", len(watchers)))
    parts.append("options: " + options_of(game).describe(game.turn_hours))
    return "; " + "; ".join(parts)


# --- actions ------------------------------------------------------------------------------

def do_deadline(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, tuple[str, float | datetime]] = order.args
    name, (how, value) = args
    game = _game(ctx.session, name, ("running",), "set the deadline of")
    target = ctx.now + timedelta(hours=value) if isinstance(value, float) else value
    assert isinstance(target, datetime)
    if target <= ctx.now:
        raise Refusal(f"{utc(target)} has passed already")
    game.deadline, game.grace_until = target, None
    ctx.session.add(game)
    announce(ctx.session, ctx.post, game, f"turn {game.turn}: new deadline "
             f"{utc(target)}",
             [f"The referee set the deadline of turn {game.turn} to {utc(target)} "
              f"({relative(target, ctx.now)})."], ctx.now, action="deadline",
             actor="referee")
    return f"game {game.name}: deadline of turn {game.turn} set to {utc(target)}"


def do_extend(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, float] = order.args
    name, hours = args
    game = _game(ctx.session, name, ("running", "paused"), "extend")
    more = timedelta(hours=hours)
    if game.status == "paused":
        if game.paused_left_seconds is None:
            raise Refusal(f"game '{name}' has no deadline to extend; RESUME it, then use "
                            f"DEADLINE")
        game.paused_left_seconds += more.total_seconds()
        what = (f"The referee added {hours:g} hours to the time left on the deadline of turn "
                f"{game.turn}; {_hours(game.paused_left_seconds)} will be left when the game "
                f"resumes.")
        said = f"{_hours(game.paused_left_seconds)} left when it resumes"
    elif game.grace_until is not None:
        game.grace_until += more
        what = (f"The referee extended the grace period of turn {game.turn} by {hours:g} hours, "
                f"to {utc(game.grace_until)} ({relative(game.grace_until, ctx.now)}).")
        said = f"grace until {utc(game.grace_until)}"
    elif game.deadline is not None:
        game.deadline += more
        what = (f"The referee extended the deadline of turn {game.turn} by {hours:g} hours, to "
                f"{utc(game.deadline)} ({relative(game.deadline, ctx.now)}).")
        said = f"deadline {utc(game.deadline)}"
    else:
        raise Refusal(f"game '{name}' has no deadline to extend; set one with DEADLINE")
    ctx.session.add(game)
    announce(ctx.session, ctx.post, game, f"turn {game.turn}: extended by "
             f"{hours:g} hours", [what], ctx.now, action="extend", actor="referee")
    return f"game {game.name}: extended by {hours:g} hours ({said})"


def do_pause(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = _game(ctx.session, name, ("running",), "pause")
    end = game.grace_until or game.deadline
    game.paused_left_seconds = (None if end is None
                                else max(0.0, (end - ctx.now).total_seconds()))
    game.status = "paused"
    ctx.session.add(game)
    left = ("" if game.paused_left_seconds is None else
            f" {_hours(game.paused_left_seconds)} were left on the deadline; the clock restarts "
            f"with that much when the game resumes.")
    announce(ctx.session, ctx.post, game, "the game is paused",
             [f"The referee paused game {game.name} in turn {game.turn}. While it is "
              f"paused no deadline runs and no turn resolves; orders sent meanwhile "
              f"are refused, so send yours after it resumes (you will be told).{left}"],
             ctx.now, action="pause", actor="referee")
    return f"game {game.name} paused" + (f" ({_hours(game.paused_left_seconds)} left)"
                                         if game.paused_left_seconds is not None else "")


def do_resume(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = _game(ctx.session, name, ("paused",), "resume")
    game.status = "running"
    left = game.paused_left_seconds
    if left is not None:
        restart = ctx.now + timedelta(seconds=left)
        if game.grace_until is not None:
            game.grace_until = restart
        else:
            game.deadline = restart
    game.paused_left_seconds = None
    ctx.session.add(game)
    end = game.grace_until or game.deadline
    when = (f" The {'grace period' if game.grace_until else 'deadline'} of turn {game.turn} is "
            f"now {utc(end)} ({relative(end, ctx.now)})." if end is not None else "")
    announce(ctx.session, ctx.post, game, "the game resumes",
             [f"The referee resumed game {game.name}: orders for turn {game.turn} are "
              f"taken again.{when}"], ctx.now, action="resume", actor="referee")
    return f"game {game.name} resumed" + (f"; deadline {utc(end)}" if end else "")


def _change_option(ctx: CommandContext, name: str, **changes: object) -> Game:
    """Set desk options of a game not over yet (WAIT, LEVEL); the game changed."""
    game = _game(ctx.session, name, ("new", "running", "paused"), "change")
    options = options_of(game)
    for option, value in changes.items():
        setattr(options, option, value)
    save_options(game, options)
    ctx.session.add(game)
    return game


def do_wait(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, bool] = order.args
    name, on = args
    game = _change_option(ctx, name, wait=on)
    if game.status == "new":
        return f"game {game.name}: WAIT {'on' if on else 'off'}"
    when = "at the deadline" if on else "as soon as all orders are in"
    announce(ctx.session, ctx.post, game, f"turns resolve {when}",
             [f"The referee set WAIT {'on' if on else 'off'} for game {game.name}: "
              + ("from now on a turn resolves only at its deadline, even when every "
                 "order is in." if on else "from now on a turn resolves as soon as "
                 "every order is in, or at its deadline.")],
             ctx.now, action="wait", actor="referee")
    out = f"game {game.name}: WAIT {'on' if on else 'off'}"
    turn = game.turn
    if not on and resolve_if_complete(ctx.session, ctx.post, game):
        out += f"; every order was in, so turn {turn} resolved"
    return out


def do_level(ctx: CommandContext, order: Order) -> str:
    """How well the robot plays a missing seat from the next turn on (NEWGAME ROBOT)."""
    args: tuple[str, str] = order.args
    name, level = args
    game = _change_option(ctx, name, robot=level)
    audit(ctx.session, game, ctx.now, "level", f"robot {level}", actor="referee")
    return f"game {game.name}: robot {level}"


def do_publish(ctx: CommandContext, order: Order) -> str:
    """The referee's choice once a game is over: its private press (SAY TO) shown on the
    game's web page with the rest of its talk."""
    game = _game(ctx.session, order.args, ("over",), "publish the private press of")
    options = options_of(game)
    options.press_published = True
    save_options(game, options)
    ctx.session.add(game)
    audit(ctx.session, game, ctx.now, "publish", "private press", actor="referee")
    return f"game {game.name}: its private press is public now"


def do_remove(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, str] = order.args
    name, email = args
    game = _game(ctx.session, name, ("new",), "remove players from (use REPLACE)")
    player = next((p for p in players_of(ctx.session, game) if p.email == email), None)
    if player is None:
        raise Refusal(f"{email} does not play in '{name}'")
    who = player.name
    remove_entrant(ctx.session, game, player)
    notice(ctx.session, ctx.post, email, tagged(game.name, "you were removed"),
           [f"The referee took you off game {game.name} before its start."], ctx.now,
           game=game)
    audit(ctx.session, game, ctx.now, "remove", f"{who} <{email}>", actor="referee")
    return f"{who} <{email}> removed from {game.name}"


def do_cancel(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = _game(ctx.session, name, ("new", "running", "paused"), "cancel")
    told = announce(ctx.session, ctx.post, game, "the game is cancelled",
                    [f"The referee cancelled game {game.name}"
                     + (f" in turn {game.turn}." if game.turn else " before its start.")
                     + " No more orders are taken and no more reports will come."],
                    ctx.now, action="cancel", actor="referee")
    game.status = "cancelled"
    game.deadline = game.grace_until = game.paused_left_seconds = None
    game.ended_at = ctx.now
    ctx.session.add(game)
    ctx.session.exec(delete(Signup).where(col(Signup.game_id) == game.id,
                                          col(Signup.status) != "confirmed"))
    return f"game {game.name} cancelled; {plural('{n} player', '{n} players', told)} told"


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("DEADLINE", "DEADLINE <game> <ISO time | +hours>",
            "set this turn's deadline (UTC), e.g. 2026-12-05T18:00 or +24", parse_deadline,
            action=do_deadline, who="referee", phase="change"),
    MailCommand("EXTEND", "EXTEND <game> <hours>",
            "move this turn's deadline (or grace end, or a paused game's time left) later",
            parse_extend, action=do_extend, who="referee", phase="change"),
    MailCommand("PAUSE", "PAUSE <game>",
            "stop the clock: no deadline runs, no turn resolves, orders are refused", game_name,
            action=do_pause, who="referee", phase="change"),
    MailCommand("RESUME", "RESUME <game>", "restart the clock with the time that was left",
            game_name, action=do_resume, who="referee", phase="change"),
    MailCommand("WAIT", "WAIT <game> on|off",
            "on: a turn resolves only at its deadline, never as soon as all orders are in",
            parse_wait, action=do_wait, who="referee", phase="change"),
    MailCommand("LEVEL", "LEVEL <game> easy|normal|strong",
            "how well the robot plays a seat whose order is missing", parse_level,
            action=do_level, who="referee", phase="change"),
    MailCommand("PUBLISH", "PUBLISH <game>",
            "once a game is over: show its private press (SAY TO) on its web page",
            game_name, action=do_publish, who="referee", phase="change"),
    MailCommand("REMOVE", "REMOVE <game> <email>", "take a player off a game before its start",
            parse_remove, action=do_remove, who="referee", phase="change"),
    MailCommand("CANCEL", "CANCEL <game>", "end a game for good; its players are told", game_name,
            action=do_cancel, who="referee", phase="change"),
)
