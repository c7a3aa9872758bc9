"""The referee: one stored inbound mail becomes one database transaction.

Reading, authorising, checking and recording an order, the answer to the
sender and (when the mail completes a turn) the turn's reports are committed
together or not at all. The mail's row is marked done in that same
transaction, so a crash before the commit leaves it to be handled again and
a crash after it leaves nothing to redo.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, text, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from pbem import security
from pbem.faults import claim_stale, crash_point, me

from pbem.admin import REFEREE_COMMANDS, AdminContext, run_admin
from pbem.config import Settings
from pbem.deadlines import clock_tick, resolves_early
from pbem.games import (GameError, find_game, load_state, missing_seats, players_of,
                        record_order, resolve_turn, seated)
from pbem.kinds import OrderProblem, kind_of
from pbem.mail.read import (MAX_LINE_CHARS, MAX_TEXT_LINES, BodyLine, InboundMessage,
                            read_message)
from pbem.models import Game, InboundMail, OutboundMail, Player
from pbem.desk import turns
from pbem.desk import (PlayerContext, desk_orders, move_names, needs_player, player_actions,
                       player_commands)
from pbem.orders import LineProblem, Order, ParsedText, help_lines, parse_text
from pbem.outbox import Origin, enqueue
from pbem.render import Renderer
from pbem.reports import enqueue_reports, played_for_notes

log = logging.getLogger(__name__)


MAX_IGNORED_SHOWN = 20   # prose lines a confirmation lists as ignored


def utc_now() -> datetime:
    from datetime import UTC
    return datetime.now(UTC)


def dedupe_key(raw: bytes, message_id: str | None) -> str:
    return message_id or "sha256:" + hashlib.sha256(raw).hexdigest()


class Refusal(Exception):
    """The mail cannot be acted on; the problems go back to the sender."""

    def __init__(self, *problems: LineProblem, game: str | None = None) -> None:
        super().__init__(problems[0].message if problems else "refused")
        self.problems = list(problems)
        self.game = game
        self.auth_failed = False       # a failed attempt to act as someone (rate-limited)


def refusal(message: str, hint: str = "", line_no: int | None = None,
            line: str | None = None, game: str | None = None) -> Refusal:
    return Refusal(LineProblem(line_no, line, message, hint), game=game)


@dataclass
class Turnkey:
    """Who a player mail is from and which turn it speaks to."""

    game: Game
    player: Player
    turn: int
    via_reply: bool


@dataclass
class Referee:
    settings: Settings
    engine: Engine
    renderer: Renderer
    clock: Callable[[], datetime] = utc_now
    origin: Origin = field(init=False)

    def __post_init__(self) -> None:
        self.origin = Origin(self.settings.address)

    # --- storing ----------------------------------------------------------

    def store_inbound(self, raw: bytes, *, source: str, envelope_from: str | None = None,
                      imap_key: str | None = None, truncated: bool = False,
                      size: int | None = None) -> bool:
        """Keep the raw mail before anything else happens to it; False if seen before.

        The size limit holds here, before anything parses the mail: of a mail larger
        than max_mail_bytes only the header block is kept (and its sender is told).
        A database error propagates, so the caller keeps the mail: IMAP leaves it in
        the folder, the listener answers 451, and both try again later.
        """
        from email.parser import BytesHeaderParser
        from email import policy
        size = size if size is not None else len(raw)
        if len(raw) > self.settings.max_mail_bytes:
            raw, truncated = self._header_block(raw), True
        try:
            headers = BytesHeaderParser(policy=policy.compat32).parsebytes(raw[:65536])
            message_id = (headers.get("Message-ID") or "").strip() or None
        except Exception:  # a header block we cannot even split still gets stored
            message_id = None
        key = dedupe_key(raw, message_id)
        with Session(self.engine) as session:
            seen = session.exec(select(InboundMail.id).where(
                (InboundMail.dedupe_key == key) |
                ((InboundMail.imap_key == imap_key) if imap_key else False))).first()
            if seen is not None:
                return False
            session.add(InboundMail(dedupe_key=key, imap_key=imap_key, source=source,
                                    envelope_from=envelope_from, raw=raw, size=size,
                                    truncated=truncated, received_at=self.clock()))
            try:
                session.commit()
            except IntegrityError:   # a concurrent store of the same mail won the race
                session.rollback()
                return False
        return True

    # --- processing ---------------------------------------------------------

    def process_pending(self, keep_alive: Callable[[], object] | None = None) -> int:
        """Handle every stored mail not handled yet, oldest first; return how many.

        ``keep_alive`` is called after each mail (the tick renews its lease with it).
        """
        with Session(self.engine) as session:
            ids = list(session.exec(select(InboundMail.id).where(InboundMail.status == "new")
                                    .order_by(col(InboundMail.id))))
        handled = 0
        for inbound_id in ids:
            if self.process_one(inbound_id):
                handled += 1
            if keep_alive is not None:
                keep_alive()
        return handled

    def process_one(self, inbound_id: int | None) -> bool:
        """Handle one stored mail in one transaction; False if it was not ours to handle.

        The mail is first claimed (a lease in its row, committed on its own), so
        other processes leave it alone. The transaction that handles it begins with
        a write that re-checks the claim and that the mail is still new: that takes
        SQLite's write lock (PostgreSQL: the row's lock and the referee's advisory
        lock), so what the transaction reads is current, and of two processes that
        both got this far the second finds the mail done. A database that is locked
        or gone raises OperationalError and leaves the mail new for the next tick.
        """
        if inbound_id is None or not self._claim_inbound(inbound_id):
            return False
        with Session(self.engine) as session:
            if not self._hold_claim(session, inbound_id):
                return False
            row = session.get(InboundMail, inbound_id)
            assert row is not None
            try:
                row.outcome = self._handle(session, row)
                row.status = "done"
            except OperationalError:
                raise
            except Exception:
                # a bug must not lose the mail nor stop the server: keep it, mark it failed
                log.exception("mail %s could not be handled", inbound_id)
                session.rollback()
                self._hold_claim(session, inbound_id)
                row = session.get(InboundMail, inbound_id)
                assert row is not None
                row.status = "failed"
                row.outcome = "internal error; the referee was told"
                self._tell_referee(session, "A mail could not be handled",
                                   [f"Inbound mail #{inbound_id} caused an internal error and "
                                    f"was kept as failed. Run `pbem admin RETRY {inbound_id}` "
                                    f"after a fix."])
                self._answer_internal_error(session, row)
            row.processed_at = self.clock()
            session.add(row)
            session.flush()
            crash_point("inbound-handled")
            session.commit()
        crash_point("inbound-committed")
        return True

    def _handle(self, session: Session, row: InboundMail) -> str:
        msg = read_message(row.raw, own_addresses=[self.settings.address],
                           envelope_from=row.envelope_from)
        if msg.automatic:
            return f"ignored: automatic mail ({msg.automatic})"
        if msg.from_addr is None:
            return "ignored: no sender address"
        if msg.from_addr == self.settings.address.lower():
            return "ignored: from the server itself"
        try:
            if row.truncated:
                raise refusal(f"your mail is larger than {self.settings.max_mail_bytes:,} bytes, "
                              f"so it was not read", "send your orders as plain text, without "
                              "attachments")
            if not msg.readable:
                raise refusal(msg.problem or "no text could be read from your mail",
                              "send your orders as plain text")
            msg = self._within_limits(msg)
            if msg.from_addr == self.settings.referee.lower():
                outcome = self._referee_mail(session, row, msg)
            else:
                outcome = self._player_mail(session, row, msg)
        except Refusal as refused:
            if refused.auth_failed:
                self._auth_failed(session, msg.from_addr)
            self._answer_error(session, row, msg, refused)
            outcome = "refused: " + "; ".join(p.message for p in refused.problems)
        return self._limit_answers(session, row, msg, outcome)

    # --- player mail -------------------------------------------------------

    def _player_mail(self, session: Session, row: InboundMail, msg: InboundMessage) -> str:
        parsed = parse_text(msg.lines, player_commands())
        who = self._identify(session, msg, parsed)
        if who is not None:
            # once the game is known, read the mail with its kind's orders only
            # (so "OK thanks" in a postal game is prose, not Cup of Bluff's OK)
            parsed = parse_text(msg.lines, player_commands(kind_of(who.game)))
        if parsed.problems:
            raise Refusal(*parsed.problems, game=who.game.name if who else None)
        desk = desk_orders(parsed.orders)
        if desk and not self._move_orders(parsed):
            return self._player_desk(session, row, msg, who, desk)
        if who is None:
            if parsed.first("HELP") is not None:
                self._answer(session, row, msg, "help", "Bluff by mail: the orders",
                             self._help_context(None))
                return "help sent"
            raise refusal("I could not tell which game and player this mail is for",
                          "reply to your latest report, or write a fresh mail with the lines "
                          "GAME <game> and KEY <your key> (both are in your report)")
        if parsed.first("HELP") is not None and not self._move_orders(parsed):
            self._answer(session, row, msg, "help", "Bluff by mail: the orders",
                         self._help_context(who), who=who)
            return "help sent"
        if parsed.first("STATUS") is not None and not self._move_orders(parsed):
            return self._status(session, row, msg, who)
        if desk:
            # a move and desk commands (SAY, DEFAULT ...) in one mail: all of it or none
            with session.begin_nested():
                said = self._player_desk(session, row, msg, who, desk)
                return self._order(session, row, msg, parsed, who) + "; " + said
        return self._order(session, row, msg, parsed, who)

    def _player_desk(self, session: Session, row: InboundMail, msg: InboundMessage,
                     who: Turnkey | None, orders: list[Order]) -> str:
        """Desk commands (JOIN, SAY, HISTORY ...): each one answers for itself."""
        ctx = PlayerContext(session, self, row, msg, self.clock(), who)
        actions, need = player_actions(), needs_player()
        outcomes = []
        for order in orders:
            if order.name in need and who is None:
                raise refusal(f"{order.name} needs to know who you are",
                              "reply to your latest report, or add the lines GAME <game> and "
                              "KEY <your key>", order.line_no, order.line)
            outcomes.append(actions[order.name](ctx, order))
        return "; ".join(outcomes)

    @staticmethod
    def _move_orders(parsed: ParsedText) -> bool:
        return any(o.name in move_names() for o in parsed.orders)

    def _identify(self, session: Session, msg: InboundMessage,
                  parsed: ParsedText) -> Turnkey | None:
        refs = [r for r in [msg.in_reply_to, *reversed(msg.references)] if r]
        if refs:
            sent = session.exec(select(OutboundMail).where(
                col(OutboundMail.message_id).in_(refs), col(OutboundMail.seat).is_not(None))
                .order_by(col(OutboundMail.id).desc())).first()
            if sent is not None and sent.game_id is not None:
                game = session.get(Game, sent.game_id)
                assert game is not None
                player = seated(session, game).get(sent.seat)   # a replaced player: no more
                if player is None or player.email != msg.from_addr:
                    raise self._auth_refusal(refusal(
                        "this is a reply to another player's mail, from an address that is "
                        "not theirs", "reply from the address the report was sent to",
                        game=game.name))
                turn_order = parsed.first("TURN")
                turn = turn_order.args if turn_order is not None else (sent.turn or game.turn)
                return Turnkey(game, player, turn, True)
        game_line, key_line = parsed.first("GAME"), parsed.first("KEY")
        if game_line is None and key_line is None:
            return None
        if game_line is None or key_line is None:
            missing = "GAME <game>" if game_line is None else "KEY <key>"
            raise refusal(f"a fresh mail needs both GAME and KEY lines; the {missing} line is "
                          "missing", "copy both lines from your latest report")
        try:
            game = find_game(session, game_line.args)
        except GameError as exc:
            raise refusal(str(exc), "check the game name in your report",
                          game_line.line_no, game_line.line) from None
        self._check_lockout(session, msg, game.name)
        player = security.find_key_owner(players_of(session, game), str(key_line.args))
        if player is None or player.email != msg.from_addr:
            # the same answer either way: a key is no use from another address
            raise self._auth_refusal(refusal(
                f"that key does not belong to {msg.from_addr} in game {game.name}",
                "use the key from your own report, sent from your registered address",
                key_line.line_no, "KEY ****", game=game.name))
        turn_order = parsed.first("TURN")
        return Turnkey(game, player, turn_order.args if turn_order else game.turn, False)

    def _order(self, session: Session, row: InboundMail, msg: InboundMessage,
               parsed: ParsedText, who: Turnkey) -> str:
        game, player = who.game, who.player
        kind = kind_of(game)
        names = {c.name for c in kind.commands}
        orders = [o for o in parsed.orders if o.name in names]
        foreign = [o for o in parsed.orders if o.name in move_names() and o.name not in names]
        if foreign:
            raise refusal(f"{foreign[0].name} is not an order of {kind.title}",
                          "the orders of this game: " + ", ".join(c.usage for c in kind.commands),
                          foreign[0].line_no, foreign[0].line, game=game.name)
        if not orders:
            raise refusal("I found no order in your mail",
                          "write one order a line: " + ", ".join(c.usage for c in kind.commands),
                          game=game.name)
        if game.status != "running":
            raise refusal(f"game {game.name} is {'over' if game.status == 'over' else 'not running'}",
                          "no orders are taken now", game=game.name)
        if who.turn < game.turn:
            raise refusal(f"your order is for turn {who.turn}, which has been resolved already "
                          f"(the game is at turn {game.turn})",
                          "reply to your latest report with your order for this turn",
                          orders[0].line_no, orders[0].line, game=game.name)
        if who.turn > game.turn:
            raise refusal(f"turn {who.turn} has not begun (the game is at turn {game.turn})",
                          "", game=game.name)
        state = load_state(session, game)
        seat = player.seat
        assert seat is not None
        if seat not in kind.due(state):
            raise refusal(f"you have no move this turn (turn {game.turn})",
                          "wait for your next report", orders[0].line_no, orders[0].line,
                          game=game.name)
        try:
            taken = kind.take_order(state, seat, orders)
        except OrderProblem as problem:
            bad = problem.order
            raise refusal(problem.message, problem.hint, bad.line_no if bad else None,
                          bad.line if bad else None, game=game.name) from None
        replaced = record_order(session, game, seat, taken.move, now=self.clock(),
                                inbound_id=row.id)
        accepted = [{"line_no": u.order.line_no, "line": u.order.line,
                     "understood": u.understood, "odds": u.odds} for u in taken.lines]
        pending = missing_seats(session, game, state)
        context = {"game": game.name, "turn": game.turn, "seat": seat, "accepted": accepted,
                   "ignored": [{"line_no": p.number, "line": p.text}
                               for p in parsed.prose[:MAX_IGNORED_SHOWN]],
                   "replaced": (kind.describe_move(kind.move_from_json(
                       json.loads(replaced.move_json))) if replaced else None),
                   "pending": pending,
                   "deadline": game.deadline.isoformat() if game.deadline else None}
        self._answer(session, row, msg, "confirm",
                     f"[bluff {game.name}] turn {game.turn}: order received", context, who=who)
        if not pending and resolves_early(game):
            self.resolve(session, game, inbound_id=row.id)
        return f"order accepted: {taken.summary} (game {game.name}, turn {who.turn}, seat {seat})"

    def _status(self, session: Session, row: InboundMail, msg: InboundMessage,
                who: Turnkey) -> str:
        if who.game.status not in ("running", "over"):
            raise refusal(f"game {who.game.name} has not started", "", game=who.game.name)
        state = load_state(session, who.game)
        enqueue_reports(session, who.game, state, now=self.clock(), origin=self.origin,
                        renderer=self.renderer, only_seat=who.player.seat,
                        in_reply_to=msg.message_id, inbound_id=row.id)
        return "status sent"

    # --- turns ---------------------------------------------------------------

    def resolve(self, session: Session, game: Game, *, inbound_id: int | None = None) -> None:
        turn = game.turn
        outcome = resolve_turn(session, game, self.clock())
        turns.after_turn(self, session, game, turn)   # missed turns; the referee is told
        players = seated(session, game)
        enqueue_reports(session, game, outcome.state, now=self.clock(), origin=self.origin,
                        renderer=self.renderer, inbound_id=inbound_id,
                        notes=outcome.notes + played_for_notes(game, outcome, players))

    def resolve_due(self) -> int:
        """The clock work of a tick (pbem.deadlines): outage shift, vacations, reminders,
        grace, and the resolution of due turns; returns how many turns resolved."""
        return clock_tick(self, self.clock())

    # --- referee mail and the CLI ---------------------------------------------

    def _referee_mail(self, session: Session, row: InboundMail, msg: InboundMessage) -> str:
        parsed = parse_text(msg.lines, REFEREE_COMMANDS)
        key = parsed.first("KEY")
        if key is None:
            raise refusal("referee commands need the line KEY <referee key>",
                          "add the referee key from pbem.toml on a line of its own")
        self._check_lockout(session, msg, None)
        if not security.referee_key_matches(str(key.args), key=self.settings.referee_key,
                                            key_sha256=self.settings.referee_key_sha256):
            raise self._auth_refusal(refusal(
                "referee commands need the line KEY <referee key>, with the right key",
                "add the referee key from pbem.toml on a line of its own", key.line_no,
                "KEY ****"))
        if parsed.problems:
            raise Refusal(*parsed.problems)
        try:
            with session.begin_nested():   # all the commands of a mail, or none of them
                out = run_admin(self._admin_context(session),
                                [o for o in parsed.orders if o.name != "KEY"])
        except GameError as exc:
            raise refusal(f"{exc}; nothing in this mail was done",
                          "fix that line and send the commands again") from None
        self._answer(session, row, msg, "notice", "Referee commands done",
                     {"subject": "Referee commands done", "paragraphs": out, "game": None})
        return "referee commands: " + "; ".join(out)[:500]

    def admin(self, words: list[str]) -> list[str]:
        """Run one referee command line from the shell; returns what it says."""
        from pbem.faults import Lease
        from pbem.mail.read import BodyLine
        parsed = parse_text([BodyLine(1, " ".join(words))], REFEREE_COMMANDS)
        if parsed.problems:
            p = parsed.problems[0]
            raise GameError(f"{p.message}" + (f" ({p.hint})" if p.hint else ""))
        if not parsed.orders:
            raise GameError(f"not a referee command: {' '.join(words)} (try HELP)")
        # the same lease as a tick's processing and resolving: a command from the shell
        # never interleaves with a running server's handling of the same game
        lease = Lease(self.engine, "referee", self.clock,
                      seconds=self.settings.claim_lease_seconds)
        if not lease.acquire(wait=self.settings.lock_wait_seconds):
            raise GameError(f"the server is busy ({lease.holder()} is handling mail); "
                            "try again in a moment")
        try:
            with Session(self.engine) as session:
                out = run_admin(self._admin_context(session), parsed.orders)
                session.commit()
                return out
        finally:
            lease.release()

    def _admin_context(self, session: Session) -> AdminContext:
        return AdminContext(session=session, referee=self, now=self.clock())

    # --- answers ------------------------------------------------------------

    def _help_context(self, who: Turnkey | None) -> dict[str, Any]:
        commands = player_commands(kind_of(who.game) if who is not None else None)
        return {"commands": help_lines(commands), "referee_commands": [],
                "server_address": self.settings.address}

    def _answer(self, session: Session, row: InboundMail, msg: InboundMessage, template: str,
                subject: str, context: dict[str, Any], who: Turnkey | None = None) -> None:
        assert msg.from_addr is not None
        text, html = self.renderer.render(template, context)
        enqueue(session, self.origin, kind=template, to=msg.from_addr, subject=subject,
                text=text, html=html, now=self.clock(), in_reply_to=msg.message_id,
                references=[*msg.references, msg.message_id] if msg.message_id else msg.references,
                game_id=who.game.id if who else None,
                seat=who.player.seat if who else None, turn=who.turn if who else None,
                inbound_id=row.id, auto_submitted="auto-replied")

    def _answer_error(self, session: Session, row: InboundMail, msg: InboundMessage,
                      refused: Refusal) -> None:
        from_referee = msg.from_addr == self.settings.referee.lower()
        table = REFEREE_COMMANDS if from_referee else player_commands()
        context = {"problems": [p.__dict__ for p in refused.problems], "game": refused.game,
                   "help_lines": help_lines(table)}
        subject = "Your mail to the Bluff referee: nothing was applied"
        self._answer(session, row, msg, "error", subject, context)

    def _tell_referee(self, session: Session, subject: str, paragraphs: list[str]) -> None:
        from pbem.desk.notices import tell_referee
        tell_referee(self, session, subject, paragraphs)

    def undeliverable(self, session: Session, row: OutboundMail, why: str) -> None:
        """The outbox gave up on a mail: tell the referee (unless that mail was to them)."""
        if self.settings.referee in row.rcpts_json:
            return
        self._tell_referee(session, "A mail could not be delivered",
                           [f"Mail {row.message_id} ({row.kind}) to {row.rcpts_json} could not "
                            f"be delivered: {why}"])

    # --- claims, limits and failed attempts (issue 5) ---------------------------

    def _claim_inbound(self, inbound_id: int) -> bool:
        """Claim a new mail for this process (compare-and-swap on claimed_by), committed."""
        lease = timedelta(seconds=self.settings.claim_lease_seconds)
        now = self.clock()
        with Session(self.engine) as session:
            found = session.exec(select(InboundMail.status, InboundMail.claimed_by,
                                        InboundMail.claimed_at)
                                 .where(InboundMail.id == inbound_id)).first()
            if found is None or found[0] != "new":
                return False
            _, owner, at = found
            if owner != me() and not claim_stale(owner, at, now, lease):
                return False
            same = (col(InboundMail.claimed_by).is_(None) if owner is None
                    else col(InboundMail.claimed_by) == owner)
            done = session.execute(update(InboundMail).where(
                col(InboundMail.id) == inbound_id, col(InboundMail.status) == "new", same)
                .values(claimed_by=me(), claimed_at=now))
            session.commit()
            return bool(done.rowcount == 1)  # type: ignore[attr-defined]

    def _hold_claim(self, session: Session, inbound_id: int) -> bool:
        """Begin the handling transaction with a write: still ours, still new?"""
        if self.engine.dialect.name == "postgresql":   # one referee transaction at a time
            session.execute(text("SELECT pg_advisory_xact_lock(52550)"))
        done = session.execute(update(InboundMail).where(
            col(InboundMail.id) == inbound_id, col(InboundMail.status) == "new",
            col(InboundMail.claimed_by) == me()).values(claimed_at=self.clock()))
        return bool(done.rowcount == 1)  # type: ignore[attr-defined]

    @staticmethod
    def _header_block(raw: bytes) -> bytes:
        """The header block of a mail too large to read (at most 256 KB of it)."""
        cap = 262_144
        ends = [i for i in (raw.find(b"\r\n\r\n", 0, cap), raw.find(b"\n\n", 0, cap)) if i >= 0]
        head = raw[:min(ends)] if ends else raw[:cap]
        return head.rstrip(b"\r\n") + b"\r\n\r\n"

    @staticmethod
    def _within_limits(msg: InboundMessage) -> InboundMessage:
        """At most MAX_TEXT_LINES lines of new text are read, each cut to MAX_LINE_CHARS."""
        if len(msg.lines) > MAX_TEXT_LINES:
            raise refusal(f"your mail has {len(msg.lines):,} lines of new text; at most "
                          f"{MAX_TEXT_LINES} are read", "send your orders in a short mail "
                          "(the quoted text of a reply does not count)")
        if all(len(line.text) <= MAX_LINE_CHARS for line in msg.lines):
            return msg
        lines = [line if len(line.text) <= MAX_LINE_CHARS else
                 BodyLine(line.number, line.text[:MAX_LINE_CHARS] + " [...]")
                 for line in msg.lines]
        return dataclasses.replace(msg, lines=lines)

    @staticmethod
    def _auth_refusal(refused: Refusal) -> Refusal:
        """Mark a refusal as a failed attempt to act as someone (counted, rate-limited)."""
        refused.auth_failed = True
        return refused

    def _check_lockout(self, session: Session, msg: InboundMessage, game: str | None) -> None:
        """Refuse to look at a key from an address with too many failed attempts."""
        assert msg.from_addr is not None
        limits = security.Limits.from_settings(self.settings)
        now = self.clock()
        if security.locked_out(session, msg.from_addr, now, limits):
            until = security.locked_until(session, msg.from_addr, now, limits)
            raise refusal(f"too many failed attempts from {msg.from_addr}: keys from this "
                          f"address are not checked until {until:%Y-%m-%d %H:%M} UTC",
                          "reply to your latest report instead (a reply needs no key), or "
                          "try again later", game=game)

    def _auth_failed(self, session: Session, address: str | None) -> None:
        if address is None:
            return
        limits = security.Limits.from_settings(self.settings)
        now = self.clock()
        if security.note_failure(session, address, now, limits):
            minutes = limits.auth_window.total_seconds() / 60
            until = security.locked_until(session, address, now, limits)
            self._tell_referee(session, "Repeated failed attempts", [
                f"Mail from {address} failed {limits.auth_failures} checks within {minutes:g} "
                f"minutes: a wrong key, a key from another address, or a reply to another "
                f"player's mail. Keys from this address are not checked until "
                f"{until:%Y-%m-%d %H:%M} UTC; replies to reports still work.",
                "If this is a player who lost their key, STATUS shows the game; if not, "
                "someone may be trying to act in their name."])

    def _limit_answers(self, session: Session, row: InboundMail, msg: InboundMessage,
                       outcome: str) -> str:
        """At most stranger_answers_per_day error/help answers a day to an address that is
        unknown here or locked out: no backscatter from forged mail, no loop with a robot."""
        address = msg.from_addr
        if address is None:
            return outcome
        limits = security.Limits.from_settings(self.settings)
        now = self.clock()
        if address == self.settings.referee.lower() or security.known_address(session, address):
            if not security.locked_out(session, address, now, limits):
                return outcome
        session.flush()
        answers = session.exec(select(OutboundMail).where(
            OutboundMail.inbound_id == row.id, col(OutboundMail.kind).in_(("error", "help")),
            OutboundMail.status == "pending")).all()
        mine = [a for a in answers if json.loads(a.rcpts_json) == [address]]
        if not mine or security.may_answer(session, address, now, limits):
            return outcome
        for answer in mine:
            session.delete(answer)
        return outcome + "; not answered (one answer a day to an unknown or locked-out address)"

    def _answer_internal_error(self, session: Session, row: InboundMail) -> None:
        """Tell the sender of a mail that failed on our side (once, never to automatic mail)."""
        try:
            msg = read_message(row.raw, own_addresses=[self.settings.address],
                               envelope_from=row.envelope_from)
            if msg.automatic or msg.from_addr is None or \
                    msg.from_addr == self.settings.address.lower():
                return
            self._answer_error(session, row, msg, refusal(
                "something went wrong on our side while reading your mail; nothing in it was "
                "applied", "the referee has been told and will look into it"))
            self._limit_answers(session, row, msg, "")
        except Exception:   # the answer is a courtesy: never let it lose the mail
            log.exception("could not answer mail %s after its internal error", row.id)


