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

from pbem.commands.context import CommandContext, Done, MailCommand
from pbem.games.audit import audit
from pbem.games.lifecycle import remove_entrant
from pbem.games.records import find_game, players_of
from pbem.kinds.options import ROBOT_LEVELS, options_of, save_options
from pbem.orders.arguments import game_name
from pbem.orders.commands import Order
from pbem.services.post import announce, notice, tagged
from pbem.services.turns import TurnChange
from pbem.store.models import Game, Signup, Watcher
from pbem.text.deadlines import relative_said, time_left, utc
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _, plural
from pbem.text.zones import When

EMAIL_HINT = _("e.g. REMOVE cup-1 ann@example.org")


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
            raise Refusal(_("'{text}' is not a number of hours", text=text),
                          _("e.g. +24 or +1.5"))
        return "in", hours
    cleaned = text.upper().removesuffix("UTC").strip().removesuffix("Z")
    try:
        when = datetime.fromisoformat(cleaned)
    except ValueError:
        raise Refusal(_("'{text}' is not a time", text=text),
                      _("an ISO time in UTC, e.g. 2026-12-05T18:00, or +hours from now")
                      ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return "at", when.astimezone(UTC)


def parse_deadline(args: list[str]) -> tuple[str, tuple[str, float | datetime]]:
    if len(args) < 2:
        raise Refusal(_("DEADLINE needs a game and a time"),
                      _("e.g. DEADLINE cup-1 2026-12-05T18:00 or DEADLINE cup-1 +24"))
    return game_name([args[0]]), parse_when(args[1:])


def parse_extend(args: list[str]) -> tuple[str, float]:
    if len(args) != 2:
        raise Refusal(_("EXTEND needs a game and a number of hours"), _("e.g. EXTEND cup-1 24"))
    try:
        hours = float(args[1].lstrip("+"))
    except ValueError:
        hours = -1.0
    if not 0 < hours <= 24 * 365:
        raise Refusal(_("'{text}' is not a number of hours", text=args[1]),
                      _("e.g. EXTEND cup-1 24"))
    return game_name([args[0]]), hours


def parse_wait(args: list[str]) -> tuple[str, bool]:
    if len(args) != 2 or args[1].lower() not in ("on", "off"):
        raise Refusal(_("WAIT needs a game and on or off"), _("e.g. WAIT cup-1 on"))
    return game_name([args[0]]), args[1].lower() == "on"


def parse_level(args: list[str]) -> tuple[str, str]:
    if len(args) != 2 or args[1].lower() not in ROBOT_LEVELS:
        raise Refusal(_("LEVEL needs a game and easy, normal or strong"),
                      _("e.g. LEVEL g1 normal"))
    return game_name([args[0]]), args[1].lower()


def parse_remove(args: list[str]) -> tuple[str, str]:
    if len(args) != 2 or "@" not in args[1]:
        raise Refusal(_("REMOVE needs a game and the player's address"), EMAIL_HINT)
    return game_name([args[0]]), args[1].strip("<>").lower()


# --- helpers ------------------------------------------------------------------------------

def _game(session: Session, name: str, statuses: tuple[str, ...], what: Message) -> Game:
    """The game, if its state allows ``what`` ("cannot {what} it")."""
    game = find_game(session, name)
    if game.status not in statuses:
        raise Refusal(_("game '{game}' is {state}: cannot {what} it", game=name,
                        state=game.status, what=what))
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
    parts.append("options: " + options_of(game).describe(game.turn_hours,
                                                         signing_up=game.status == "new"))
    return "; " + "; ".join(parts)


# --- actions ------------------------------------------------------------------------------

def do_deadline(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, tuple[str, float | datetime]] = order.args
    name, (how, value) = args
    game = _game(ctx.session, name, ("running",), _("set the deadline of"))
    target = ctx.now + timedelta(hours=value) if isinstance(value, float) else value
    assert isinstance(target, datetime)
    if target <= ctx.now:
        raise Refusal(_("{when} has passed already", when=When(target)))
    game.deadline, game.grace_until = target, None
    ctx.session.add(game)
    announce(ctx.session, ctx.post, game,
             _("turn {turn}: new deadline {when}", turn=game.turn, when=When(target)),
             [_("The referee set the deadline of turn {turn} to {when} ({relative}).",
                turn=game.turn, when=When(target), relative=relative_said(target, ctx.now))],
             ctx.now, action="deadline", actor="referee")
    return f"game {game.name}: deadline of turn {game.turn} set to {utc(target)}"


def do_extend(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, float] = order.args
    name, hours = args
    game = _game(ctx.session, name, ("running", "paused"), _("extend"))
    more = timedelta(hours=hours)
    if game.status == "paused":
        if game.paused_left_seconds is None:
            raise Refusal(_("game '{game}' has no deadline to extend; RESUME it, then use "
                            "DEADLINE", game=name))
        game.paused_left_seconds += more.total_seconds()
        what = _("The referee added {hours} hours to the time left on the deadline of turn "
                 "{turn}; {left} will be left when the game resumes.", hours=format(hours, "g"),
                 turn=game.turn, left=time_left(int(game.paused_left_seconds)))
        said = f"{_hours(game.paused_left_seconds)} left when it resumes"
    elif game.grace_until is not None:
        game.grace_until += more
        what = _("The referee extended the grace period of turn {turn} by {hours} hours, "
                 "to {when} ({relative}).", turn=game.turn, hours=format(hours, "g"),
                 when=When(game.grace_until), relative=relative_said(game.grace_until, ctx.now))
        said = f"grace until {utc(game.grace_until)}"
    elif game.deadline is not None:
        game.deadline += more
        what = _("The referee extended the deadline of turn {turn} by {hours} hours, to "
                 "{when} ({relative}).", turn=game.turn, hours=format(hours, "g"),
                 when=When(game.deadline), relative=relative_said(game.deadline, ctx.now))
        said = f"deadline {utc(game.deadline)}"
    else:
        raise Refusal(_("game '{game}' has no deadline to extend; set one with DEADLINE",
                        game=name))
    ctx.session.add(game)
    announce(ctx.session, ctx.post, game, _("turn {turn}: extended by {hours} hours",
                                            turn=game.turn, hours=format(hours, "g")),
             [what], ctx.now, action="extend", actor="referee")
    return f"game {game.name}: extended by {hours:g} hours ({said})"


def do_pause(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = _game(ctx.session, name, ("running",), _("pause"))
    end = game.grace_until or game.deadline
    game.paused_left_seconds = (None if end is None
                                else max(0.0, (end - ctx.now).total_seconds()))
    game.status = "paused"
    ctx.session.add(game)
    paused = _("The referee paused game {game} in turn {turn}. While it is "
               "paused no deadline runs and no turn resolves; orders sent meanwhile "
               "are refused, so send yours after it resumes (you will be told).",
               game=game.name, turn=game.turn)
    if game.paused_left_seconds is not None:
        paused = _("{paused} {left} were left on the deadline; the clock restarts with that "
                   "much when the game resumes.", paused=paused,
                   left=time_left(int(game.paused_left_seconds)))
    announce(ctx.session, ctx.post, game, _("the game is paused"), [paused],
             ctx.now, action="pause", actor="referee")
    return f"game {game.name} paused" + (f" ({_hours(game.paused_left_seconds)} left)"
                                         if game.paused_left_seconds is not None else "")


def do_resume(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = _game(ctx.session, name, ("paused",), _("resume"))
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
    resumed = _("The referee resumed game {game}: orders for turn {turn} are taken again.",
                game=game.name, turn=game.turn)
    if end is not None:
        resumed = (_("{resumed} The grace period of turn {turn} is now {when} ({relative}).",
                     resumed=resumed, turn=game.turn, when=When(end),
                     relative=relative_said(end, ctx.now)) if game.grace_until else
                   _("{resumed} The deadline of turn {turn} is now {when} ({relative}).",
                     resumed=resumed, turn=game.turn, when=When(end),
                     relative=relative_said(end, ctx.now)))
    announce(ctx.session, ctx.post, game, _("the game resumes"), [resumed], ctx.now,
             action="resume", actor="referee")
    return f"game {game.name} resumed" + (f"; deadline {utc(end)}" if end else "")


def _change_option(ctx: CommandContext, name: str, **changes: object) -> Game:
    """Set desk options of a game not over yet (WAIT, LEVEL); the game changed."""
    game = _game(ctx.session, name, ("new", "running", "paused"), _("change"))
    options = options_of(game)
    for option, value in changes.items():
        setattr(options, option, value)
    save_options(game, options)
    ctx.session.add(game)
    return game


def do_wait(ctx: CommandContext, order: Order) -> str | Done:
    args: tuple[str, bool] = order.args
    name, on = args
    game = _change_option(ctx, name, wait=on)
    if game.status == "new":
        return f"game {game.name}: WAIT {'on' if on else 'off'}"
    announce(ctx.session, ctx.post, game,
             _("turns resolve at the deadline") if on
             else _("turns resolve as soon as all orders are in"),
             [_("The referee set WAIT on for game {game}: from now on a turn resolves only "
                "at its deadline, even when every order is in.", game=game.name) if on else
              _("The referee set WAIT off for game {game}: from now on a turn resolves as "
                "soon as every order is in, or at its deadline.", game=game.name)],
             ctx.now, action="wait", actor="referee")
    out = f"game {game.name}: WAIT {'on' if on else 'off'}"
    if on:
        return out
    # the runner resolves the turn if every order is in (pbem.services.turns.settle)
    return Done(out, TurnChange(game, "wait-off"),
                if_resolved=f"; every order was in, so turn {game.turn} resolved")


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
    game = _game(ctx.session, order.args, ("over",), _("publish the private press of"))
    options = options_of(game)
    options.press_published = True
    save_options(game, options)
    ctx.session.add(game)
    audit(ctx.session, game, ctx.now, "publish", "private press", actor="referee")
    return f"game {game.name}: its private press is public now"


def do_remove(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, str] = order.args
    name, email = args
    game = _game(ctx.session, name, ("new",), _("remove players from (use REPLACE)"))
    player = next((p for p in players_of(ctx.session, game) if p.email == email), None)
    if player is None:
        raise Refusal(_("{address} does not play in '{game}'", address=email, game=name))
    who = player.name
    remove_entrant(ctx.session, game, player)
    notice(ctx.session, ctx.post, email, tagged(game.name, _("you were removed")),
           [_("The referee took you off game {game} before its start.", game=game.name)],
           ctx.now, game=game)
    audit(ctx.session, game, ctx.now, "remove", f"{who} <{email}>", actor="referee")
    return f"{who} <{email}> removed from {game.name}"


def do_cancel(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = _game(ctx.session, name, ("new", "running", "paused"), _("cancel"))
    told = announce(ctx.session, ctx.post, game, _("the game is cancelled"),
                    [_("The referee cancelled game {game} in turn {turn}. No more orders are "
                       "taken and no more reports will come.", game=game.name, turn=game.turn)
                     if game.turn else
                     _("The referee cancelled game {game} before its start. No more orders "
                       "are taken and no more reports will come.", game=game.name)],
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
            _("set this turn's deadline (UTC), e.g. 2026-12-05T18:00 or +24"), parse_deadline,
            action=do_deadline, who="referee", phase="change"),
    MailCommand("EXTEND", "EXTEND <game> <hours>",
            _("move this turn's deadline (or grace end, or a paused game's time left) later"),
            parse_extend, action=do_extend, who="referee", phase="change"),
    MailCommand("PAUSE", "PAUSE <game>",
            _("stop the clock: no deadline runs, no turn resolves, orders are refused"),
            game_name,
            action=do_pause, who="referee", phase="change"),
    MailCommand("RESUME", "RESUME <game>", _("restart the clock with the time that was left"),
            game_name, action=do_resume, who="referee", phase="change"),
    MailCommand("WAIT", "WAIT <game> on|off",
            _("on: a turn resolves only at its deadline, never as soon as all orders are in"),
            parse_wait, action=do_wait, who="referee", phase="change"),
    MailCommand("LEVEL", "LEVEL <game> easy|normal|strong",
            _("how well the robot plays a seat whose order is missing"), parse_level,
            action=do_level, who="referee", phase="change"),
    MailCommand("PUBLISH", "PUBLISH <game>",
            _("once a game is over: show its private press (SAY TO) on its web page"),
            game_name, action=do_publish, who="referee", phase="change"),
    MailCommand("REMOVE", "REMOVE <game> <email>",
            _("take a player off a game before its start"),
            parse_remove, action=do_remove, who="referee", phase="change"),
    MailCommand("CANCEL", "CANCEL <game>", _("end a game for good; its players are told"),
            game_name,
            action=do_cancel, who="referee", phase="change"),
)
