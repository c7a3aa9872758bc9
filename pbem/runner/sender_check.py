"""Who sent a mail, and for which game (what an address may make the server do is
pbem.runner.answer_limits').

- ``read_player_mail``: a player mail's game (``named_game``), its orders parsed
  with that game's kind, and the player it speaks for (``identify``), from the
  report it replies to (no key needed) or from its GAME and KEY lines;
- ``check_aligned``: with ``[security] require_aligned``, a player's mail that
  our mail server did not find aligned (DMARC, SPF, DKIM) is refused, and
  counted as a failed attempt (``auth_refusal``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from pbem.commands.context import Turnkey, refusal
from pbem.commands.registry import player_commands
from pbem.games.records import find_game, game_called, game_named, players_of, seated
from pbem.games.turn_in_play import game_at_hand
from pbem.kinds import kind_of
from pbem.mail.read import InboundMessage
from pbem.mail.senderauth import check_sender
from pbem.orders.commands import MAIL_LINES, ParsedText
from pbem.orders.parsing import parse_text
from pbem.services.post import Post, replied_ids, replied_mail
from pbem.store import security
from pbem.store.bodies import HeldMail
from pbem.store.engines import core_read
from pbem.store.models import AuditEntry, Game, OutboundMail, Player
from pbem.store.rows import GameRow, GameView, PlayerRow
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import _


def auth_refusal(refused: Refusal) -> Refusal:
    """Mark a refusal as a failed attempt to act as someone (counted, rate-limited)."""
    refused.auth_failed = True
    return refused


# our mail to a seat that a mail replies to: its game, seat and turn (a Core look)
_REPLIED_SEAT = (select(OutboundMail.id, OutboundMail.game_id, OutboundMail.seat,
                        OutboundMail.turn)
                 .where(col(OutboundMail.message_id).in_(bindparam("refs", expanding=True)),
                        col(OutboundMail.seat).is_not(None))
                 .order_by(col(OutboundMail.id).desc()).limit(1))


def replied_seat(session: Work, msg: InboundMessage) -> Any | None:
    """The newest mail of ours to a seat that ``msg`` replies to (In-Reply-To or
    References), as a row of its id, game_id, seat and turn; None if none. Mostly the
    newest it replies to at all is to a seat (a report, an answer): that one, read once
    (pbem.services.post.replied_mail), is it."""
    newest = replied_mail(session, msg)
    if newest is None or newest.seat is not None:
        return newest
    return core_read(session, _REPLIED_SEAT, {"refs": replied_ids(msg)}).first()


_REPLIED_SEATS = select(OutboundMail.id, OutboundMail.message_id, OutboundMail.game_id,
                        OutboundMail.seat).where(
    col(OutboundMail.message_id).in_(bindparam("refs", expanding=True)),
    col(OutboundMail.seat).is_not(None))


def replied_seats(session: Session, msgs: list[InboundMessage]) -> list[Any | None]:
    """The newest mail of ours to a seat that each of ``msgs`` replies to, as replied_seat
    finds it (a row of its id, message_id, game_id and seat; None if none), all read in
    one statement."""
    refs = [replied_ids(msg) for msg in msgs]
    wanted = sorted({ref for some in refs for ref in some})
    found: dict[str, Any] = {}
    for row in core_read(session, _REPLIED_SEATS, {"refs": wanted}) if wanted else ():
        if row.message_id not in found or row.id > found[row.message_id].id:
            found[row.message_id] = row
    return [max((found[ref] for ref in some if ref in found), key=lambda row: row.id,
                default=None) for some in refs]


def replied_report(session: Work,
                   msg: InboundMessage) -> tuple[Any, GameRow, PlayerRow | None] | None:
    """The mail of ours to a seat that ``msg`` replies to (a report, an answer), its game,
    and who holds that seat now; None if it replies to no such mail. Asked twice for each
    mail (who sends it, may it be answered), it is looked up once a unit of work (pbem.store.work.Work): a mail's
    handling changes no seat of the game it replies to."""
    memo = session.replies
    if id(msg) in memo:
        return memo[id(msg)][1]   # type: ignore[no-any-return]
    found: tuple[Any, GameRow, PlayerRow | None] | None = None
    sent = replied_seat(session, msg)
    if sent is not None and sent.game_id is not None and sent.seat is not None:
        game = game_at_hand(session, sent.game_id)   # a row, and its players ...: one read
        assert game is not None
        found = sent, game, seated(session, game).get(sent.seat)   # a replaced player: None
    memo[id(msg)] = (msg, found)   # the message kept with it: its id is not reused meanwhile
    return found


def token_reply(session: Work, msg: InboundMessage) -> bool:
    """Is ``msg`` a player's reply, from their own address, to our mail to their seat? Its
    reply token (our Message-ID, which only they were sent) stands for their key."""
    found = replied_report(session, msg)
    return found is not None and found[2] is not None and found[2].email == msg.from_addr


# the GAME line's declaration: all named_game reads of a mail before its game is known
GAME_LINE = tuple(c for c in MAIL_LINES if c.name == "GAME")


def find_game_or_none(session: Session, name: str) -> Game | None:
    try:
        return find_game(session, name)
    except Refusal:
        return None


def named_game(session: Work, msg: InboundMessage) -> GameRow | None:
    """The game a player mail speaks to, known before its orders are read: the game of
    our mail it replies to (replied_report, as identify finds it), else the game its GAME
    line names; None when neither names a game here. Only the GAME line is looked at here
    (a line, not the mail's parse)."""
    return _named(session, msg, replied_report(session, msg))


def _named(session: Work, msg: InboundMessage,
           found: tuple[Any, GameRow, PlayerRow | None] | None,
           at_hand: bool = False) -> GameRow | None:
    if found is not None:
        return found[1]
    game_line = parse_text(msg.lines, GAME_LINE).first("GAME")
    if game_line is None:
        return None
    name = str(game_line.args)   # at_hand: with its players ... (game_at_hand), to handle
    return game_at_hand(session, name=name) if at_hand else game_called(session, name)


def read_player_mail(session: Work, post: Post,
                     msg: InboundMessage) -> tuple[ParsedText, Turnkey | None]:
    """A player's mail, read once: parsed with the orders of its game's kind when the game
    is known before (named_game), so "OK thanks" in a postal game is prose, not Cup of
    Bluff's OK; else with every kind's (the sender is then no known player: identify says
    so). Then who it speaks for (identify). The report it replies to is looked up once."""
    found = replied_report(session, msg)
    game = _named(session, msg, found, at_hand=True)
    parsed = parse_text(msg.lines, player_commands(kind_of(game) if game is not None else None))
    return parsed, _identify(session, post, msg, parsed, found, game)


def identify(session: Work, post: Post, msg: InboundMessage,
             parsed: ParsedText) -> Turnkey | None:
    """The player (and turn) a mail speaks for; None if it names none. Raises a Refusal when
    it names one it may not speak for."""
    return _identify(session, post, msg, parsed, replied_report(session, msg))


def _identify(session: Work, post: Post, msg: InboundMessage, parsed: ParsedText,
              found: tuple[Any, GameRow, PlayerRow | None] | None,
              named: GameRow | None = None) -> Turnkey | None:
    """identify's work (``named``: the game the mail's GAME line named, if read already)."""
    if found is not None:
        sent, game, player = found
        if player is None or player.email != msg.from_addr:
            replaced_in(session, post, game, msg)
            moved_from(session, post, game, msg)
            raise auth_refusal(refusal(
                _("this is a reply to another player's mail, from an address that is "
                  "not theirs"), _("reply from the address the report was sent to"),
                game=game.name))
        turn_order = parsed.first("TURN")
        turn = turn_order.args if turn_order is not None else (sent.turn or game.turn)
        return Turnkey(game, player, turn)
    game_line, key_line = parsed.first("GAME"), parsed.first("KEY")
    if game_line is None and key_line is None:
        return None
    if game_line is None or key_line is None:
        missing = "GAME <game>" if game_line is None else "KEY <key>"
        raise refusal(_("a fresh mail needs both GAME and KEY lines; the {missing} line is "
                        "missing", missing=missing),
                      _("copy both lines from your latest report"))
    try:
        game = (named if named is not None and named.name == game_line.args
                else game_named(session, game_line.args))
    except Refusal as refused:
        refused.quoting(game_line, hint=_("check the game name in your report"))
        raise
    player = security.find_key_owner(players_of(session, game), str(key_line.args))
    # a replaced player's own old key, from their own address: they were replaced
    former = [replace(p, active=True) for p in players_of(session, game)
              if not p.active and p.email == msg.from_addr]
    if player is None and former and security.find_key_owner(former, str(key_line.args)):
        replaced_in(session, post, game, msg)
    if player is None or player.email != msg.from_addr:
        moved_from(session, post, game, msg)
        # the same answer either way: a key is no use from another address
        raise auth_refusal(refusal(
            _("that key does not belong to {address} in game {game}", address=msg.from_addr,
              game=game.name),
            _("use the key from your own report, sent from your registered address"),
            key_line.line_no, "KEY ****", game=game.name))
    turn_order = parsed.first("TURN")
    return Turnkey(game, player, turn_order.args if turn_order else game.turn)


def check_aligned(session: Session, post: Post, row: HeldMail, msg: InboundMessage) -> None:
    """With [security] require_aligned, a mail from a player's address must be aligned with
    its From domain as our mail server found it (pbem.mail.senderauth); else it is refused
    and counted as a failed attempt, like a wrong key."""
    security_settings = post.settings.security
    address = msg.from_addr
    if not security_settings.require_aligned or address is None:
        return
    if session.exec(select(Player.id).where(Player.email == address,
                                            col(Player.active).is_(True))).first() is None:
        return
    verdict = check_sender(msg.headers.block, address, security_settings.authserv_id)
    if verdict.aligned:
        return
    domain = address.rpartition("@")[2]
    raise auth_refusal(refusal(
        _("this mail could not be verified as sent by {domain} ({reason}), so nothing in it "
          "was read", domain=domain, reason=verdict.reason),
        _("send it from your mail account at {domain} itself (not through another service "
          "that writes your address as the sender); if you did, tell the referee",
          domain=domain)))


def replaced_in(session: Work, post: Post, game: GameView, msg: InboundMessage) -> None:
    """A player who was replaced in the game writes to it: say so (no failed attempt)."""
    gone = [p for p in players_of(session, game)
            if not p.active and p.email == msg.from_addr and p.seat is not None]
    if not gone:
        return
    seat = gone[-1].seat
    now = seated(session, game).get(seat or 0)
    said = (_("you were replaced in game {game}: seat {seat} is played by {name} now, so "
              "your orders and replies to your old reports are no longer read",
              game=game.name, seat=seat, name=now.name) if now is not None else
            _("you were replaced in game {game}: seat {seat} is played now, so your orders "
              "and replies to your old reports are no longer read", game=game.name,
              seat=seat))
    raise refusal(said, _("if you think this is a mistake, write to the referee <{referee}>",
                          referee=post.referee), game=game.name)


def moved_from(session: Session, post: Post, game: GameView, msg: InboundMessage) -> None:
    """Mail from an address whose player moved their games away from it (ADDRESS): say so
    (no failed attempt). The new address is not named: the old one may have passed to
    someone else since, and the player was told it when they moved."""
    address = msg.from_addr
    moves = session.exec(select(AuditEntry.detail).where(
        AuditEntry.game_id == game.id, AuditEntry.action == "address")).all()
    if not any(detail.partition(" -> ")[0] == address for detail in moves):
        return
    raise refusal(_("{address} no longer plays in game {game}: its player moved their games "
                    "to another address (ADDRESS), and only mail from there is read now",
                    address=address, game=game.name),
                  _("write from your new address: your key and replies to your reports work "
                    "from there; if you did not move your games, write to the referee "
                    "<{referee}>", referee=post.referee), game=game.name)
