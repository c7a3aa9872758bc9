"""Sign-up by mail: JOIN, CONFIRM, LEAVE, WATCH, UNWATCH.

JOIN and WATCH take nothing yet: they mail a code to the sending address
(only its hash is stored, in table Signup). The seat (or the watch) is taken
when the address answers: ``CONFIRM <code>`` from that address, or just
``CONFIRM`` in a reply to the code mail (the reply names the code mail's
Message-ID, which only its recipient knows). So nobody can sign up an address
that is not theirs. Codes expire after SIGNUP_DAYS.

The confirmation mail carries the player's key; ``LEAVE <game>`` needs it
(the lines GAME <game> and KEY <key>), so nobody can take someone else off
a game. When JOIN fills the last seat of a game with AUTOSTART, the game
starts as START would (pbem.commands.referee_cmds.start). An address gets
at most CODES_PER_DAY code mails a day, so forged JOINs cannot flood it.
"""

from __future__ import annotations

import hmac
import json
import secrets
from datetime import timedelta

from sqlmodel import col, select

from pbem import security
from pbem.commands.address import ADDRESSING, confirm_address
from pbem.commands.context import CommandContext, MailCommand, refuse
from pbem.commands.referee_cmds import start
from pbem.errors import Refusal
from pbem.games import add_player, audit, find_game, id_of, players_of, remove_entrant
from pbem.kinds import kind_of
from pbem.models import Game, OutboundMail, Signup, Watcher
from pbem.options import options_of
from pbem.orders import Order, game_name, no_args
from pbem.security import code_hash
from pbem.services.post import replied_to, tagged, tell_referee

SIGNUP_DAYS = 7
CODES_PER_DAY = 3        # code mails to one address a day, at most
JOINING, WATCHING = "pending", "pending-watch"   # Signup.status of a code not yet confirmed


def _find(ctx: CommandContext, name: str, order: Order) -> Game:
    try:
        return find_game(ctx.session, name)
    except Refusal as refused:
        refused.quoting(order, hint="send LIST for the games open for sign-up and those you "
                        "may WATCH")
        raise


# --- parsers ------------------------------------------------------------------------------

def parse_join(args: list[str]) -> tuple[str, str]:
    if not args:
        raise Refusal("JOIN needs the game's name", "e.g. JOIN cup-1 Ann")
    return game_name([args[0]]), " ".join(args[1:]).strip("<>\"' ")[:60]


def parse_confirm(args: list[str]) -> str | None:
    if len(args) > 1:
        raise Refusal("CONFIRM takes the code from the sign-up mail", "e.g. CONFIRM 1a2b3c4d5e")
    return args[0].lower() if args else None


# --- JOIN / WATCH: a code to the address ----------------------------------------------------

def _ask_to_confirm(ctx: CommandContext, game: Game, name: str, status: str, what: str) -> str:
    email = ctx.sender
    recent = ctx.session.exec(select(Signup.id).where(
        Signup.email == email, col(Signup.created_at) > ctx.now - timedelta(days=1))).all()
    if len(recent) >= CODES_PER_DAY:
        # forged JOINs must not flood an address with code mails: stay silent
        return f"{status} sign-up of {email} to {game.name}: not answered (code limit)"
    if not _may_get_code(ctx, email):
        # its code mail would not leave: no sign-up that waits for a code never sent
        return (f"{status} sign-up of {email} to {game.name}: not made, as its code mail "
                f"would be not answered ({security.STRANGER_LIMIT})")
    for old in ctx.session.exec(select(Signup).where(
            Signup.game_id == game.id, Signup.email == email,
            col(Signup.status).in_([JOINING, WATCHING]))):
        old.status = "withdrawn"            # the newest request is the one that counts
        ctx.session.add(old)
    code = secrets.token_hex(5)
    ctx.session.add(Signup(game_id=id_of(game), email=email, name=name, code_hash=code_hash(code),
                           status=status, created_at=ctx.now))
    subject = tagged(game.name, f"please confirm: {what}")
    ctx.notice(subject, [
        f"Someone (we hope you) asked from {email} to {what}.",
        f"To confirm, reply to this mail with the word CONFIRM, or send a mail with the line "
        f"CONFIRM {code} from this address, within {SIGNUP_DAYS} days.",
        "If it was not you, ignore this mail: nothing happens without your confirmation."],
               game.name)
    return f"{status} sign-up of {email} to {game.name}: code sent"


def _may_get_code(ctx: CommandContext, email: str) -> bool:
    """Will the code mail to ``email`` leave? An unknown address (or a locked-out one) has
    its answers a day (pbem.sender_check.limit_answers); the code mail is one of them."""
    limits = security.Limits.from_settings(ctx.post.settings)
    known = email == ctx.post.referee.lower() or security.known_address(ctx.session, email)
    if known and not security.locked_out(ctx.session, email, ctx.now, limits):
        return True
    return security.answers_left(ctx.session, email, ctx.now, limits)


def do_join(ctx: CommandContext, order: Order) -> str:
    name, player_name = order.args
    game = _find(ctx, name, order)
    email = ctx.sender
    if game.status != "new" or not options_of(game).open:
        raise refuse(f"game {game.name} is not open for sign-up",
                     "send LIST for the games open for sign-up", order, game.name)
    if any(p.email == email for p in players_of(ctx.session, game)):
        raise refuse(f"you play in {game.name} already", "", order, game.name)
    if len(players_of(ctx.session, game)) >= kind_of(game).max_players:
        raise refuse(f"game {game.name} is full", "send LIST for the games open for sign-up", order,
                     game.name)
    return _ask_to_confirm(ctx, game, player_name or email.partition("@")[0], JOINING,
                           f"join game {game.name}")


def do_watch(ctx: CommandContext, order: Order) -> str:
    game = _find(ctx, order.args, order)
    email = ctx.sender
    if game.status in ("over", "cancelled"):
        raise refuse(f"game {game.name} is {game.status}", "", order, game.name)
    if any(p.email == email and p.active for p in players_of(ctx.session, game)):
        raise refuse(f"you play in {game.name}: your reports show you the game", "", order,
                     game.name)
    if ctx.session.exec(select(Watcher).where(Watcher.game_id == game.id,
                                              Watcher.email == email)).first():
        raise refuse(f"you watch {game.name} already", f"UNWATCH {game.name} to stop", order,
                     game.name)
    return _ask_to_confirm(ctx, game, "", WATCHING, f"watch game {game.name}")


# --- CONFIRM -----------------------------------------------------------------------------

def _replied_signup(ctx: CommandContext, pending: list[Signup]) -> Signup | None:
    """The sign-up whose code mail this mail replies to (bare CONFIRM in a reply)."""
    assert ctx.mail is not None
    sent = replied_to(ctx.session, ctx.mail.msg,
                      OutboundMail.rcpts_json == json.dumps([ctx.sender]))
    if sent is None:
        return None
    earlier = [s for s in pending if s.created_at <= sent.created_at]
    return max(earlier, key=lambda s: (s.created_at, s.id or 0)) if earlier else None


def do_confirm(ctx: CommandContext, order: Order) -> str:
    email = ctx.sender
    since = ctx.now - timedelta(days=SIGNUP_DAYS)
    pending = list(ctx.session.exec(select(Signup).where(
        Signup.email == email, col(Signup.status).in_([JOINING, WATCHING, ADDRESSING]),
        col(Signup.created_at) >= since)))
    if order.args is None:
        signup = _replied_signup(ctx, pending)
        unmatched = refuse("I could not tell what you confirm", "reply to the sign-up mail, "
                           "or write CONFIRM with the code from it", order)
    else:
        digest = code_hash(order.args)
        signup = next((s for s in pending if hmac.compare_digest(s.code_hash, digest)), None)
        unmatched = refuse("that code does not match a sign-up from your address (or it "
                           "expired)", "check the code in the sign-up mail, or send JOIN "
                           "<game> again for a new code", order)
    if signup is None:
        unmatched.about_signup = bool(pending)   # a newcomer's typo: told, within a bound
        raise unmatched
    if signup.status == ADDRESSING:           # a player's new address (ADDRESS)
        try:
            said = confirm_address(ctx, signup, order)
        except Refusal as refused:
            refused.sender_proven = True
            raise
        signup.status, signup.confirmed_at = "confirmed", ctx.now
        ctx.session.add(signup)
        return said
    game = ctx.session.get(Game, signup.game_id)
    assert game is not None
    watching = signup.status == WATCHING
    try:
        _check_still_possible(ctx, game, signup, watching, order)   # before anything changes
    except Refusal as refused:
        refused.sender_proven = True    # the code (or a reply to its mail) came back
        raise
    signup.status, signup.confirmed_at = "confirmed", ctx.now
    ctx.session.add(signup)
    if watching:
        return _confirm_watch(ctx, game, email)
    return _confirm_join(ctx, game, signup)


def _check_still_possible(ctx: CommandContext, game: Game, signup: Signup, watching: bool,
                          order: Order) -> None:
    if watching:
        if game.status in ("over", "cancelled"):
            raise refuse(f"game {game.name} is {game.status}", "", order, game.name)
        return
    if game.status != "new" or not options_of(game).open:
        raise refuse(f"game {game.name} is no longer open for sign-up", "", order, game.name)
    players = players_of(ctx.session, game)
    if any(p.email == signup.email for p in players):
        raise refuse(f"you play in {game.name} already", "", order, game.name)
    if len(players) >= kind_of(game).max_players:
        raise refuse(f"game {game.name} is full", "send LIST for the games open for sign-up", order,
                     game.name)


def _confirm_watch(ctx: CommandContext, game: Game, email: str) -> str:
    if ctx.session.exec(select(Watcher).where(Watcher.game_id == game.id,
                                              Watcher.email == email)).first() is None:
        ctx.session.add(Watcher(game_id=id_of(game), email=email, created_at=ctx.now))
    audit(ctx.session, game, ctx.now, "watch", email, actor=email)
    subject = tagged(game.name, "you watch the game")
    ctx.notice(subject, [f"You watch game {game.name}: each turn you get its public view "
                         f"(nobody's hidden dice).", f"Send UNWATCH {game.name} to stop."],
               game.name)
    return f"{email} watches {game.name}"


def _confirm_join(ctx: CommandContext, game: Game, signup: Signup) -> str:
    player = add_player(ctx.session, game, signup.email, signup.name)
    count, most = len(players_of(ctx.session, game)), kind_of(game).max_players
    subject = tagged(game.name, "you are in")
    ctx.notice(subject, [
        f"Welcome, {player.name}: you play in game {game.name} ({count} of {most} seats "
        f"taken). Your first report comes when the game starts.",
        f"Your key: {player.key}. Keep it: a fresh mail to the referee about this game needs "
        f"the lines GAME {game.name} and KEY {player.key} (it is in every report too).",
        f"To leave before the start, send those two lines and LEAVE {game.name}."], game.name)
    audit(ctx.session, game, ctx.now, "join", f"{player.name} <{player.email}>",
          actor=player.email)
    tell_referee(ctx.session, ctx.post, f"{game.name}: {player.name} joined",
                 [f"{player.name} <{player.email}> confirmed their sign-up to "
                  f"{game.name}: {count} of {most} seats taken."])
    out = f"{player.email} joins {game.name} as entrant {player.entrant}"
    if count >= most and options_of(game).autostart:
        out += "; " + _autostart(ctx, game)
    return out


def _autostart(ctx: CommandContext, game: Game) -> str:
    said = start(ctx, game.name)    # START's own code, not a copy
    audit(ctx.session, game, ctx.now, "autostart", said)
    tell_referee(ctx.session, ctx.post, f"{game.name} started by itself",
                 [f"The last seat of {game.name} was taken, and the game has "
                  f"AUTOSTART: {said}."])
    return said


# --- LEAVE / UNWATCH -----------------------------------------------------------------------

def do_leave(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None       # LEAVE needs GAME + KEY: who="player"
    game, player = ctx.who.game, ctx.who.player
    if game.name != order.args:
        raise refuse(f"your GAME and KEY lines are for {game.name}, not {order.args}", "",
                     order, game.name)
    if game.status != "new":
        raise refuse(f"game {game.name} has started: you can no longer leave it",
                     "ask the referee to replace you", order, game.name)
    remove_entrant(ctx.session, game, player)
    audit(ctx.session, game, ctx.now, "leave", f"{player.name} <{player.email}>",
          actor=player.email)
    tell_referee(ctx.session, ctx.post, f"{game.name}: {player.name} left",
                 [f"{player.name} <{player.email}> left {game.name} before its start."])
    subject = tagged(game.name, "you left the game")
    ctx.notice(subject, [f"You are no longer signed up for game {game.name}."], game.name)
    return f"{player.email} left {game.name}"


def do_unwatch(ctx: CommandContext, order: Order) -> str:
    game = _find(ctx, order.args, order)
    email = ctx.sender
    rows = ctx.session.exec(select(Watcher).where(Watcher.game_id == game.id,
                                                  Watcher.email == email)).all()
    if not rows:
        raise refuse(f"you do not watch {game.name}", "", order, game.name)
    for row in rows:
        ctx.session.delete(row)
    subject = tagged(game.name, "you no longer watch the game")
    ctx.notice(subject, [f"You will get no more mail about game {game.name}."], game.name)
    return f"{email} stopped watching {game.name}"


def do_list_games(ctx: CommandContext, order: Order) -> str:
    """LIST from anyone: the games open for sign-up, and the running ones to WATCH."""
    games = list(ctx.session.exec(select(Game).where(col(Game.status).in_(("new", "running")))
                                  .order_by(col(Game.name))))
    signup, watch = [], []
    for game in games:
        kind = kind_of(game)
        seats = len(players_of(ctx.session, game))
        most = kind.max_players
        what = f"{game.name}: {kind.describe_rules(json.loads(game.rules_json))}"
        if game.status == "new" and options_of(game).open and seats < most:
            wanted = (f"{most}" if kind.min_players == most
                      else f"{kind.min_players} to {most}")
            signup.append(f"{what}; {seats} signed up, for {wanted} players. "
                          f"JOIN {game.name} <your name>")
        elif game.status == "running":
            watch.append(f"{what}; {seats} players, turn {game.turn}. WATCH {game.name}")
    paragraphs = ["Open for sign-up:", *(signup or ["(none now)"]),
                  "Running, to watch (the public view each turn, nobody's hidden dice):",
                  *(watch or ["(none now)"])]
    subject = "Bluff by mail: the games"
    ctx.notice(subject, paragraphs, None)
    return f"game list sent ({len(signup)} open, {len(watch)} to watch)"


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("LIST", "LIST", "the games open for sign-up, and the running ones you may WATCH",
            no_args, action=do_list_games, who="anyone", phase="change"),
    MailCommand("JOIN", "JOIN <game> [<name>]",
            "sign up for a game open for sign-up (you confirm from your address)", parse_join,
            action=do_join, who="anyone", phase="change"),
    MailCommand("CONFIRM", "CONFIRM [<code>]",
            "confirm a JOIN or WATCH: the code from the sign-up mail (or reply to that mail)",
            parse_confirm, action=do_confirm, who="anyone", phase="change"),
    MailCommand("LEAVE", "LEAVE <game>",
            "before the start: give up your seat (with GAME and KEY lines)", game_name,
            action=do_leave, who="player", phase="change"),
    MailCommand("WATCH", "WATCH <game>", "get the public view of a game each turn", game_name,
            action=do_watch, who="anyone", phase="change"),
    MailCommand("UNWATCH", "UNWATCH <game>", "stop watching a game", game_name,
            action=do_unwatch, who="anyone", phase="change"),
)
