"""Triage: what one stored mail is and what it asks, inside its transaction.

Is it automatic, too big, unreadable? From the referee or a player, and which
game does it speak to (``lane_of``, before it is claimed; sender_check.named_game)?
Its commands are run by the one table's runner (pbem.commands.registry: the
phases, the move, the turn it may complete), its answer composed
(pbem.services.post). ``handle`` is the entry: pbem.runner.referee calls it for each
claimed mail, in the transaction that marks the mail done.
"""

from __future__ import annotations

import dataclasses
import logging

from sqlmodel import Session

from pbem.commands import registry
from pbem.commands.context import CommandContext, Turnkey, refusal
from pbem.commands.registry import referee_commands, run
from pbem.config import Settings
from pbem.games.records import active_players
from pbem.games.states import load_state
from pbem.kinds import kind_of
from pbem.mail.read import MAX_LINE_CHARS, MAX_TEXT_LINES, InboundMessage, read_message
from pbem.mail.text import BodyLine
from pbem.orders.commands import Command, ParsedText
from pbem.orders.guidance import help_lines
from pbem.orders.parsing import parse_text
from pbem.orders.words import words_language
from pbem.runner import answer_limits, sender_check
from pbem.runner.lanes import NO_GAME, LaneRead
from pbem.runner.sender_check import find_game_or_none as find_game_or_none  # pbem.runner.referee's
from pbem.runner.sender_check import named_game as named_game  # lane_of's, and the tests'
from pbem.runner.storing import header_block
from pbem.services import bounces, failures
from pbem.services.post import Incoming, Post, answer, read_reply, tagged
from pbem.store import security
from pbem.store.bodies import HeldMail
from pbem.store.faults import fail_point
from pbem.store.rows import GameView
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import _, _n, plural

log = logging.getLogger(__name__)


def set_aside(session: Work, post: Post, row: HeldMail, deaths: int) -> None:
    """Quarantine a mail that killed the bounded processes that handled it ``deaths``
    times (pbem.runner.referee.suspect): it is kept unread, the referee is told
    (pbem.services.failures), its sender asked to send it again as plain text, the rest
    goes on (its game by its deadline)."""
    log.error("mail %s set aside: it killed %d bounded handlers", row.id, deaths)
    row.status = "quarantined"
    count = plural("{n} time", "{n} times", deaths)
    row.outcome = (f"set aside: it killed its handler {count}, each on its own (memory and "
                   "time bounded); the referee and its sender were told")
    assert row.id is not None
    failures.note(session, post, row.id, _n(
        "set aside unread: it killed the process that handled it on its own (bounded in "
        "memory and time) {n} time, while the server went on. Its sender was asked to send "
        "it again as plain text. {retry}",
        "set aside unread: it killed the process that handled it on its own (bounded in "
        "memory and time) {n} times, while the server went on. Its sender was asked to "
        "send it again as plain text. {retry}", deaths, retry=failures.retry_line(row.id)))
    answer_set_aside(session, post, row)


def answer_set_aside(session: Work, post: Post, row: HeldMail) -> None:
    """Tell the sender of a mail set aside that it could not be read (once, in their
    language, never to automatic mail); the header alone is read."""
    address = post.settings.address
    try:
        with session.savepoint():
            msg = read_message(header_block(row.raw), own_addresses=[address],
                               envelope_from=row.envelope_from)
            if msg.automatic or msg.from_addr is None or msg.from_addr == address.lower():
                return
            game = failures.game_of_mail(session, msg)
            answer_error(session, post, Incoming(row, msg), refusal(
                _("your mail could not be read: reading it stopped the server each time, "
                  "so it was set aside and nothing in it was applied"),
                _("please send your orders again as plain text"),
                game=game.name if game is not None else None))
            answer_limits.limit_answers(session, post, row, msg, "")
    except Exception:   # the answer is a courtesy: never let it lose the mail
        log.exception("could not answer mail %s, set aside", row.id)


def handle(session: Work, post: Post, row: HeldMail, *, draft_reports: bool = False) -> str:
    """Read one stored mail and act on it; returns its outcome (one line).
    ``draft_reports``: the turns it plays have their reports queued as drafts for the
    tick's composer (its hand-off says so: pbem.runner.mail_transaction), else made with
    the turn."""
    settings = post.settings
    msg = read_message(row.raw, own_addresses=[settings.address],
                       envelope_from=row.envelope_from)
    fail_point("inbound-read")
    if msg.automatic:   # never answered; a bounce of our mail is heard (services.bounces)
        heard = bounces.hear(session, post, row.raw)
        return heard or f"ignored: automatic mail ({msg.automatic})"
    if msg.from_addr is None:
        return f"ignored: {msg.sender_problem or 'no sender address'}"
    if msg.from_addr == settings.address.lower():
        return "ignored: from the server itself"
    mail = Incoming(row, msg)
    seen = Seen()
    proven = dropped = about_signup = False
    try:
        if msg.from_addr != settings.referee.lower():
            sender_check.check_aligned(session, post, row, msg)
        bounces.heard_from(session, msg)   # the address works again
        if row.truncated:
            raise refusal(_("your mail is larger than {size} bytes, so it was not read",
                            size=format(settings.max_mail_bytes, ",")),
                          _("send your orders as plain text, without attachments"))
        if not msg.readable:
            raise refusal(msg.problem or _("no text could be read from your mail"),
                          _("send your orders as plain text"))
        # a reply's new text ends where it quotes our mail (read_reply)
        mail = Incoming(row, within_limits(read_reply(session, msg)))
        if msg.from_addr == settings.referee.lower():
            outcome = referee_mail(session, post, mail, seen, draft_reports)
        else:
            outcome = player_mail(session, post, mail, seen, draft_reports)
    except Refusal as refused:
        if refused.auth_failed:
            dropped = answer_limits.auth_failed(session, post, msg.from_addr)
        answer_error(session, post, mail, refused)
        about_signup = refused.about_signup
        outcome = "refused: " + "; ".join(str(p.message) for p in refused.problems)
        proven = refused.sender_proven
    return answer_limits.limit_answers(session, post, row, mail.msg, outcome, proven=proven,
                                      game_mail=seen.game_mail, dropped=dropped,
                                      about_signup=about_signup)


@dataclasses.dataclass
class Seen:
    """What the handling of a mail found out about its sender: ``game_mail`` once it
    proved to be the referee's or a player's (the right key, a reply to their own report),
    so its answers are game answers (answer_limits.limit_answers holds back none)."""

    game_mail: bool = False


def lane_of(session: Work, post: Post, raw: bytes, envelope_from: str | None,
            truncated: bool) -> int:
    """The lane of a stored mail (pbem.runner.lanes): the game a player's mail speaks to, known
    before its orders are read (named_game, as its handling finds it), else NO_GAME
    (automatic mail, the referee's, a stranger's, a sign-up, one that cannot be read:
    its handling says why)."""
    return lanes_of(session, post, [LaneRead(0, raw, envelope_from, truncated)])[0]


def lanes_of(session: Work, post: Post, reads: list[LaneRead]) -> list[int]:
    """The lanes of stored mails, as lane_of finds each; the mails of ours they reply to
    are looked up together (one read for a page of mail, not one a mail)."""
    heads = [_player_mail(post, read, header=True) for read in reads]
    sents = iter(sender_check.replied_seats(session, [msg for msg in heads if msg is not None]))
    lanes = []
    for read, head in zip(reads, heads, strict=True):
        # a reply to our mail to a seat speaks to that mail's game, as named_game finds it:
        # its headers alone say so, so neither its text is read, nor the mail of ours it
        # quotes (the cut of the quote), nor the game loaded; the mail's handling does all
        # three (and refuses a text it cannot read, in that game's lane)
        sent = next(sents) if head is not None else None
        if head is None:
            lanes.append(NO_GAME)
        elif sent is not None and sent.game_id is not None and sent.seat is not None:
            lanes.append(int(sent.game_id))
        else:
            msg = _player_mail(post, read, header=False)
            lanes.append(_named_lane(session, msg) if msg is not None else NO_GAME)
    return lanes


def _player_mail(post: Post, read: LaneRead, *,
                 header: bool) -> InboundMessage | None:
    """A stored mail read as a player's may be (``header``: its header alone, which says
    whom it is from, whether it is automatic and what it replies to; else whole, its
    text readable); None for one that has no game's lane."""
    settings = post.settings
    try:
        msg = read_message(header_block(read.raw) if header else read.raw,
                           own_addresses=[settings.address], envelope_from=read.envelope_from)
    except Exception:   # noqa: BLE001 - its handling reads it again and says what is wrong
        return None
    if read.truncated or msg.automatic or msg.from_addr is None or \
            (not header and not msg.readable) or \
            msg.from_addr in (settings.address.lower(), settings.referee.lower()):
        return None
    return msg


def _named_lane(session: Work, msg: InboundMessage) -> int:
    """The lane of a mail that replies to no mail of ours to a seat: the game it names."""
    try:
        game = named_game(session, within_limits(read_reply(session, msg)))
    except Exception:   # noqa: BLE001 - its handling reads it again and says what is wrong
        return NO_GAME
    return game.id if game is not None and game.id is not None else NO_GAME


def within_limits(msg: InboundMessage) -> InboundMessage:
    """At most MAX_TEXT_LINES lines of new text are read, each cut to MAX_LINE_CHARS."""
    if len(msg.lines) > MAX_TEXT_LINES:
        raise refusal(_("your mail has {lines} lines of new text; at most {most} are read",
                        lines=format(len(msg.lines), ","), most=MAX_TEXT_LINES),
                      _("send your orders in a short mail (the quoted text of a reply does "
                        "not count)"))
    if all(len(line.text) <= MAX_LINE_CHARS for line in msg.lines):
        return msg
    lines = [line if len(line.text) <= MAX_LINE_CHARS else
             BodyLine(line.number, line.text[:MAX_LINE_CHARS] + " [...]")
             for line in msg.lines]
    return dataclasses.replace(msg, lines=lines)


# --- dispatch -----------------------------------------------------------------------------

def player_mail(session: Work, post: Post, mail: Incoming, seen: Seen,
                draft_reports: bool = False) -> str:
    """A player's mail: read once (sender_check.read_player_mail: its game, its orders, who
    sends it), then run by the one table's runner (pbem.commands.registry.player_mail:
    desk commands, a move order and the turn it may complete, or the answer HELP / STATUS
    give), which queues its one answer."""
    parsed, who = sender_check.read_player_mail(session, post, mail.msg)
    seen.game_mail = who is not None
    if parsed.problems:
        raise Refusal.of(parsed.problems, game=who.game.name if who else None)
    # one answer a mail: the commands' answers are held and sent together at the end
    ctx = CommandContext(session, post, post.clock(), mail, who, parsed.orders, parts=[],
                         language=reader_language(session, post, mail.msg, who, parsed),
                         draft_reports=draft_reports)
    return registry.player_mail(ctx, parsed, who)


def referee_mail(session: Work, post: Post, mail: Incoming, seen: Seen,
                 draft_reports: bool = False) -> str:
    """The referee's mail: KEY <referee key>, then referee commands, all or none."""
    settings = post.settings
    parsed = parse_text(mail.msg.lines, referee_commands())
    key = parsed.first("KEY")
    if key is None:
        raise refusal(_("referee commands need the line KEY <referee key>"),
                      _("add the referee key from pbem.toml on a line of its own"))
    if not security.referee_key_matches(str(key.args), key=settings.referee_key,
                                        key_sha256=settings.referee_key_sha256):
        raise sender_check.auth_refusal(refusal(
            _("referee commands need the line KEY <referee key>, with the right key"),
            _("add the referee key from pbem.toml on a line of its own"), key.line_no,
            "KEY ****"))
    seen.game_mail = True
    if parsed.problems:
        raise Refusal.of(parsed.problems)
    ctx = CommandContext(session, post, post.clock(), mail, None, parsed.orders,
                         by_referee=True, language=settings.referee_language,
                         draft_reports=draft_reports)
    try:
        with session.savepoint():   # all the commands of a mail, or none of them
            out = run(ctx, parsed.orders)
    except Refusal as refused:
        first = refused.problems[0]
        refused.problems[0] = dataclasses.replace(
            first, message=_("{message}; nothing in this mail was done",
                             message=first.message),
            hint=first.hint or _("fix that line and send the commands again"))
        raise
    done = _("Referee commands done")
    answer(session, post, mail, "notice", done,
           {"subject": done, "paragraphs": out, "game": None},
           language=settings.referee_language)
    return "referee commands: " + "; ".join(out)[:500]


# --- answers ------------------------------------------------------------------------------

def reader_language(session: Session, post: Post, msg: InboundMessage,
                    who: Turnkey | None = None, parsed: ParsedText | None = None,
                    game: GameView | None = None) -> str:
    """The language a mail is answered in (the one rule, Post.reader_of): about the game
    of a known player (``who``) or ``game``, the language they read it in; about no game,
    the language of the mail's order words (all English: English), else the address's."""
    sender = (msg.from_addr or "").lower()
    if who is not None:
        return post.language_of(session, sender, who.game, player=who.player,
                                chosen=who.player.chosen)
    if parsed is not None:
        written = parsed.language or ("en" if parsed.orders else None)
    else:
        written = words_language(line.text for line in msg.lines)
    return post.language_of(session, sender, game, written=written)


def answer_error(session: Work, post: Post, mail: Incoming, refused: Refusal) -> None:
    """A short error: each line at fault, what is wrong and the fix; then only the orders
    of that game's kind the sender may write now; HELP for everything else."""
    game = (find_game_or_none(session, refused.game) if refused.game
            else named_game(session, mail.msg))
    language = reader_language(session, post, mail.msg, game=game)
    context = {"problems": [p.__dict__ for p in refused.problems], "game": refused.game,
               "help_lines": help_lines(orders_now(session, game, mail.sender), language),
               "closed": game.status if game is not None and game.status in (
                   "over", "cancelled") else None}
    subject = (tagged(game.name, _("your mail: nothing was applied")) if game is not None
               else _("Your mail to the Bluff referee: nothing was applied"))
    answer(session, post, mail, "error", subject, context, language=language,
           game_id=game.id if game is not None else None)


def orders_now(session: Work, game: GameView | None, sender: str) -> list[Command]:
    """The move orders of the game's kind the sender (a player due now) may write."""
    if game is None or game.status != "running":
        return []
    seat = next((p.seat for p in active_players(session, game) if p.email == sender), None)
    if seat is None:
        return []
    kind = kind_of(game)
    names = kind.orders_now(load_state(session, game), seat)
    return [c for c in kind.commands if c.name in names]


def readable(row: HeldMail, settings: Settings) -> InboundMessage | None:
    """The stored mail as read, for the notice of its failure (None if even that fails)."""
    try:
        return read_message(row.raw, own_addresses=[settings.address],
                            envelope_from=row.envelope_from)
    except Exception:   # the notice must go out whatever is wrong with the mail
        log.exception("mail %s cannot be read for its failure notice", row.id)
        return None


def answer_internal_error(session: Work, post: Post, row: HeldMail) -> None:
    """Tell the sender of a mail that failed on our side (once, never to automatic mail)."""
    address = post.settings.address
    try:
        msg = read_message(row.raw, own_addresses=[address], envelope_from=row.envelope_from)
        if msg.automatic or msg.from_addr is None or msg.from_addr == address.lower():
            return
        game = failures.game_of_mail(session, msg)   # its subject is tagged with the game
        answer_error(session, post, Incoming(row, msg), refusal(
            _("something went wrong on our side while reading your mail; nothing in it was "
              "applied"), _("the referee has been told and will look into it"),
            game=game.name if game is not None else None))
        answer_limits.limit_answers(session, post, row, msg, "")
    except Exception:   # the answer is a courtesy: never let it lose the mail
        log.exception("could not answer mail %s after its internal error", row.id)

