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

from pbem.commands.address import ADDRESSING, confirm_address
from pbem.commands.context import CommandContext, MailCommand, game_is, refuse
from pbem.commands.referee_cmds import start
from pbem.games.audit import audit
from pbem.games.lifecycle import add_player, remove_entrant
from pbem.games.records import active_players, find_game, id_of, players_of
from pbem.kinds import kind_of
from pbem.kinds.options import options_of
from pbem.orders.arguments import game_name, no_args
from pbem.orders.commands import Order
from pbem.services.post import replied_to, tagged, tell_referee
from pbem.store import security
from pbem.store.models import Game, OutboundMail, Signup, Watcher
from pbem.store.security import code_hash
from pbem.text.errors import Refusal
from pbem.text.wording import Message, Said, _, _n

SIGNUP_DAYS = 7
CODES_PER_DAY = 3        # code mails to one address a day, at most
JOINING, WATCHING = "pending", "pending-watch"   # Signup.status of a code not yet confirmed
SEND_LIST = _("send LIST for the games open for sign-up")


def _find(ctx: CommandContext, name: str, order: Order) -> Game:
    try:
        return find_game(ctx.session, name)
    except Refusal as refused:
        refused.quoting(order, hint=_("send LIST for the games open for sign-up and those "
                                      "you may WATCH"))
        raise


# --- parsers ------------------------------------------------------------------------------

def parse_join(args: list[str]) -> tuple[str, str]:
    if not args:
        raise Refusal(_("JOIN needs the game's name"), _("e.g. JOIN cup-1 Ann"))
    return game_name([args[0]]), " ".join(args[1:]).strip("<>\"' ")[:60]


def parse_confirm(args: list[str]) -> str | None:
    if len(args) > 1:
        raise Refusal(_("CONFIRM takes the code from the sign-up mail"),
                      _("e.g. CONFIRM 1a2b3c4d5e"))
    return args[0].lower() if args else None


# --- JOIN / WATCH: a code to the address ----------------------------------------------------

def _ask_to_confirm(ctx: CommandContext, game: Game, name: str, status: str, what: Message,
                    language: str | None = None) -> str:
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
                           status=status, created_at=ctx.now, language=language))
    subject = tagged(game.name, _("please confirm: {what}", what=what))
    ctx.notice(subject, [
        _("Someone (we hope you) asked from {address} to {what}.", address=email, what=what),
        _("To confirm, reply to this mail with the word CONFIRM, or send a mail with the line "
          "CONFIRM {code} from this address, within {days} days.", code=code, days=SIGNUP_DAYS),
        _("If it was not you, ignore this mail: nothing happens without your confirmation.")],
               game.name)
    return f"{status} sign-up of {email} to {game.name}: code sent"


def _may_get_code(ctx: CommandContext, email: str) -> bool:
    """Will the code mail to ``email`` leave? An unknown address has its answers a day
    (pbem.runner.answer_limits.limit_answers); the code mail is one of them."""
    limits = security.Limits.from_settings(ctx.post.settings)
    if email == ctx.post.referee.lower() or security.known_address(ctx.session, email):
        return True
    return security.answers_left(ctx.session, email, ctx.now, limits)


def do_join(ctx: CommandContext, order: Order) -> str:
    name, player_name = order.args
    game = _find(ctx, name, order)
    email = ctx.sender
    if game.status != "new" or not options_of(game).open:
        raise refuse(_("game {game} is not open for sign-up", game=game.name),
                     SEND_LIST, order, game.name)
    if any(p.email == email for p in players_of(ctx.session, game)):
        raise refuse(_("you play in {game} already", game=game.name), "", order, game.name)
    if len(players_of(ctx.session, game)) >= kind_of(game).max_players:
        raise refuse(_("game {game} is full", game=game.name), SEND_LIST, order, game.name)
    return _ask_to_confirm(ctx, game, player_name or email.partition("@")[0], JOINING,
                           _("join game {game}", game=game.name), written_in(ctx, order))


def written_in(ctx: CommandContext, order: Order) -> str | None:
    """The language a JOIN (or WATCH) was written in: its own word's (ANMELDEN, PŘIHLÁSIT),
    else that of the mail's other order words; None if all were English (the game's then
    holds). The confirmation is answered in it, and the player made reads it."""
    return order.language or next((o.language for o in ctx.orders if o.language), None)


def do_watch(ctx: CommandContext, order: Order) -> str:
    game = _find(ctx, order.args, order)
    email = ctx.sender
    if game.status in ("over", "cancelled"):
        raise refuse(game_is(game), "", order, game.name)
    if any(p.email == email and p.active for p in players_of(ctx.session, game)):
        raise refuse(_("you play in {game}: your reports show you the game", game=game.name),
                     "", order, game.name)
    if ctx.session.exec(select(Watcher).where(Watcher.game_id == game.id,
                                              Watcher.email == email)).first():
        raise refuse(_("you watch {game} already", game=game.name),
                     _("UNWATCH {game} to stop", game=game.name), order, game.name)
    return _ask_to_confirm(ctx, game, "", WATCHING, _("watch game {game}", game=game.name),
                           written_in(ctx, order))



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
        unmatched = refuse(_("I could not tell what you confirm"),
                           _("reply to the sign-up mail, or write CONFIRM with the code "
                             "from it"), order)
    else:
        digest = code_hash(order.args)
        signup = next((s for s in pending if hmac.compare_digest(s.code_hash, digest)), None)
        unmatched = _no_such_code(ctx, email, pending, order)
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
    if signup.language:
        ctx.language = signup.language    # the answer in the language the JOIN was written in
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


def _no_such_code(ctx: CommandContext, email: str, pending: list[Signup],
                  order: Order) -> Refusal:
    """A CONFIRM whose code matches nothing, told how to get a new code for what the
    address was asked: to JOIN or WATCH, or to take a player's games (ADDRESS), whose new
    code comes from an ADDRESS sent again from the old address."""
    moving = ctx.session.exec(select(Signup.id).where(
        Signup.email == email, Signup.status == ADDRESSING)).first() is not None
    joining = any(s.status != ADDRESSING for s in pending)
    if moving and not joining:
        return refuse(_("that code does not match the move of a player's games to this "
                        "address (or it expired)"),
                      _("check the code in the mail sent to this address; for a new code, "
                        "send ADDRESS {address} again from the old address", address=email),
                      order)
    return refuse(_("that code does not match a sign-up from your address (or it expired)"),
                  _("check the code in the mail sent to this address; for a new code, send "
                    "JOIN <game> again, or ADDRESS {address} from the old address to move "
                    "games here", address=email) if moving else
                  _("check the code in the sign-up mail, or send JOIN <game> again for a new "
                    "code"), order)


def _check_still_possible(ctx: CommandContext, game: Game, signup: Signup, watching: bool,
                          order: Order) -> None:
    if watching:
        if game.status in ("over", "cancelled"):
            raise refuse(game_is(game), "", order, game.name)
        return
    if game.status != "new" or not options_of(game).open:
        raise refuse(_("game {game} is no longer open for sign-up", game=game.name), "", order,
                     game.name)
    players = players_of(ctx.session, game)
    if any(p.email == signup.email for p in players):
        raise refuse(_("you play in {game} already", game=game.name), "", order, game.name)
    if len(players) >= kind_of(game).max_players:
        raise refuse(_("game {game} is full", game=game.name), SEND_LIST, order, game.name)


def _confirm_watch(ctx: CommandContext, game: Game, email: str) -> str:
    if ctx.session.exec(select(Watcher).where(Watcher.game_id == game.id,
                                              Watcher.email == email)).first() is None:
        ctx.session.add(Watcher(game_id=id_of(game), email=email, created_at=ctx.now))
    audit(ctx.session, game, ctx.now, "watch", email, actor=email)
    subject = tagged(game.name, _("you watch the game"))
    ctx.notice(subject, [_("You watch game {game}: each turn you get its public view "
                           "(nobody's hidden dice).", game=game.name),
                         _("Send UNWATCH {game} to stop.", game=game.name)],
               game.name)
    return f"{email} watches {game.name}"


def _confirm_join(ctx: CommandContext, game: Game, signup: Signup) -> str:
    player = add_player(ctx.session, game, signup.email, signup.name)
    if signup.language and not player.language:
        player.language = signup.language     # the JOIN's language: later mail is in it
        ctx.session.add(player)
    count, most = len(players_of(ctx.session, game)), kind_of(game).max_players
    subject = tagged(game.name, _("you are in"))
    ctx.notice(subject, [
        _("Welcome, {name}: you play in game {game} ({count} of {most} seats "
          "taken). Your first report comes when the game starts.", name=player.name,
          game=game.name, count=count, most=most),
        _("Your key: {key}. Keep it: a fresh mail to the referee about this game needs "
          "the lines GAME {game} and KEY {key} (it is in every report too).",
          key=player.key, game=game.name),
        _("To leave before the start, send those two lines and LEAVE {game}.",
          game=game.name)], game.name)
    audit(ctx.session, game, ctx.now, "join", f"{player.name} <{player.email}>",
          actor=player.email)
    tell_referee(ctx.session, ctx.post, _("{game}: {name} joined", game=game.name,
                                          name=player.name),
                 [_("{name} <{address}> confirmed their sign-up to {game}: {count} of "
                    "{most} seats taken.", name=player.name, address=player.email,
                    game=game.name, count=count, most=most)])
    out = f"{player.email} joins {game.name} as entrant {player.entrant}"
    if count >= most and options_of(game).autostart:
        out += "; " + _autostart(ctx, game)
    return out


def _autostart(ctx: CommandContext, game: Game) -> str:
    said = start(ctx, game.name)    # START's own code, not a copy
    audit(ctx.session, game, ctx.now, "autostart", said)
    tell_referee(ctx.session, ctx.post, _("{game} started by itself", game=game.name),
                 [_("The last seat of {game} was taken, and the game has AUTOSTART: "
                    "{started}.", game=game.name, started=said)])
    return said


# --- LEAVE / UNWATCH -----------------------------------------------------------------------

def do_leave(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None       # LEAVE needs GAME + KEY: who="player"
    game, player = ctx.who.game, ctx.who.player
    if game.name != order.args:
        raise refuse(_("your GAME and KEY lines are for {game}, not {other}", game=game.name,
                       other=order.args), "", order, game.name)
    if game.status != "new":
        raise refuse(_("game {game} has started: you can no longer leave it", game=game.name),
                     _("ask the referee to replace you"), order, game.name)
    remove_entrant(ctx.session, game, player)
    audit(ctx.session, game, ctx.now, "leave", f"{player.name} <{player.email}>",
          actor=player.email)
    tell_referee(ctx.session, ctx.post, _("{game}: {name} left", game=game.name,
                                          name=player.name),
                 [_("{name} <{address}> left {game} before its start.", name=player.name,
                    address=player.email, game=game.name)])
    subject = tagged(game.name, _("you left the game"))
    ctx.notice(subject, [_("You are no longer signed up for game {game}.", game=game.name)],
               game.name)
    return f"{player.email} left {game.name}"


def do_unwatch(ctx: CommandContext, order: Order) -> str:
    game = _find(ctx, order.args, order)
    email = ctx.sender
    rows = ctx.session.exec(select(Watcher).where(Watcher.game_id == game.id,
                                                  Watcher.email == email)).all()
    if not rows:
        raise refuse(_("you do not watch {game}", game=game.name), "", order, game.name)
    for row in rows:
        ctx.session.delete(row)
    subject = tagged(game.name, _("you no longer watch the game"))
    ctx.notice(subject, [_("You will get no more mail about game {game}.", game=game.name)],
               game.name)
    return f"{email} stopped watching {game.name}"


def do_list_games(ctx: CommandContext, order: Order) -> str:
    """LIST from anyone: the games open for sign-up, and the running ones to WATCH."""
    games = list(ctx.session.exec(select(Game).where(col(Game.status).in_(("new", "running")))
                                  .order_by(col(Game.name))))
    signup: list[Said] = []
    watch: list[Said] = []
    for game in games:
        kind = kind_of(game)
        seats = len(active_players(ctx.session, game))   # a replaced player is none
        most = kind.max_players
        rules = kind.describe_rules(json.loads(game.rules_json))
        if game.status == "new" and options_of(game).open and seats < most:
            signup.append(
                _n("{game}: {rules}; {seats} signed up, for {n} players. "
                   "JOIN {game} <your name>", "{game}: {rules}; {seats} signed up, for {n} "
                   "players. JOIN {game} <your name>", most, game=game.name, rules=rules,
                   seats=seats) if kind.min_players == most else
                _n("{game}: {rules}; {seats} signed up, for {least} to {n} players. "
                   "JOIN {game} <your name>", "{game}: {rules}; {seats} signed up, for "
                   "{least} to {n} players. JOIN {game} <your name>", most, game=game.name,
                   rules=rules, seats=seats, least=kind.min_players))
        elif game.status == "running":
            watch.append(_n("{game}: {rules}; {n} players, turn {turn}. WATCH {game}",
                            "{game}: {rules}; {n} players, turn {turn}. WATCH {game}", seats,
                            game=game.name, rules=rules, turn=game.turn))
    none_now = _("(none now)")
    paragraphs = [_("Open for sign-up:"), *(signup or [none_now]),
                  _("Running, to watch (the public view each turn, nobody's hidden dice):"),
                  *(watch or [none_now])]
    subject = _("Bluff by mail: the games")
    ctx.notice(subject, paragraphs, None)
    return f"game list sent ({len(signup)} open, {len(watch)} to watch)"


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("LIST", "LIST", _("the games open for sign-up, and the running ones you may "
                                  "WATCH"),
            no_args, action=do_list_games, who="anyone", phase="change"),
    MailCommand("JOIN", "JOIN <game> [<name>]",
            _("sign up for a game open for sign-up (you confirm from your address)"), parse_join,
            action=do_join, who="anyone", phase="change"),
    MailCommand("CONFIRM", "CONFIRM [<code>]",
            _("confirm a JOIN or WATCH: the code from the sign-up mail (or reply to that mail)"),
            parse_confirm, action=do_confirm, who="anyone", phase="change"),
    MailCommand("LEAVE", "LEAVE <game>",
            _("before the start: give up your seat (with GAME and KEY lines)"), game_name,
            action=do_leave, who="player", phase="change"),
    MailCommand("WATCH", "WATCH <game>", _("get the public view of a game each turn"), game_name,
            action=do_watch, who="anyone", phase="change"),
    MailCommand("UNWATCH", "UNWATCH <game>", _("stop watching a game"), game_name,
            action=do_unwatch, who="anyone", phase="change"),
)
