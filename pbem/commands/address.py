"""ADDRESS: a player moves to a new mail address.

``ADDRESS new@example.org`` (from a player, with GAME and KEY or in a reply) changes
nothing yet: it mails a code to the new address, as JOIN does (a Signup row whose email
is the new address and whose name is the old one, status ADDRESSING). When the code
comes back from the new address (``CONFIRM <code>``, or ``CONFIRM`` in a reply to the
code mail: pbem.commands.signup.do_confirm), every seat the old address holds moves to
the new one; the private web links and the replies to earlier reports follow the seat,
so they keep working from the new address. The referee and the old address are told.
So nobody can move a seat to an address that is not theirs, nor take one.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlmodel import col, select

from pbem.commands.context import CommandContext, MailCommand, line_quoted, refuse
from pbem.games.audit import audit
from pbem.games.records import id_of
from pbem.mail.addresses import address_problem
from pbem.orders.commands import Order
from pbem.services.post import notice, tagged, tell_referee
from pbem.store.models import Absence, Game, Player, Signup, Watcher
from pbem.store.security import code_hash
from pbem.text.errors import Refusal
from pbem.text.wording import Said, _

ADDRESSING = "pending-address"     # Signup.status of an address change not yet confirmed
CODE_DAYS = 7                      # as a sign-up's code
CODES_PER_DAY = 3                  # code mails to one new address a day, at most
ADDRESS_EXAMPLE = _("e.g. ADDRESS ann@example.org")



def parse_address(args: list[str]) -> str:
    if len(args) != 1:
        raise Refusal(_("ADDRESS takes your new mail address"), ADDRESS_EXAMPLE)
    spec = args[0].strip("<>")
    problem = address_problem(spec)
    if problem is not None:
        raise Refusal(_("'{spec}' is not a mail address I can write to: {problem}",
                        spec=spec[:80], problem=problem), ADDRESS_EXAMPLE)
    return spec.lower()


def _games_of(ctx: CommandContext, email: str) -> list[tuple[Game, Player]]:
    """The games the address holds a seat or a sign-up in (not over)."""
    rows = ctx.session.exec(select(Game, Player).where(
        Player.game_id == Game.id, Player.email == email, col(Player.active).is_(True),
        col(Game.status).not_in(["over", "cancelled"])))
    return list(rows.all())


def _clash(ctx: CommandContext, old: str, new: str) -> list[str]:
    """Games both addresses play in: a seat cannot move onto one the new address holds."""
    theirs = {game.id for game, _player in _games_of(ctx, new)}
    return sorted(game.name for game, _player in _games_of(ctx, old) if game.id in theirs)


def do_address(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None
    player, game = ctx.who.player, ctx.who.game
    old, new = player.email, order.args
    if new == old:
        raise refuse(_("{address} is your address already", address=new), "", order,
                     game.name)
    clash = _clash(ctx, old, new)
    if clash:
        raise refuse(_("{address} plays in {games} already, where you play too",
                       address=new, games=", ".join(clash)),
                     _("a seat cannot move onto another player's; ask the referee"), order,
                     game.name)
    recent = ctx.session.exec(select(Signup.id).where(
        Signup.email == new, col(Signup.created_at) > ctx.now - timedelta(days=1))).all()
    if len(recent) >= CODES_PER_DAY:
        raise refuse(_("{address} has had {count} code mails today, the most it gets",
                       address=new, count=len(recent)),
                     _("try again tomorrow"), order, game.name)
    for earlier in ctx.session.exec(select(Signup).where(
            Signup.name == old, Signup.status == ADDRESSING)):
        earlier.status = "withdrawn"          # the newest request is the one that counts
        ctx.session.add(earlier)
    code = secrets.token_hex(5)
    ctx.session.add(Signup(game_id=id_of(game), email=new, name=old, code_hash=code_hash(code),
                           status=ADDRESSING, created_at=ctx.now))
    # the new address reads what the player reads (it is theirs)
    notice(ctx.session, ctx.post, new, tagged(game.name, _("please confirm your new address")), [
        _("The player at {old} asked to move their games here, to {new}.", old=old, new=new),
        _("To confirm, reply to this mail with the word CONFIRM, or send a mail with the line "
          "CONFIRM {code} from this address, within {days} days.", code=code, days=CODE_DAYS),
        _("If you did not ask for this, ignore this mail: nothing changes without your "
          "confirmation.")], ctx.now, language=ctx.language, game=game)
    subject = tagged(game.name, _("a code went to {address}", address=new))
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [line_quoted(order),
                       _("A code went to {address}. Your games move there when it comes back "
                         "from that address (CONFIRM, within {days} days); until then "
                         "this address plays as before.", address=new, days=CODE_DAYS)]})
    return f"address change of {old} to {new}: code sent"


def confirm_address(ctx: CommandContext, signup: Signup, order: Order) -> str:
    """The code came back from the new address: every seat of the old one moves to it."""
    old, new = signup.name, signup.email
    asked_in = ctx.session.get(Game, signup.game_id)
    assert asked_in is not None
    clash = _clash(ctx, old, new)
    if clash:
        raise refuse(_("{new} has joined {games} meanwhile, where {old} plays", new=new,
                       games=", ".join(clash), old=old),
                     _("ask the referee"), order)
    moved = _games_of(ctx, old)
    for game, player in moved:
        player.email = new
        ctx.session.add(player)
        audit(ctx.session, game, ctx.now, "address", f"{old} -> {new}", actor=new)
    _move_the_rest(ctx, old, new)
    ctx.session.flush()
    ctx.session.forget(["players"])   # the memo's rows have the old address
    names: Said = ", ".join(game.name for game, _player in moved) or _("no game")
    ctx.notice(tagged(asked_in.name, _("your new address")), [
        _("Done: your games ({games}) are played from {new} now. Your keys, your private "
          "links and replies to your earlier reports keep working from here.",
          games=names, new=new)], asked_in.name)
    notice(ctx.session, ctx.post, old, tagged(asked_in.name, _("your games moved")), [
        _("Your games ({games}) moved to {new}, as asked and confirmed from there. Mail "
          "from this address no longer plays in them.", games=names, new=new)], ctx.now)
    tell_referee(ctx.session, ctx.post, _("{old} is now {new}", old=old, new=new),
                 [_("The player at {old} moved to {new} (confirmed from the new address): "
                    "{games}.", old=old, new=new, games=names)])
    return f"{old} is now {new} in {len(moved)} games"


def _move_the_rest(ctx: CommandContext, old: str, new: str) -> None:
    """What else the old address holds moves too: its absences to come (ABSENT is kept by
    address, and would no longer move the player's deadlines) and the games it watches."""
    for absence in ctx.session.exec(select(Absence).where(Absence.email == old,
                                                          col(Absence.ends) > ctx.now)):
        absence.email = new
        ctx.session.add(absence)
    watched = set(ctx.session.exec(select(Watcher.game_id).where(Watcher.email == new)))
    for watcher in ctx.session.exec(select(Watcher).where(Watcher.email == old)):
        if watcher.game_id in watched:
            ctx.session.delete(watcher)
        else:
            watcher.email = new
            ctx.session.add(watcher)


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("ADDRESS", "ADDRESS <new address>",
                _("move your games to a new mail address (a code goes there to confirm)"),
                parse_address, action=do_address, who="player", phase="change"),
)
