"""The referee: one stored inbound mail becomes one database transaction.

Reading, authorising, checking and recording an order, the answer to the
sender and (when the mail completes a turn) the turn's reports are committed
together or not at all. The mail's row is marked done in that same
transaction, so a crash before the commit leaves it to be handled again and
a crash after it leaves nothing to redo.

The runner: it triages a stored mail (automatic? too big? from the referee
or a player? who?) and dispatches its commands through the one table
(pbem.commands.registry). What a command does lives in pbem.commands; what
it shares with the clock (turns, mail) in pbem.services.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from pbem import inbox, security, sender_check
from pbem.claims import Lease, Waits
from pbem.commands.context import CommandContext, Turnkey, refusal
from pbem.commands.moves import take_moves
from pbem.commands.registry import (
    move_names,
    permitted,
    player_commands,
    referee_commands,
    run,
)
from pbem.config import Settings
from pbem.db import lanes_apart, one_writer, sender_writer, transient_error
from pbem.errors import Refusal
from pbem.faults import crash_point, fail_point
from pbem.games import active_players, find_game, load_state, reading_of_address
from pbem.kinds import kind_of
from pbem.mail.read import MAX_LINE_CHARS, MAX_TEXT_LINES, InboundMessage, read_message
from pbem.mail.text import BodyLine
from pbem.models import Game, InboundMail, OutboundMail
from pbem.options import language_of
from pbem.order_words import words_language
from pbem.orders import MAIL_LINES, Command, Order, ParsedText, help_lines, parse_text
from pbem.render import Renderer
from pbem.services import bounces, clock, failures, turns
from pbem.services.failures import game_failed, mail_failed, what_failed
from pbem.services.post import Incoming, Post, answer, read_reply, tagged, undeliverable
from pbem.wording import _, _n, plural
from pbem.work import HandOff, Work, savepoint

log = logging.getLogger(__name__)

# Marks a tick's parts for whoever times them (bench/tick_phases.py): called with a tag
# as each part begins ("fetch>", "mail>", "clock>", "close>") and ends ("...<").
Marks = Callable[[str], None]


def unmarked(tag: str) -> None:
    """The marks of a tick nobody times."""


LOCK_WAIT_NOTED = 0.01   # a mail's locks took this long (seconds): a wait, told to Waits


@dataclass
class Referee:
    """Handles stored mail, runs the clock work and referee commands from the shell."""

    settings: Settings
    engine: Engine
    renderer: Renderer
    clock: Callable[[], datetime]
    post: Post = field(init=False)

    def __post_init__(self) -> None:
        self.post = Post(self.settings, self.renderer, self.clock)

    def store_inbound(self, raw: bytes, *, source: str, envelope_from: str | None = None,
                      imap_key: str | None = None, truncated: bool = False,
                      size: int | None = None) -> bool:
        """Keep the raw mail (pbem.inbox.store_inbound); False if seen before."""
        return inbox.store_inbound(self.engine, raw, now=self.clock(),
                                   max_bytes=self.settings.max_mail_bytes, source=source,
                                   envelope_from=envelope_from, imap_key=imap_key,
                                   truncated=truncated, size=size)

    def store_many(self, mails: list[tuple[bytes, str, bool, int]], *, source: str) -> int:
        """Keep a batch of fetched mails in one transaction (pbem.inbox.store_many)."""
        return inbox.store_many(self.engine, mails, now=self.clock(),
                                max_bytes=self.settings.max_mail_bytes, source=source)

    def process_pending(self, keep_alive: Callable[[], object] | None = None,
                        hand_off: HandOff | None = None, marks: Marks = unmarked,
                        waits: Waits | None = None) -> int:
        """Handle every stored mail not handled yet, oldest first; return how many.

        Mail is claimed a page at a time (pbem.inbox.claim_page: one commit), then each
        mail is handled in its own transaction. ``keep_alive`` is called after a mail
        once a tenth of the lease (at most 5 s) has passed since the last call (the tick
        renews its lease with it). With a ``hand_off`` (pbem.outbox.Stream), the mail each
        transaction queued is sent as soon as it commits. ``marks`` is told as each mail's
        handling begins ("mail>") and ends ("mail<"). On PostgreSQL the mail is handled a
        game's lane at a time, beside other workers (process_lanes); ``waits`` hears what
        that waited for or left to another worker.
        """
        if lanes_apart(self.engine):
            handled = self.process_lanes(hand_off, marks, waits or Waits())
        else:
            handled = self.process_pages(keep_alive, hand_off, marks)
        with Session(self.engine) as session:   # failures held back an hour, told together
            if failures.flush(session, self.post):
                session.commit()
        return handled

    def process_pages(self, keep_alive: Callable[[], object] | None, hand_off: HandOff | None,
                      marks: Marks) -> int:
        """process_pending one writer at a time (SQLite; under the tick's referee lease):
        the stored mail in pages, oldest first."""
        handled = 0
        lease = timedelta(seconds=self.settings.claim_lease_seconds)
        # the lease is renewed every few seconds, not after each mail (a commit each)
        renew_every = min(5.0, self.settings.claim_lease_seconds / 10)
        renew_at = time.monotonic() + renew_every
        upto = inbox.newest_id(self.engine)   # mail stored meanwhile waits for the next tick
        after = 0
        while upto:
            page, after = inbox.claim_page(self.engine, self.clock(), lease, after=after,
                                           upto=upto)
            if not after:
                break
            for number, inbound_id in enumerate(page):
                following = page[number + 1] if number + 1 < len(page) else None
                marks("mail>")
                if self.handle_claimed(inbound_id, following, hand_off):
                    handled += 1
                marks("mail<")
                if keep_alive is not None and time.monotonic() >= renew_at:
                    keep_alive()
                    renew_at = time.monotonic() + renew_every
            if after >= upto:   # this page reached the newest: no read to learn so
                break
        return handled

    def process_lanes(self, hand_off: HandOff | None, marks: Marks, waits: Waits) -> int:
        """process_pending beside other workers (PostgreSQL): each stored mail is given
        its lane (route: its game), then the lanes are claimed one at a time, the one
        whose oldest mail came first first (pbem.inbox.claim_lane); a lane another worker
        holds is left to it (told to ``waits``). Each mail's transaction takes its game's
        lock, beside other games' (pbem.db.game_writer); mail of no game the one
        writer's.

        A pass gives mail its lanes (route: the workers take turns, a page each, so none
        waits for another to read a whole burst), then takes the lanes free.
        Each pass looks for the newest mail again while the tick is younger than a tick's
        interval (mail another worker is fetching, or a listener took in, is taken as it
        is stored); mail stored later waits for the next tick, so the clock and the
        outbox get their turn. Until a pass had no mail to give a lane and no lane to
        take."""
        handled = 0
        lease = timedelta(seconds=self.settings.claim_lease_seconds)
        fresh_until = time.monotonic() + self.settings.tick_seconds
        upto = 0
        while True:
            if not upto or time.monotonic() < fresh_until:
                upto = inbox.newest_id(self.engine)
            if not upto:
                break
            routed = self.route(upto)
            took = False
            for lane in inbox.waiting_lanes(self.engine, upto):
                page, holder = inbox.claim_lane(self.engine, self.clock(), lease, lane,
                                                upto=upto)
                if not page:
                    if holder is not None:
                        waits.add("left lanes to other workers", 0.0, holder)
                    continue
                took = True
                for number, inbound_id in enumerate(page):
                    following = page[number + 1] if number + 1 < len(page) else None
                    marks("mail>")
                    if self.handle_claimed(inbound_id, following, hand_off, lane=lane,
                                           waits=waits):
                        handled += 1
                    marks("mail<")
            if not took and not routed:
                break
        return handled

    def route(self, upto: int) -> int:
        """Give stored mail up to id ``upto`` without a lane its lane (lane_of), a page a
        commit: the first page after the worker giving lanes now, if one is, the next
        ones while no other worker is at it (one that is takes its turn, and this one
        goes to handle the lanes given so far); how many were given."""
        def lane(session: Session, read: inbox.LaneRead) -> int:
            return lane_of(session, self.post, read.raw, read.envelope_from, read.truncated)
        given = inbox.give_lanes(self.engine, upto, lane, wait=True) or 0
        total = given
        while given == inbox.PAGE:
            given = inbox.give_lanes(self.engine, upto, lane) or 0
            total += given
        return total

    def handle_claimed(self, inbound_id: int, following: int | None,
                       hand_off: HandOff | None = None, *, lane: int | None = None,
                       waits: Waits | None = None) -> bool:
        """Handle one claimed mail in one transaction; False if it was not ours to handle.

        The mail was claimed (a lease in its row, committed), so other processes
        leave it alone. The transaction that handles it begins with a write that
        re-checks the claim and that the mail is still new: that takes SQLite's write
        lock (PostgreSQL: the row's lock and the referee's advisory lock), so what the
        transaction reads is current, and of two processes that both got this far the
        second finds the mail done. A database that is locked or gone raises
        OperationalError and leaves the mail new for the next tick. The commit that
        ends the mail also counts the attempt of the ``following`` mail of the page,
        which begins next (pbem.inbox.count_attempt). The mail the transaction queued goes
        to the ``hand_off`` once it is committed (pbem.work.Work.commit, hand_over).
        A mail of a game's ``lane`` (process_lanes) takes that game's lock and its
        sender's instead of the one writer's; a wait for them is told to ``waits``.
        """
        with Work(self.engine, hand_off=hand_off) as session:
            row = self.hold(session, inbound_id, lane, waits)
            if row is None:
                session.rollback()
                if following is not None:   # its attempt is counted on its own then
                    inbox.count_attempt(session, following)
                    session.commit()
                return False
            if inbox.cut_short(row) >= inbox.MAX_CUT_SHORT:
                set_aside(session, self.post, row)
            else:
                try:
                    row.outcome = handle(session, self.post, row)
                    row.status = "done"
                except Exception as exc:
                    if isinstance(exc, OperationalError) and transient_error(exc):
                        session.rollback()
                        inbox.give_back_attempt(self.engine, inbound_id)   # an outage: not held
                        raise   # the mail stays new for the next tick
                    # a bug must not lose the mail nor stop the server: keep it, mark it failed
                    log.exception("mail %s could not be handled", inbound_id)
                    session.rollback()
                    row = self.hold(session, inbound_id, lane, waits) or \
                        inbox.read_held(session, inbound_id)
                    row.status = "failed"
                    row.outcome = "internal error; the referee was told"
                    # the referee hears what failed, the mail and its game; the players
                    # of the game that their turn is delayed
                    mail_failed(session, self.post, row, readable(row, self.settings), exc)
                    answer_internal_error(session, self.post, row)
            row.processed_at = self.clock()
            inbox.finish(session, row)
            if following is not None:
                inbox.count_attempt(session, following)
            session.flush()
            crash_point("inbound-handled")
            session.commit()
            crash_point("inbound-committed")
            session.hand_over()
        return True

    def hold(self, session: Session, inbound_id: int, lane: int | None,
             waits: Waits | None) -> InboundMail | None:
        """Begin a claimed mail's transaction (pbem.inbox.hold_claim) and read the mail;
        a mail of a game's lane takes its sender's lock too (pbem.db.sender_writer).
        None when the mail is no longer ours to handle."""
        started = time.perf_counter()
        if not inbox.hold_claim(session, inbound_id, self.clock(), lane):
            return None
        row = inbox.read_held(session, inbound_id)
        if lane and (sender := inbox.sender_of(row)) is not None:
            sender_writer(session, sender)
        waited = time.perf_counter() - started
        if waits is not None and waited >= LOCK_WAIT_NOTED:
            waits.add("database locks", waited, f"game {lane}" if lane else "the one writer")
        return row

    def resolve_due(self, waits: Waits | None = None) -> int:
        """The clock work of a tick (pbem.services.clock): outage shift, vacations,
        reminders, grace, and the resolution of due turns; returns how many turns resolved.
        The games whose clock work another worker's claim held back are told to ``waits``."""
        left: list[int] = []
        resolved = clock.clock_tick(self.engine, self.post, self.clock(), left)
        if waits is not None:
            for game_id in left:
                waits.add("left games' clock work to other workers", 0.0, f"game {game_id}")
        return resolved

    def admin(self, words: list[str]) -> list[str]:
        """Run one referee command line from the shell; returns what it says."""
        parsed = parse_text([BodyLine(1, " ".join(words))], referee_commands())
        if parsed.problems:
            p = parsed.problems[0]
            raise Refusal(p.message, p.hint)
        if not parsed.orders:
            raise Refusal(_("not a referee command: {words} (try HELP)", words=" ".join(words)))
        # the same lease as a tick's processing and resolving: a command from the shell
        # never interleaves with a running server's handling of the same game
        lease = Lease(self.engine, "referee", self.clock,
                      seconds=self.settings.claim_lease_seconds)
        if not lease.acquire(wait=self.settings.lock_wait_seconds):
            raise Refusal(_("the server is busy ({holder} is handling mail); try again in a "
                            "moment", holder=lease.holder()))
        try:
            with Work(self.engine) as session:
                one_writer(session)
                ctx = CommandContext(session, self.post, self.clock(), by_referee=True)
                try:
                    out = run(ctx, parsed.orders)
                except Refusal:
                    raise
                except Exception as exc:   # a bug: said plainly, told, nothing applied
                    session.rollback()
                    raise Refusal(self.command_failed(session, parsed.orders, exc)) from exc
                session.commit()
            return out
        finally:
            lease.release()

    def command_failed(self, session: Session, orders: list[Order], exc: Exception) -> str:
        """A referee command hit a bug: its game's referee and players are told (as when the
        clock fails); returns what the shell prints."""
        log.error("referee command %s failed", " / ".join(o.line for o in orders), exc_info=exc)
        names = [str(o.args) for o in orders if isinstance(o.args, str)]
        game = next((g for n in names if (g := find_game_or_none(session, n)) is not None),
                    None)
        if game is not None:
            game_failed(session, self.post, game,
                        _("the referee command {command}",
                          command=" / ".join(o.line for o in orders)), exc)
            session.commit()
        return (f"{' / '.join(o.line for o in orders)} failed on our side: "
                f"{what_failed(exc)}; nothing was applied"
                + ("; the game's players were told the turn is delayed" if game else ""))

    def unstorable(self, where: str, why: str, tries: int, quarantine: str) -> None:
        """A fetched mail (``where``: folder/UIDVALIDITY/UID) could not be stored ``tries``
        times and was moved to the IMAP folder ``quarantine``: the referee hears of it as of
        a failed mail (at most one notice an hour)."""
        with Session(self.engine) as session:
            failures.note_line(session, self.post, _n(
                "A mail in the mailbox ({where}) could not be stored {n} time ({why}); it was "
                "moved to the IMAP folder {quarantine}, kept as it came. After a fix, RETRY "
                "QUARANTINE (in a referee mail, or `pbem admin -c <your pbem.toml> RETRY "
                "QUARANTINE` on the server) fetches it again.",
                "A mail in the mailbox ({where}) could not be stored {n} times ({why}); it was "
                "moved to the IMAP folder {quarantine}, kept as it came. After a fix, RETRY "
                "QUARANTINE (in a referee mail, or `pbem admin -c <your pbem.toml> RETRY "
                "QUARANTINE` on the server) fetches it again.", tries, where=where, why=why,
                quarantine=quarantine))
            session.commit()

    def undeliverable(self, session: Session, row: OutboundMail, why: str) -> None:
        """The outbox gave up on a mail: tell the referee (unless that mail was to them)."""
        undeliverable(session, self.post, row, why)


# --- triage -------------------------------------------------------------------------------

def set_aside(session: Session, post: Post, row: InboundMail) -> None:
    """Quarantine a mail whose handling was cut short (a crash, a kill) MAX_CUT_SHORT times:
    it is kept unread, the referee is told (pbem.services.failures), the rest goes on."""
    times = inbox.cut_short(row)
    log.error("mail %s set aside: its handling was cut short %d times", row.id, times)
    row.status = "quarantined"
    count = plural("{n} time", "{n} times", times)
    row.outcome = (f"set aside: its handling was cut short {count} (a crash or a kill); "
                   "the referee was told")
    assert row.id is not None
    failures.note(session, post, row.id, _n(
        "set aside unread: the server crashed or was killed {n} time while handling it. "
        "{retry}", "set aside unread: the server crashed or was killed {n} times while "
        "handling it. {retry}", times, retry=failures.retry_line(row.id)))


def handle(session: Session, post: Post, row: InboundMail) -> str:
    """Read one stored mail and act on it; returns its outcome (one line)."""
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
    proven = lockout = about_signup = False
    try:
        if msg.from_addr != settings.referee.lower():
            sender_check.check_aligned(session, post, row, msg)
        bounces.heard_from(session, msg.from_addr)   # the address works again
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
            outcome = referee_mail(session, post, mail)
        else:
            outcome = player_mail(session, post, mail)
    except Refusal as refused:
        if refused.auth_failed:
            sender_check.auth_failed(session, post, msg.from_addr)
        answer_error(session, post, mail, refused)
        lockout, about_signup = refused.lockout, refused.about_signup
        outcome = "refused: " + "; ".join(str(p.message) for p in refused.problems)
        proven = refused.sender_proven
    return sender_check.limit_answers(session, post, row, mail.msg, outcome, proven=proven,
                                      lockout=lockout, about_signup=about_signup)


def lane_of(session: Session, post: Post, raw: bytes, envelope_from: str | None,
            truncated: bool) -> int:
    """The lane of a stored mail (pbem.inbox): the game a player's mail speaks to, known
    before its orders are read (named_game, as its handling finds it), else NO_GAME
    (automatic mail, the referee's, a stranger's, a sign-up, one that cannot be read:
    its handling says why)."""
    settings = post.settings
    try:
        msg = read_message(raw, own_addresses=[settings.address], envelope_from=envelope_from)
        if truncated or msg.automatic or msg.from_addr is None or not msg.readable or \
                msg.from_addr in (settings.address.lower(), settings.referee.lower()):
            return inbox.NO_GAME
        # a reply to our mail to a seat speaks to that mail's game, as named_game finds it:
        # its headers alone say so, so neither the mail of ours it quotes is read (the
        # cut of the quote) nor the game loaded; the mail's handling does both
        sent = sender_check.replied_seat(session, msg)
        if sent is not None and sent.game_id is not None and sent.seat is not None:
            return int(sent.game_id)
        game = named_game(session, within_limits(read_reply(session, msg)))
    except Exception:   # noqa: BLE001 - its handling reads it again and says what is wrong
        return inbox.NO_GAME
    return game.id if game is not None and game.id is not None else inbox.NO_GAME


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

def player_mail(session: Session, post: Post, mail: Incoming) -> str:
    """A player's mail: desk commands, or a move order, or the answer HELP / STATUS give.

    The mail is parsed once: with the orders of its game's kind when the game is known
    before (named_game), so "OK thanks" in a postal game is prose, not Cup of Bluff's OK;
    else with every kind's (the sender is then no known player: identify says so)."""
    game = named_game(session, mail.msg)
    parsed = parse_text(mail.msg.lines,
                        player_commands(kind_of(game) if game is not None else None))
    who = sender_check.identify(session, post, mail.msg, parsed)
    if parsed.problems:
        raise Refusal.of(parsed.problems, game=who.game.name if who else None)
    # one answer a mail: the commands' answers are held and sent together at the end
    ctx = CommandContext(session, post, post.clock(), mail, who, parsed.orders, parts=[],
                         language=reader_language(session, post, mail.msg, who, parsed))
    outcome = player_commands_of(ctx, parsed, who)
    ctx.send_answers()
    return outcome


# the GAME line's declaration: all named_game reads of a mail before its game is known
GAME_LINE = tuple(c for c in MAIL_LINES if c.name == "GAME")


def named_game(session: Session, msg: InboundMessage) -> Game | None:
    """The game a player mail speaks to, known before its orders are read: the game of
    our mail it replies to (sender_check.replied_report, as identify finds it), else the
    game its GAME line names; None when neither names a game here. Only the GAME line is
    looked at here (a line, not the mail's parse)."""
    found = sender_check.replied_report(session, msg)
    if found is not None:
        return found[1]
    game_line = parse_text(msg.lines, GAME_LINE).first("GAME")
    return find_game_or_none(session, str(game_line.args)) if game_line is not None else None


def move_step(ctx: CommandContext, parsed: ParsedText, names: set[str]) -> str:
    """A mail's move, three steps: the order recorded and confirmed (take_moves); if it
    completes the turn, the turn played (turns.play_turn), then its reports composed and
    queued (turns.report_turn). Returns what the order's line says."""
    taken = take_moves(ctx, parsed, names)
    if taken.completes:
        assert ctx.mail is not None
        played = turns.play_turn(ctx.session, ctx.post, taken.game)
        turns.report_turn(ctx.session, ctx.post, taken.game, played,
                          inbound_id=ctx.mail.row.id)
    return taken.said


def player_commands_of(ctx: CommandContext, parsed: ParsedText, who: Turnkey | None) -> str:
    """Run a player mail's commands (all of them, or none: one transaction), phase by phase:
    what it changes, its move, what it asks to see (so ORDERS shows the same mail's DEFAULT
    and move); the answers still come in the order of the lines."""
    names = move_names()
    phase = {p: [o for o in parsed.orders if o.command.phase == p]
             for p in ("change", "move", "look", "reply")}
    moves = phase["move"]
    nothing_else = not phase["change"] and not phase["look"]
    if not moves or who is None:
        if nothing_else:
            # a reply answers a mail that has nothing else to do: HELP, which anyone may
            # ask for, before the player's STATUS
            replies = sorted((o for o in phase["reply"] if permitted(ctx, o.command)),
                             key=lambda o: o.command.who != "anyone")
            if replies:
                return run(ctx, replies[:1])[0]
    if who is None and (moves or nothing_else):
        raise refusal(_("I could not tell which game and player this mail is for"),
                      _("reply to your latest report, or write a fresh mail with the lines "
                        "GAME <game> and KEY <your key> (both are in your report)"))
    if not moves and nothing_else:
        return take_moves(ctx, parsed, names).said   # says that no order was found
    with savepoint(ctx.session):   # a move and desk commands in one mail: all or none
        said = run(ctx, phase["change"])
        if moves:
            said.insert(0, move_step(ctx, parsed, names))
        said += run(ctx, phase["look"])
    return "; ".join(said)


def referee_mail(session: Session, post: Post, mail: Incoming) -> str:
    """The referee's mail: KEY <referee key>, then referee commands, all or none."""
    settings = post.settings
    parsed = parse_text(mail.msg.lines, referee_commands())
    key = parsed.first("KEY")
    if key is None:
        raise refusal(_("referee commands need the line KEY <referee key>"),
                      _("add the referee key from pbem.toml on a line of its own"))
    sender_check.check_lockout(session, post, mail.msg, None)
    if not security.referee_key_matches(str(key.args), key=settings.referee_key,
                                        key_sha256=settings.referee_key_sha256):
        raise sender_check.auth_refusal(refusal(
            _("referee commands need the line KEY <referee key>, with the right key"),
            _("add the referee key from pbem.toml on a line of its own"), key.line_no,
            "KEY ****"))
    if parsed.problems:
        raise Refusal.of(parsed.problems)
    ctx = CommandContext(session, post, post.clock(), mail, None, parsed.orders,
                         by_referee=True, language=settings.referee_language)
    try:
        with savepoint(session):   # all the commands of a mail, or none of them
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
                    who: Turnkey | None = None, parsed: ParsedText | None = None) -> str:
    """The language a mail is answered in: the referee's own; a known player's
    (LANGUAGE, else their game's); else the language of the mail's order words (a JOIN
    written in German is answered in German); else the server's."""
    settings = post.settings
    sender = (msg.from_addr or "").lower()
    if sender == settings.referee.lower():
        return settings.referee_language
    if who is not None:
        return language_of(who.game, who.player)
    known = reading_of_address(session, sender)[0] if sender else None
    if known:
        return known
    written = parsed.language if parsed is not None else words_language(
        line.text for line in msg.lines)
    return written or settings.language


def answer_error(session: Session, post: Post, mail: Incoming, refused: Refusal) -> None:
    """A short error: each line at fault, what is wrong and the fix; then only the orders
    of that game's kind the sender may write now; HELP for everything else."""
    game = find_game_or_none(session, refused.game) if refused.game else None
    language = reader_language(session, post, mail.msg)
    context = {"problems": [p.__dict__ for p in refused.problems], "game": refused.game,
               "help_lines": help_lines(orders_now(session, game, mail.sender), language),
               "closed": game.status if game is not None and game.status in (
                   "over", "cancelled") else None}
    subject = (tagged(game.name, _("your mail: nothing was applied")) if game is not None
               else _("Your mail to the Bluff referee: nothing was applied"))
    answer(session, post, mail, "error", subject, context, language=language,
           game_id=game.id if game is not None else None)


def orders_now(session: Session, game: Game | None, sender: str) -> list[Command]:
    """The move orders of the game's kind the sender (a player due now) may write."""
    if game is None or game.status != "running":
        return []
    seat = next((p.seat for p in active_players(session, game) if p.email == sender), None)
    if seat is None:
        return []
    kind = kind_of(game)
    names = kind.orders_now(load_state(session, game), seat)
    return [c for c in kind.commands if c.name in names]


def find_game_or_none(session: Session, name: str) -> Game | None:
    try:
        return find_game(session, name)
    except Refusal:
        return None


def readable(row: InboundMail, settings: Settings) -> InboundMessage | None:
    """The stored mail as read, for the notice of its failure (None if even that fails)."""
    try:
        return read_message(row.raw, own_addresses=[settings.address],
                            envelope_from=row.envelope_from)
    except Exception:   # the notice must go out whatever is wrong with the mail
        log.exception("mail %s cannot be read for its failure notice", row.id)
        return None


def answer_internal_error(session: Session, post: Post, row: InboundMail) -> None:
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
        sender_check.limit_answers(session, post, row, msg, "")
    except Exception:   # the answer is a courtesy: never let it lose the mail
        log.exception("could not answer mail %s after its internal error", row.id)

