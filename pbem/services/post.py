"""Mail the server writes: answers to a mail, notices, the referee's notices.

Everything goes through the outbox (pbem.outbox.enqueue) in the caller's
transaction. A ``Post`` carries what writing mail needs: the settings (the
server's and the referee's addresses), the templates and the clock; it is
made once by the runner and handed down explicitly.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, literal, update
from sqlalchemy import select as select_columns  # sqlmodel's select takes at most 4
from sqlmodel import Session, col, select

from pbem.config import Settings
from pbem.games.audit import audit
from pbem.games.records import active_players
from pbem.kinds.options import GameOptions, options_of
from pbem.mail.newtext import QUOTE
from pbem.mail.quotecut import reply_text
from pbem.mail.read import InboundMessage
from pbem.mail.sent import sent_texts
from pbem.outbox import BUDGET_NOTICE, Origin, Queued, Shortfall, enqueue
from pbem.render.reports import Renderer, html_part, text_part
from pbem.store.bodies import HeldMail
from pbem.store.driver import Hot, unindexed
from pbem.store.engines import core_read
from pbem.store.models import BounceState, Game, OutboundBody, OutboundMail, Player
from pbem.store.rows import GameView, PlayerView
from pbem.store.work import Work
from pbem.text.i18n import answer_language
from pbem.text.wording import Message, Said, _, _n

# the From name of every mail, in its reader's language (the body signs the same way)
SENDER_NAME = _("Bluff referee")


def tagged(game: str, text: Said) -> Message:
    """The subject of a mail about a game: "[bluff <game>] <text>" (the one place it is
    made); the tag is the same in every language, the text is said in the reader's."""
    return Message("[bluff {game}] {text}", (("game", game), ("text", text)))


# what the language and zone of mail to an address are read from (Post.reader_of): its
# players' choices and their games' options, newest first; a Core read built once
_READER_ROWS = (select(Player.game_id, Player.timezone, Player.language, Game.options_json)
                .join(Game, col(Game.id) == col(Player.game_id))
                .where(col(Player.email) == bindparam("address"))
                .order_by(col(Player.id).desc()).limit(50))


@dataclass
class Post:
    """Who the server is as a sender, its templates and its clock."""

    settings: Settings
    renderer: Renderer
    clock: Callable[[], datetime]
    origin: Origin = field(init=False)

    def __post_init__(self) -> None:
        smtp = self.settings.smtp
        self.origin = Origin(self.settings.address, verp=smtp is not None and smtp.verp)

    @property
    def referee(self) -> str:
        """The referee's address."""
        return self.settings.referee

    def subject(self, subject: Said, language: str, zone: str | None = None) -> str:
        """A subject line in its reader's language (and zone)."""
        return str(self.renderer.say(subject, language, zone))

    def language_of(self, session: Session, address: str, game: GameView | None = None, *,
                    player: PlayerView | None = None, written: str | None = None,
                    options: GameOptions | None = None,
                    chosen: tuple[str | None, str | None] | None = None) -> str:
        """The language mail to ``address`` is written in (reader_of)."""
        return self.reader_of(session, address, game, player=player, written=written,
                              options=options, chosen=chosen)[0]

    def reader_of(self, session: Session, address: str, game: GameView | None = None, *,
                  player: PlayerView | None = None, written: str | None = None,
                  options: GameOptions | None = None,
                  chosen: tuple[str | None, str | None] | None = None) -> tuple[str, str | None]:
        """How mail to ``address`` is written: (language, time zone). Every mail's
        language is decided here, by pbem.text.i18n.answer_language: the referee's own; about
        ``game``, the language the address reads that game in (``player``: its seat
        there, if the caller has it); about no game, the language of the mail's words
        (``written``), else the address's own. The zone is the address's TIMEZONE.
        ``options``: the game's, and ``chosen``: (language, zone) the address chose in any
        game (pbem.store.rows.PlayerRow.chosen), if the caller has them."""
        if address.lower() == self.referee.lower():
            return self.settings.referee_language, None
        if game is not None and player is not None and chosen is not None:
            # what the address chose anywhere came with its player's row
            # (pbem.store.rows.PlayerRow.chosen): nothing to read
            return (answer_language(game=(options or options_of(game)).language,
                                    own=player.language, chosen=chosen[0],
                                    default=self.settings.language),
                    player.timezone or chosen[1])
        rows = core_read(session, _READER_ROWS, {"address": address.lower()}).all()
        own: Any = player   # the address's player in ``game`` (a Player, or a row of one)
        if own is None and game is not None:
            own = next((r for r in rows if r.game_id == game.id), None)
        zone = (own.timezone if own is not None and own.timezone
                else next((r.timezone for r in rows if r.timezone), None))
        if game is not None and options is None:
            options = options_of(game)
        latest = rows[0] if rows else None   # the game the address joined last
        language = answer_language(
            game=options.language if options is not None else None,
            own=own.language if own is not None else None,
            chosen=next((r.language for r in rows if r.language), None),
            written=written,
            plays_in=None if latest is None else (
                options.language if options is not None and game is not None
                and latest.game_id == game.id else options_of(latest).language),
            default=self.settings.language)
        return language, zone

    def origin_in(self, language: str) -> Origin:
        """The server as the sender of a mail in ``language``: its From name said there."""
        return Origin(self.origin.address,
                      str(self.renderer.say(SENDER_NAME, language)), self.origin.verp)


@dataclass(frozen=True)
class Incoming:
    """The mail being answered: its stored row and what was read from it."""

    row: HeldMail
    msg: InboundMessage

    @property
    def sender(self) -> str:
        assert self.msg.from_addr is not None
        return self.msg.from_addr


def answer(session: Work, post: Post, mail: Incoming, template: str, subject: Said,
           context: dict[str, Any], *, language: str, zone: str | None = None,
           game_id: int | None = None, seat: int | None = None, turn: int | None = None,
           attachments: Sequence[tuple[str, str, bytes]] = ()) -> Queued:
    """Answer the sender of a mail in ``language`` (their times in ``zone``), threaded to
    it (In-Reply-To, References)."""
    text, html = post.renderer.render(template, context, language, zone)
    return _reply(session, post, mail, template, post.subject(subject, language, zone), text,
                  html, language=language, game_id=game_id, seat=seat, turn=turn,
                  attachments=attachments)


def _reply(session: Work, post: Post, mail: Incoming, kind: str, subject: str, text: str,
           html: str, *, language: str, game_id: int | None, seat: int | None, turn: int | None,
           attachments: Sequence[tuple[str, str, bytes]] = ()) -> Queued:
    msg = mail.msg
    return enqueue(session, post.origin_in(language), kind=kind, to=mail.sender, subject=subject,
                   text=text, html=html, now=post.clock(), in_reply_to=msg.message_id,
                   references=([*msg.references, msg.message_id] if msg.message_id
                               else msg.references),
                   game_id=game_id, seat=seat, turn=turn, inbound_id=mail.row.id,
                   attachments=attachments, auto_submitted="auto-replied",
                   shipped_html=post.renderer.shipped_only)


@dataclass(frozen=True)
class AnswerPart:
    """What one command of a mail answers, held until the whole mail is done."""

    line_no: int
    template: str
    subject: Said
    context: dict[str, Any]
    attachments: tuple[tuple[str, str, bytes], ...] = ()


def answer_parts(session: Work, post: Post, mail: Incoming, parts: Sequence[AnswerPart],
                 *, language: str, zone: str | None = None, game: str | None,
                 game_id: int | None = None, seat: int | None = None,
                 turn: int | None = None) -> Queued | None:
    """One answer to a mail, however many of its lines asked for one: a single part goes as
    its own answer, several as one mail with each part in the order of the mail's lines."""
    ordered = sorted(parts, key=lambda p: p.line_no)
    if not ordered:
        return None
    if len(ordered) == 1:
        p = ordered[0]
        return answer(session, post, mail, p.template, p.subject, p.context,
                      language=language, zone=zone, game_id=game_id, seat=seat, turn=turn,
                      attachments=p.attachments)
    rendered = [post.renderer.render(p.template, p.context, language, zone) for p in ordered]
    prefix = post.subject(tagged(game, ""), language) if game else ""
    what = "; ".join(post.subject(p.subject, language, zone).removeprefix(prefix)
                     for p in ordered)
    subject = post.subject(tagged(game, _("your mail: {what}", what=what)) if game
                           else _("Your mail: {what}", what=what), language)
    context = {"subject": subject, "game": game,
               "parts": [{"text": text_part(t), "html": html_part(h)} for t, h in rendered]}
    text, html = post.renderer.render("combined", context, language)
    return _reply(session, post, mail, "combined", subject, text, html, language=language,
                  game_id=game_id,
                  seat=seat, turn=turn,
                  attachments=[a for p in ordered for a in p.attachments])


def notice(session: Work, post: Post, to: str, subject: Said, paragraphs: Sequence[Said],
           now: datetime, *, language: str | None = None, zone: str | None = None,
           game: GameView | None = None, seat: int | None = None, turn: int | None = None,
           kind: str = "notice") -> Queued:
    """One notice mail (the "notice" template) to one address, in ``language`` and
    ``zone`` (language None: the address's own, Post.reader_of)."""
    if language is None:
        language, zone = post.reader_of(session, to, game)
    said = post.subject(subject, language, zone)
    context = {"subject": said, "paragraphs": list(paragraphs),
               "game": game.name if game is not None else None}
    text, html = post.renderer.render("notice", context, language, zone)
    return enqueue(session, post.origin_in(language), kind=kind, to=to, subject=said, text=text,
                   html=html, now=now, game_id=game.id if game is not None else None,
                   seat=seat, turn=turn, shipped_html=post.renderer.shipped_only)


def announce(session: Work, post: Post, game: GameView, subject: Said,
             paragraphs: Sequence[Said], now: datetime, *, action: str, actor: str = "server",
             players: Sequence[PlayerView] | None = None) -> int:
    """A notice to each of the game's active players (or to `players`), and an audit entry.

    The notice carries the game, seat and turn, so a reply to it is read like
    a reply to the player's report.
    """
    recipients = active_players(session, game) if players is None else players
    full = tagged(game.name, subject)
    for player in recipients:
        language, zone = post.reader_of(session, player.email, game, player=player)
        notice(session, post, player.email, full, paragraphs, now,
               language=language, zone=zone, game=game,
               seat=player.seat, turn=game.turn if player.seat is not None else None)
    audit(session, game, now, action, " ".join(str(p) for p in paragraphs), actor=actor)
    return len(recipients)


def tell_referee(session: Work, post: Post, subject: Said,
                 paragraphs: Sequence[Said]) -> None:
    """A notice to the referee's address, in the referee's language."""
    notice(session, post, post.referee, subject, paragraphs, post.clock(),
           language=post.settings.referee_language)


def undeliverable(session: Work, post: Post, row: OutboundMail, why: str) -> None:
    """The outbox gave up on a mail: tell the referee (unless that mail was to them)."""
    if post.referee in row.rcpts_json:
        return
    tell_referee(session, post, _("A mail could not be delivered"),
                 [_("Mail {id} ({kind}) to {to} could not be delivered: {why}",
                    id=row.message_id, kind=row.kind,
                    to=", ".join(json.loads(row.rcpts_json)), why=why)])


def budget_short(session: Work, post: Post, short: Shortfall) -> None:
    """The send budget will take too long for the mail due: tell the referee (a notice
    of kind BUDGET_NOTICE, which the outbox asks for so as to tell it once a day)."""
    paragraphs: list[Said] = [_n(
        "{n} mail is waiting to be sent, more than the send budget ([smtp] per_minute = "
        "{per_minute}, per_day = {per_day}) lets go soon.",
        "{n} mails are waiting to be sent, more than the send budget ([smtp] per_minute = "
        "{per_minute}, per_day = {per_day}) lets go soon.", short.due,
        per_minute=short.budget.per_minute, per_day=short.budget.per_day)]
    if short.left_today is not None and short.due > short.left_today:
        paragraphs.append(_n("Today's budget has {n} mail left: the rest waits until tomorrow.",
                             "Today's budget has {n} mails left: the rest waits until "
                             "tomorrow.", short.left_today))
    if short.minutes:
        paragraphs.append(_n("At {per_minute} mails a minute they take {n} minute.",
                             "At {per_minute} mails a minute they take {n} minutes.",
                             short.minutes, per_minute=short.budget.per_minute))
    paragraphs.append(_("The most urgent mail (answers, reports) goes first. If this "
                        "happens often, raise the budget if your provider allows it, or "
                        "use a mail service meant for more mail."))
    notice(session, post, post.referee, _("Outgoing mail is held back by the send budget"),
           paragraphs, post.clock(), language=post.settings.referee_language,
           kind=BUDGET_NOTICE)


# our mails of a game's turn that have not left yet, but for its reports
_READ_IN_TURN = update(OutboundMail).where(
    col(OutboundMail.game_id) == bindparam("game"), col(OutboundMail.turn) == bindparam("was"),
    unindexed(col(OutboundMail.status)) == "pending", col(OutboundMail.kind) != "report",
).values(turn=bindparam("now"))   # by the game's index, not every pending mail's


def read_in_turn(session: Session, game: GameView, was: int) -> None:
    """Turn ``was`` of ``game`` is over and the game is at the next: our mails of turn
    ``was`` that have not left yet (the table talk of the mail that ended it, a reminder
    held up) are read in the turn now, and carry it, as every mail queued from now on
    does: a reply to one with an order counts for this turn (pbem.runner.sender_check). A report
    keeps its turn: it shows that turn's state, and an order in reply to it is stale."""
    session.connection().execute(_READ_IN_TURN, {"game": game.id, "was": was,
                                                 "now": game.turn})


def replied_to(session: Session, msg: InboundMessage, *where: Any) -> OutboundMail | None:
    """The newest mail of ours that ``msg`` replies to (In-Reply-To or References),
    among those matching ``where``."""
    refs = replied_ids(msg)
    if not refs:
        return None
    return session.exec(select(OutboundMail).where(col(OutboundMail.message_id).in_(refs), *where)
                        .order_by(col(OutboundMail.id).desc())).first()


# an address whose bounce state a mail from it clears (pbem.services.bounces.heard_from):
# failing, soft bounces counted, or a note for the next report pending
BOUNCE_TO_CLEAR = (col(BounceState.failing) | (col(BounceState.soft_bounces) > 0) |
                   col(BounceState.report_pending))
_BOUNCE_TO_CLEAR = select(BounceState.id).where(
    col(BounceState.address) == bindparam("address"), BOUNCE_TO_CLEAR).limit(1)
# the newest mail of ours a mail replies to (as replied_to finds it; a Core read built
# once), and in the same statement whether its sender's bounce state is to be cleared:
# one row always (the mail's columns None when none is found)
_ANCHOR = select_columns(literal(1).label("one")).subquery()
_REPLIED_MAIL = Hot(select_columns(*(getattr(OutboundMail, name) for name in (
                     "id", "kind")), col(OutboundBody.raw),
                        *(getattr(OutboundMail, name) for name in ("game_id", "seat", "turn")),
                        _BOUNCE_TO_CLEAR.scalar_subquery().label("bounce"))
                 .select_from(_ANCHOR.outerjoin(OutboundMail, col(OutboundMail.message_id).in_(
                     bindparam("refs", expanding=True))).outerjoin(
                     OutboundBody, col(OutboundBody.mail_id) == col(OutboundMail.id)))
                 .order_by(col(OutboundMail.id).desc()).limit(1), lists=["refs"])


def replied_mail(session: Work, msg: InboundMessage) -> Any | None:
    """The newest mail of ours that ``msg`` replies to (In-Reply-To or References), as a
    row of its id, kind, raw, game_id, seat and turn; None if none. Read once a
    transaction (its memo, under "replied"): the cut of the quote (read_reply) and who
    sends the mail (pbem.runner.sender_check.replied_seat) both ask. The same statement
    reads whether the sender's bounce state is to be cleared (bounce_to_clear)."""
    refs = replied_ids(msg)
    if not refs:
        return None
    address = (msg.from_addr or "").lower()
    key = ("replied", address, *refs)
    memo = session.memo
    if key not in memo:
        session.flush()   # what is pending first, as a read through the ORM would
        row = _REPLIED_MAIL(session.connection(), {"refs": refs, "address": address}).one()
        memo[("bounce", address)] = row.bounce is not None
        memo[key] = row if row.id is not None else None
    return memo[key]


def bounce_to_clear(session: Work, msg: InboundMessage) -> bool | None:
    """Whether the bounce state of ``msg``'s sender is to be cleared, as read with the mail
    it replies to (replied_mail); None when it replies to none (not read: the caller
    looks itself). Taken once: a later ask reads again."""
    if msg.from_addr is None or not replied_ids(msg):
        return None
    replied_mail(session, msg)
    known = session.memo.pop(("bounce", msg.from_addr.lower()), None)
    return None if known is None else bool(known)

# what a confirmation says of the mail of ours that a reply quoted, by its kind
_QUOTED_KIND = {"report": _("the quoted report below your text"),
                "confirm": _("the quoted confirmation below your text"),
                "error": _("the quoted answer below your text"),
                "help": _("the quoted help below your text"),
                "notice": _("the quoted notice below your text")}


def read_reply(session: Work, msg: InboundMessage) -> InboundMessage:
    """``msg`` with its new text cut where it quotes the mail of ours it replies to
    (pbem.mail.quotecut: our words, whatever quote header the client wrote above them);
    ``msg`` itself when it quotes none (the quote header rules of pbem.mail.newtext)."""
    if not msg.text:
        return msg
    ours = replied_mail(session, msg)
    if ours is None:
        return msg
    found = reply_text(msg.text, sent_texts(ours.raw))   # HTML rendered only if needed
    if found is None:
        return msg
    quoted = _QUOTED_KIND.get(ours.kind, _("the quoted mail below your text"))
    return dataclasses.replace(msg, lines=found.lines, ignored=tuple(
        quoted if part == QUOTE else part for part in found.ignored))


def replied_ids(msg: InboundMessage) -> list[str]:
    """The Message-IDs ``msg`` replies to (In-Reply-To, then References)."""
    return [r for r in [msg.in_reply_to, *msg.references] if r]
