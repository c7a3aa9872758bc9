"""Player desk commands: ABSENT (vacations), DEFAULT, LANGUAGE, TIMEZONE, HISTORY, ORDERS.

Table talk (SAY) is in pbem.commands.table_talk, the sign-up commands (JOIN, CONFIRM,
LEAVE, WATCH, UNWATCH) in pbem.commands.signup. All of these need a known player (a
reply to a report, or GAME + KEY): who="player"; RECORD, anyone.

- ``ABSENT <from-date> <to-date>`` (ISO dates, UTC days, both included) and
  ``ABSENT NONE``: stored by address in table Absence, for every game of the
  address; deadlines falling inside move past it (pbem.services.clock), within
  the game's vacation cap.
- ``DEFAULT CHALLENGE|RAISE|ROBOT|NONE`` sets the player's standing order, what
  is played for them in a turn they miss (pbem.services.turns.missing_move).
- ``LANGUAGE`` and ``TIMEZONE``: the player's own ways, for every game of the address.
- ``HISTORY`` mails back every move so far, all mini-games, public
  information only (the kind's ``history``).
- ``ORDERS`` says what the player has in for the turn in play.
- ``RECORD <game>`` mails the record of a finished game (for `pbem verify`) to one of
  its players or watchers (by address: the answer goes to that address anyway).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from typing import Any, cast

from sqlalchemy import CursorResult, update
from sqlmodel import Session, col, delete

from pbem.commands.context import CommandContext, MailCommand, game_is, line_quoted, refuse
from pbem.games.records import find_game, players_of, running_games_of, update_player
from pbem.games.reporting import watchers_of
from pbem.games.states import load_state
from pbem.games.turn_in_play import pending_orders
from pbem.kinds import kind_of
from pbem.kinds.options import options_of
from pbem.orders.arguments import game_name, no_args
from pbem.orders.commands import Order
from pbem.orders.words import language_named, standing_order
from pbem.services.clock import vacation_check
from pbem.services.post import tagged
from pbem.services.reports import record_attachment
from pbem.store.models import Absence, Player
from pbem.store.rows import GameView
from pbem.text.deadlines import absence_interval
from pbem.text.errors import Refusal
from pbem.text.wording import LANGUAGES, Message, Said, _, _n, count_of, plural
from pbem.text.zones import ZONE_EXAMPLE, in_zone, zone_named

MAX_ABSENCE_DAYS = 366


# --- ABSENT ------------------------------------------------------------------------------

def parse_absent(args: list[str]) -> tuple[date, date] | None:
    if len(args) == 1 and args[0].upper() == "NONE":
        return None
    if len(args) != 2:
        raise Refusal(_("ABSENT takes the first and the last day you are away, or NONE"),
                      _("e.g. ABSENT 2026-12-24 2026-12-27 (UTC days), or ABSENT NONE"))
    example = _("e.g. ABSENT 2026-12-24 2026-12-27")
    try:
        first, last = date.fromisoformat(args[0]), date.fromisoformat(args[1])
    except ValueError:
        raise Refusal(_("ABSENT takes dates as YYYY-MM-DD"), example) from None
    if last < first:
        raise Refusal(_("the last day comes before the first"), example)
    if (last - first).days >= MAX_ABSENCE_DAYS:
        raise Refusal(_("an absence is at most {days} days", days=MAX_ABSENCE_DAYS),
                      _("ask the referee to PAUSE the game for longer breaks"))
    return first, last


def do_absent(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None
    email = ctx.who.player.email
    if order.args is None:
        ctx.session.exec(delete(Absence).where(col(Absence.email) == email,
                                               col(Absence.ends) > ctx.now))
        said: list[Said] = [_("Your absences are cleared: deadlines no longer move for you.")]
        outcome = f"absences of {email} cleared"
    else:
        starts, ends = absence_interval(*order.args)
        if ends <= ctx.now:
            raise refuse(_("that absence is over already"), _("give days to come"), order,
                         ctx.who.game.name)
        ctx.session.add(Absence(email=email, starts=starts, ends=ends, created_at=ctx.now))
        ctx.session.flush()
        first, last = order.args
        said = [_("Noted: you are away from {first} to {last} (UTC days, both included). A "
                  "deadline of your games that falls in it while your order is missing moves "
                  "to the day after you are back (the players are told).",
                  first=first.isoformat(), last=last.isoformat()),
                *_caps(ctx.session, email)]
        outcome = f"{email} away {first.isoformat()} to {last.isoformat()}"
    _move_now(ctx, email)
    subject = _("Your absence is noted") if order.args else _("Your absences are cleared")
    ctx.answer("notice", subject, {"subject": subject, "paragraphs": said,
                                   "game": ctx.who.game.name})
    return outcome


def _caps(session: Session, email: str) -> list[Message]:
    out = []
    for game, player in running_games_of(session, email):
        cap = options_of(game).vacation_days
        left = max(0.0, cap - player.absent_days_used)
        out.append(_n("Game {game}: deadlines move for you by at most {cap} days in all; "
                      "{left} day is left. Beyond that the referee decides.",
                      "Game {game}: deadlines move for you by at most {cap} days in all; "
                      "{left} days are left. Beyond that the referee decides.",
                      count_of(left),
                      game=game.name, cap=format(cap, "g"), left=format(left, "g")))
    return out


def _move_now(ctx: CommandContext, email: str) -> None:
    """Shift the current deadlines at once (the tick would do it within a minute too)."""
    for game, _player in running_games_of(ctx.session, email):
        if game.deadline is not None and game.grace_until is None:
            vacation_check(ctx.session, ctx.post, game, ctx.now)


# --- DEFAULT, HISTORY, ORDERS ---------------------------------------------------------

# every word some kind takes; what each does is the game's kind's (GameKind.standing_orders)
STANDING_WORDS = ("CHALLENGE", "RAISE", "ROBOT", "NONE")


def parse_default(args: list[str]) -> str:
    # the standing orders' words of each language too (VORGABE anzweifeln, VÝCHOZÍ zvýšit)
    word = standing_order(args) or ""
    if word not in STANDING_WORDS:
        raise Refusal(_("DEFAULT takes one of CHALLENGE, RAISE, ROBOT or NONE"),
                      _("e.g. DEFAULT CHALLENGE"))
    return word


def do_default(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None
    player, game = ctx.who.player, ctx.who.game
    if game.status in ("over", "cancelled"):
        raise refuse(game_is(game), _("no orders are taken now"), order, game.name)
    standing = kind_of(game).standing_orders
    choices = "DEFAULT " + ", DEFAULT ".join(standing)
    if order.args not in standing:
        raise refuse(_("DEFAULT {word} means nothing in {game}", word=order.args,
                       game=kind_of(game).title),
                     _("write {choices}", choices=choices), order, game.name)
    player = update_player(ctx.session, game, player,
                           default_order=None if order.args == "NONE" else order.args)
    ctx.who = replace(ctx.who, player=player)   # the mail's player, as now stored
    subject = tagged(game.name, _("your standing order: {word}", word=order.args))
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [line_quoted(order),
                       _("Your standing order is now {word}: when you send no order "
                         "in time, the referee will {what}.", word=order.args,
                         what=standing[order.args]),
                       _("An order you send for a turn always comes first. Change this at "
                         "any time with {choices}.", choices=choices)]})
    return f"standing order of {player.email} in {game.name}: {order.args}"


def _started(game: GameView, order: Order) -> None:
    if game.started_at is None:
        raise refuse(_("game {game} has not started yet", game=game.name), "", order,
                     game.name)


def do_history(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None
    game = ctx.who.game
    _started(game, order)
    lines = kind_of(game).history(load_state(ctx.session, game))
    subject = tagged(game.name, _("the moves so far (turn {turn})", turn=game.turn))
    ctx.answer("listing", subject, {
        "subject": subject, "game": game.name, "lines": lines,
        "paragraphs": [_("Every move of game {game} so far, in the order played "
                         "(public information only).", game=game.name) if lines
                       else _("No move has been played yet.")]})
    return f"history sent ({plural('{n} line', '{n} lines', len(lines))})"


def do_orders(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None
    game, player = ctx.who.game, ctx.who.player
    _started(game, order)
    kind = kind_of(game)
    paragraphs: list[Message] = []
    if game.status == "paused":
        paragraphs.append(_("Game {game} is paused: no orders are taken now; send yours once "
                            "the referee has resumed it (RESUME {game}), you will be told.",
                            game=game.name))
    elif game.status == "over":
        paragraphs.append(_("Game {game} is over: no orders are taken now.", game=game.name))
    elif game.status == "cancelled":
        paragraphs.append(_("Game {game} is cancelled: no orders are taken now.",
                            game=game.name))
    elif game.status != "running":
        paragraphs.append(_("Game {game} is {state}: no orders are taken now.",
                            game=game.name, state=game.status))
    else:
        due = kind.due(load_state(ctx.session, game)).get(player.seat or 0)
        pending = pending_orders(ctx.session, game).get(player.seat or 0)
        if due is None:
            paragraphs.append(_("Turn {turn}: you have nothing to do this turn.", turn=game.turn))
        elif pending is None:
            paragraphs.append(_("Turn {turn}: you have no order in yet. You must {due}.",
                                turn=game.turn, due=due))
        else:
            move = kind.describe_move(kind.move_from_json(json.loads(pending.move_json)))
            paragraphs.append(
                _("Turn {turn}: your order is {move} (entered by the referee on your behalf). "
                  "A new order before the deadline replaces it.", turn=game.turn, move=move)
                if pending.by == "referee" else
                _("Turn {turn}: your order is {move}. A new order before the deadline "
                  "replaces it.", turn=game.turn, move=move))
        if game.deadline is not None:
            paragraphs.append(_("Deadline: {when}.",
                                when=in_zone(game.deadline, player.timezone)))
    standing = player.default_order or "NONE"
    paragraphs.append(_("Your standing order for a missed turn: {word} ({what}).",
                        word=standing, what=kind.standing_orders.get(standing, standing)))
    if player.missed_turns:
        paragraphs.append(_("Turns missed in a row: {count}.", count=player.missed_turns))
    subject = tagged(game.name, _("your orders for turn {turn}", turn=game.turn))
    ctx.answer("notice", subject, {"subject": subject, "game": game.name,
                                   "paragraphs": paragraphs})
    return "orders sent"


# --- LANGUAGE -----------------------------------------------------------------------------

def _set_for_address(ctx: CommandContext, email: str, column: str, value: str | None) -> int:
    """Set a player's own way (LANGUAGE, TIMEZONE) on every seat of the address, in every
    game, by one statement; how many seats that is. The memo's players are read anew, and
    the mail's own player is handed on as now stored."""
    done = ctx.session.execute(
        update(Player).where(col(Player.email) == email).values({column: value}),
        execution_options={"synchronize_session": "evaluate"})
    ctx.session.forget(["players"])
    if ctx.who is not None and ctx.who.player.email == email:
        ctx.who = replace(ctx.who, player=replace(ctx.who.player,
                                                 **cast(dict[str, Any], {column: value})))
    return int(cast(CursorResult[Any], done).rowcount)


def parse_language(args: list[str]) -> str:
    found = language_named(args[0]) if len(args) == 1 else None
    if found is None:
        raise Refusal(_("LANGUAGE takes en, de or cs (English, Deutsch, čeština)"),
                      _("e.g. LANGUAGE de"))
    return found


def do_language(ctx: CommandContext, order: Order) -> str:
    """The language holds for every game of the address (as TIMEZONE does)."""
    assert ctx.who is not None
    player, game = ctx.who.player, ctx.who.game
    language: str = order.args
    games = _set_for_address(ctx, player.email, "language", language)
    ctx.language = language           # the answer is in the new language already
    subject = tagged(game.name, _("your language: {language}", language=LANGUAGES[language]))
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [line_quoted(order),
                       _("Your language is now {language}: HELP lists the order "
                         "words of that language, and they work in every game you play here; "
                         "the English words always work too.", language=LANGUAGES[language])]})
    return f"language of {player.email}: {language} ({games} games)"


# --- TIMEZONE -----------------------------------------------------------------------------

def parse_timezone(args: list[str]) -> str | None:
    """TIMEZONE <IANA name> | TIMEZONE UTC (or NONE): the zone, None for UTC alone."""
    if len(args) != 1:
        raise Refusal(_("TIMEZONE takes one time zone name"), ZONE_EXAMPLE)
    return zone_named(args[0])


def do_timezone(ctx: CommandContext, order: Order) -> str:
    """The zone holds for every game of the address, and for the games it joins later."""
    assert ctx.who is not None
    player, game = ctx.who.player, ctx.who.game
    zone: str | None = order.args
    games = _set_for_address(ctx, player.email, "timezone", zone)
    now = in_zone(ctx.now, zone)
    said = (_("Times in your mail are now written in {zone} with UTC beside them "
              "(it is {now} now).", zone=zone, now=now) if zone else
            _("Times in your mail are now written in UTC alone (it is {now} now).", now=now))
    subject = tagged(game.name, _("your time zone: {zone}", zone=zone or "UTC"))
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [line_quoted(order), said,
                       _("This holds for every game you play here. Change it at any time "
                         "with TIMEZONE and a name, or go back with TIMEZONE UTC.")]})
    return f"time zone of {player.email}: {zone or 'UTC'} ({games} games)"


def do_record(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    try:
        game = find_game(ctx.session, name)
    except Refusal:
        raise refuse(_("there is no game called {name}", name=name),
                     _("check the name in your reports"), order) from None
    sender = ctx.sender
    theirs = any(p.email == sender for p in players_of(ctx.session, game))
    if not theirs and sender not in watchers_of(ctx.session, game):
        raise refuse(_("RECORD gives a game's record to its players and watchers, and "
                       "{address} is neither in game {game}", address=sender, game=game.name),
                     "", order, game.name)
    if game.status != "over":
        raise refuse(_("game {game} is not over: its record, with the seed that proves "
                       "the dice, is given out when it ends", game=game.name),
                     _("the final report carries it"), order, game.name)
    attachment = record_attachment(ctx.session, game)
    subject = tagged(game.name, _("the game's record"))
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [_("The record of game {game} is attached ({file}): the rules, the "
                         "seed and its commitment, the seat draw and every move.",
                         game=game.name, file=attachment[0]),
                       _("To check it, install pbem and run: pbem verify {file}",
                         file=attachment[0])]},
        attachments=[attachment])
    return f"record of {game.name} sent to {sender}"


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("ABSENT", "ABSENT <from-date> <to-date> | ABSENT NONE",
            _("a vacation (UTC days, both included): your deadlines inside it move past it"),
            parse_absent, action=do_absent, who="player", phase="change"),
    MailCommand("DEFAULT", "DEFAULT CHALLENGE|RAISE|ROBOT|NONE",
            _("your standing order for a turn you miss"), parse_default,
            action=do_default, who="player", phase="change"),
    MailCommand("LANGUAGE", "LANGUAGE en|de|cs",
            _("your language: HELP shows its order words (BIETE, NEVĚŘÍM ...)"), parse_language,
            action=do_language, who="player", phase="change"),
    MailCommand("TIMEZONE", "TIMEZONE <zone> | TIMEZONE UTC",
            _("the time zone your deadlines are written in (an IANA name, e.g. "
              "Europe/Prague), with UTC beside"), parse_timezone, action=do_timezone, who="player",
            phase="change"),
    MailCommand("HISTORY", "HISTORY",
            _("every move so far, all mini-games (public information)"),
            no_args, action=do_history, who="player", phase="look"),
    MailCommand("ORDERS", "ORDERS", _("what you have in for this turn"), no_args,
            action=do_orders, who="player", phase="look"),
    MailCommand("RECORD", "RECORD <game>",
            _("the record of a finished game you played or watched, for `pbem verify`"),
            game_name, action=do_record, who="anyone", phase="change"),
)
