"""Bounces heard: what a bounce of one of our mails does to its address (issue 15).

- ``hear``: a mail that reads as a bounce (pbem.mail.bounces) and names a mail
  we sent (bounced_mail: its VERP token, or its Message-ID and
  recipient) updates the address's BounceState (``bounced``). A hard bounce marks the
  address failing and tells the referee at once; soft bounces (delays) are
  counted, and the referee is told when ``soft_bounce_limit`` of them came
  in a row. The referee gets at most one such mail per address and UTC day.
  A bounce that names no mail of ours (forged, or for another sender) marks
  nobody. Bounces are never answered.
- ``undeliverable``: a recipient that its mail server refused as we sent the mail
  (550 at RCPT, a 5xx at DATA: the outbox gave up on it) is a hard bounce, through
  the same ``bounced``; a 4xx there is a retry (pbem.outbox), no bounce.
- ``heard_from``: mail from an address clears its state: it works again.
- ``report_notes``: the next report of the game says "mail to player 3 bounced".
- ``failing`` / ``failing_players``: for STATUS and the referee's replace prompt.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from pbem.games.audit import audit
from pbem.mail.bounces import Bounce, read_bounce
from pbem.mail.read import InboundMessage
from pbem.outbox import Undelivered
from pbem.services.post import BOUNCE_TO_CLEAR, Post, bounce_to_clear, tagged, tell_referee
from pbem.services.post import undeliverable as tell_undeliverable
from pbem.store.engines import core_read
from pbem.store.models import BounceState, Game, OutboundMail, Player
from pbem.store.rows import GameView
from pbem.store.work import Work
from pbem.text.wording import Said, _, _n

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BouncedMail:
    """A bounce matched to the mail of ours it is for."""

    mail: OutboundMail
    address: str           # the recipient whose delivery failed
    permanent: bool
    reason: str
    via: str               # "verp" | "message-id" | "smtp" (refused as we sent it)


def bounced_mail(session: Session, bounce: Bounce) -> BouncedMail | None:
    """The mail ``bounce`` is for, or None when it names no mail we sent to the failed address.

    A VERP token names the mail by itself (a forwarded address may bounce under another
    name). A Message-ID must also be of a mail to an address the bounce says failed: a
    bounce naming a player's address for a mail we never sent them matches nothing.
    """
    for token in bounce.verp_tokens:
        row = session.exec(select(OutboundMail).where(OutboundMail.bounce_token == token)).first()
        if row is not None:
            rcpts = [r.lower() for r in json.loads(row.rcpts_json)]
            named = [r for r in rcpts if r in bounce.addresses]
            address = named[0] if named else rcpts[0]
            failed = named[0] if named else next(iter(sorted(bounce.addresses)))
            return BouncedMail(row, address, bounce.is_permanent(failed),
                               bounce.reason(failed), "verp")
    for message_id in bounce.message_ids:
        row = session.exec(select(OutboundMail).where(
            OutboundMail.message_id == message_id)).first()
        if row is None:
            continue
        named = [r.lower() for r in json.loads(row.rcpts_json) if r.lower() in bounce.addresses]
        if named:
            return BouncedMail(row, named[0], bounce.is_permanent(named[0]),
                               bounce.reason(named[0]), "message-id")
    return None


def state_of(session: Session, address: str) -> BounceState | None:
    return session.exec(select(BounceState).where(BounceState.address == address.lower())).first()


def failing(session: Session, address: str) -> BounceState | None:
    """The bounce state of an address marked failing (a hard bounce not cleared since)."""
    state = state_of(session, address)
    return state if state is not None and state.failing else None


def failing_players(session: Session, game: Game) -> list[tuple[Player, BounceState]]:
    """The game's active players whose address is failing, by seat."""
    players = session.exec(select(Player).where(Player.game_id == game.id,
                                                col(Player.active).is_(True))
                           .order_by(col(Player.seat), col(Player.entrant))).all()
    found = []
    for player in players:
        state = failing(session, player.email)
        if state is not None:
            found.append((player, state))
    return found


def describe(state: BounceState) -> str:
    """"since 2026-12-01 10:00 UTC: <reason>" for STATUS and the referee's mails."""
    return str(describe_said(state))


def describe_said(state: BounceState) -> Said:
    """``describe`` in its reader's language (the reason is the mail server's own)."""
    if not state.last_bounce_at:
        return state.last_reason
    return _("since {when}: {reason}", when=state.last_bounce_at.strftime("%Y-%m-%d %H:%M UTC"),
             reason=state.last_reason)


def hear(session: Work, post: Post, raw: bytes) -> str | None:
    """Act on ``raw`` if it is a bounce; returns the outcome, or None when it is no bounce."""
    bounce = read_bounce(raw, post.settings.address)
    if bounce is None:
        return None
    found = bounced_mail(session, bounce)
    if found is None:
        return (f"ignored: a bounce for {', '.join(sorted(bounce.addresses))}, "
                "naming no mail we sent")
    return bounced(session, post, found)


def undeliverable(session: Work, post: Post, row: OutboundMail,
                  failure: Undelivered) -> None:
    """The outbox gave up on a mail. A recipient its server refused (at RCPT or DATA) is a
    bounce, heard as a DSN of the mail is (``bounced``: the address marked, the referee
    told with the game, the seat and the REPLACE line); any other failure (our own server
    refused our sender, ...) is told to the referee as it is."""
    rcpts = [r.lower() for r in json.loads(row.rcpts_json)]
    refused = {r.lower(): why for r, why in failure.refused.items() if r.lower() in rcpts}
    for address, why in refused.items():
        outcome = bounced(session, post, BouncedMail(row, address, True, why, "smtp"))
        log.warning("%s", outcome)
    if not refused:
        tell_undeliverable(session, post, row, failure.why)


def bounced(session: Work, post: Post, found: BouncedMail) -> str:
    """A bounce of one of our mails, a DSN or our server's refusal: the address's
    BounceState is updated, the referee told when it is due; returns the outcome."""
    now = post.clock()
    state = state_of(session, found.address) or BounceState(address=found.address.lower())
    state.last_bounce_at = now
    state.last_reason = found.reason
    state.message_id = found.mail.message_id
    if found.mail.game_id is not None:
        state.game_id, state.seat = found.mail.game_id, found.mail.seat
    if found.permanent:
        state.failing = True
        state.hard_bounces += 1
        state.report_pending = found.mail.game_id is not None and found.mail.seat is not None
        due = True
    else:
        state.soft_bounces += 1
        limit = post.settings.soft_bounce_limit
        due = limit > 0 and state.soft_bounces >= limit
    told = due and _tell(session, post, state, found, now)
    session.add(state)
    game = session.get(Game, found.mail.game_id) if found.mail.game_id is not None else None
    what = "hard" if found.permanent else f"soft, {state.soft_bounces} in a row"
    where = (f", game {game.name} seat {found.mail.seat}" if game is not None and
             found.mail.seat is not None else "")
    how = "refused by its mail server" if found.via == "smtp" else f"matched by {found.via}"
    outcome = (f"bounce ({what}) of {found.mail.kind} mail {found.mail.message_id} to "
               f"{found.address}{where}, {how}"
               + ("; the referee was told" if told else ""))
    if game is not None:
        audit(session, game, now, "bounce", outcome)
    return outcome


def _tell(session: Work, post: Post, state: BounceState, found: BouncedMail,
          now: datetime) -> bool:
    """Tell the referee, at most once per address and UTC day (never of their own address,
    whose mail would bounce as well)."""
    if found.address == post.referee.lower():
        return False
    told = state.referee_told_at
    if told is not None and told.date() == now.date():
        return False
    state.referee_told_at = now
    game = session.get(Game, found.mail.game_id) if found.mail.game_id is not None else None
    player = None
    if game is not None:
        player = session.exec(select(Player).where(Player.game_id == game.id,
                                                   Player.email == found.address)).first()
    who: Said = found.address
    if game is not None and found.mail.seat is not None:
        who = (_("player {seat} of game {game}, {name} <{address}>", seat=found.mail.seat,
                 game=game.name, name=player.name, address=found.address)
               if player is not None else
               _("player {seat} of game {game} <{address}>", seat=found.mail.seat,
                 game=game.name, address=found.address))
    paragraphs: list[Said] = [_("Mail to {who} could not be delivered ({kind} mail of {when}): "
                                "{reason}", who=who, kind=found.mail.kind,
                                when=found.mail.created_at.strftime("%Y-%m-%d %H:%M UTC"),
                                reason=found.reason)]
    if found.permanent:
        paragraphs.append(_("The address is marked as failing: STATUS shows it, the next "
                            "report tells the players, and a missed turn says so. It is "
                            "cleared as soon as mail from the address arrives."))
    else:
        paragraphs.append(_n("{n} mail in a row to this address was delayed or refused for "
                             "now (soft bounces); the mail servers keep trying.",
                             "{n} mails in a row to this address were delayed or refused for "
                             "now (soft bounces); the mail servers keep trying.",
                             state.soft_bounces))
    if game is not None and found.mail.seat is not None:
        paragraphs.append(_("If the player has a new address: REPLACE {game} {seat} <new "
                            "email> [<name>]", game=game.name, seat=found.mail.seat))
    if game is not None:
        subject = tagged(game.name, _("mail to player {seat} bounced", seat=found.mail.seat)
                         if found.mail.seat is not None else
                         _("mail to {address} bounced", address=found.address))
    else:
        subject = (_("Mail to player {seat} bounced", seat=found.mail.seat)
                   if found.mail.seat is not None else
                   _("Mail to {address} bounced", address=found.address))
    tell_referee(session, post, subject, paragraphs)
    return True


_TO_CLEAR = select(BounceState.id).where(
    col(BounceState.address) == bindparam("address"), BOUNCE_TO_CLEAR)


def heard_from(session: Work, msg: InboundMessage) -> bool:
    """Mail came in from ``msg``'s sender: the address works, so its bounce state is
    cleared. True if there was something to clear. Whether there is, is read with the
    mail of ours it replies to (pbem.services.post.bounce_to_clear: one statement), or
    looked up."""
    address = msg.from_addr
    if address is None:
        return False
    to_clear = bounce_to_clear(session, msg)
    # a Core look first: almost every address has nothing to clear (or no state at all)
    if to_clear is None:
        to_clear = core_read(session, _TO_CLEAR, {"address": address.lower()}).first() is not None
    if not to_clear:
        return False
    state = state_of(session, address)   # the session's changes were flushed: it is there
    assert state is not None
    state.failing, state.soft_bounces, state.report_pending = False, 0, False
    session.add(state)
    return True


# a game with a bounce note for its next report (pbem.store.engines.core_read)
_NOTE_PENDING = select(BounceState.id).where(
    col(BounceState.game_id) == bindparam("game"), col(BounceState.report_pending).is_(True)
).limit(1)


def report_notes(session: Session, game: GameView) -> list[Said]:
    """The notes for the game's next report about mail that bounced since the last one
    (each said once)."""
    # a Core look first, by a statement built once: almost every turn has none
    if core_read(session, _NOTE_PENDING, {"game": game.id}).first() is None:
        return []
    states = session.exec(select(BounceState).where(BounceState.game_id == game.id,
                                                    col(BounceState.report_pending).is_(True))
                          .order_by(col(BounceState.seat))).all()
    notes: list[Said] = []
    for state in states:
        notes.append(_("Mail to player {seat} bounced: they may not have had the last "
                       "report. The referee has been told.", seat=state.seat))
        state.report_pending = False
        session.add(state)
    return notes
