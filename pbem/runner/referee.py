"""The referee: one stored inbound mail becomes one database transaction.

Reading, authorising, checking and recording an order, the answer to the
sender and (when the mail completes a turn) the turn's reports are committed
together or not at all. The mail's row is marked done in that same
transaction, so a crash before the commit leaves it to be handled again and
a crash after it leaves nothing to redo.

The runner: it claims the stored mail (a page at a time on SQLite, a game's lane at
a time on PostgreSQL), runs each mail's transaction, and hands the mail to
pbem.runner.triage, which reads it and dispatches its commands. What a command does lives
in pbem.commands; what it shares with the clock (turns, mail) in pbem.services.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from pbem.commands.context import CommandContext
from pbem.commands.registry import (
    referee_commands,
    run,
)
from pbem.config import Settings
from pbem.mail.text import BodyLine
from pbem.orders.parsing import Order, parse_text
from pbem.outbox import Shortfall, Undelivered
from pbem.render.reports import Renderer
from pbem.runner import inbox, isolation
from pbem.runner.triage import (
    answer_internal_error,
    find_game_or_none,
    handle,
    lanes_of,
    readable,
    set_aside,
)
from pbem.services import clock, failures
from pbem.services.bounces import undeliverable
from pbem.services.failures import game_failed, mail_failed, what_failed
from pbem.services.post import Post, budget_short
from pbem.services.progress import Marks, unmarked
from pbem.store.advisory_locks import lanes_apart, one_writer, sender_writer, senders_writer
from pbem.store.bodies import HeldMail
from pbem.store.claims import Lease, Waits
from pbem.store.db import open_database
from pbem.store.engines import transient_error
from pbem.store.faults import crash_point, poison_point
from pbem.store.models import InboundMail, OutboundMail
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import _, _n

log = logging.getLogger(__name__)

class HandOff(Protocol):
    """Who sends a transaction's mail as soon as it commits (pbem.outbox.Stream over SMTP,
    pbem.outbox.Inline for the .eml outbox)."""

    def claim(self, work: Work) -> list[Any]:
        """Claim what ``work`` queued, in its transaction, just before its commit."""

    def feed(self, rows: list[Any]) -> None:
        """Send what ``claim`` returned, now committed."""


def claim(session: Work, hand_off: HandOff | None) -> list[Any]:
    """The mail ``session`` queued, claimed for ``hand_off`` in its transaction (until it
    is handed over it is claimed and unsent: a crash leaves it to the next drain,
    pbem.store.claims.claim_stale); none without a hand-off (the tick's drain sends it)."""
    return hand_off.claim(session) if hand_off is not None else []


def hand_over(claimed: list[Any], hand_off: HandOff | None) -> None:
    """Give the mail claimed before a commit to the ``hand_off`` to send, now committed
    (told even of none: the marks that rode in the commit are taken, pbem.outbox.Inline)."""
    if hand_off is not None:
        hand_off.feed(claimed)


ISOLATED_TRIES = 2       # bounded children a mail may kill before it is set aside
GROUP = 10               # a game's lane's mails handled in one transaction (PostgreSQL)
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
        """Keep the raw mail (pbem.runner.inbox.store_inbound); False if seen before."""
        return inbox.store_inbound(self.engine, raw, now=self.clock(),
                                   max_bytes=self.settings.max_mail_bytes, source=source,
                                   envelope_from=envelope_from, imap_key=imap_key,
                                   truncated=truncated, size=size)

    def store_many(self, mails: list[tuple[bytes, str, bool, int]], *, source: str) -> int:
        """Keep a batch of fetched mails in one transaction (pbem.runner.inbox.store_many)."""
        return inbox.store_many(self.engine, mails, now=self.clock(),
                                max_bytes=self.settings.max_mail_bytes, source=source)

    def process_pending(self, keep_alive: Callable[[], object] | None = None,
                        hand_off: HandOff | None = None, marks: Marks = unmarked,
                        waits: Waits | None = None) -> int:
        """Handle every stored mail not handled yet, oldest first; return how many.

        Mail is claimed a page at a time (pbem.runner.inbox.claim_page: one commit), then each
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
        with Work(self.engine) as session:   # failures held back an hour, told together
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
        whose oldest mail came first first (pbem.runner.inbox.claim_lane); a lane another worker
        holds is left to it (told to ``waits``). Each mail's transaction takes its game's
        lock, beside other games' (pbem.store.advisory_locks.game_writer); mail of no game the one
        writer's.

        A pass gives mail its lanes (route: after the worker giving lanes now, if one is,
        and on while no other is at it), then takes the lanes free.
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
            # the pass's lanes claimed and handled on one connection: one checkout (on
            # PostgreSQL the pool's ping, a round trip) a pass, not one a lane and a claim
            with self.engine.connect() as conn:
                for lane in inbox.waiting_lanes(self.engine, upto):
                    group = GROUP if lane != inbox.NO_GAME else 1
                    page, holder = inbox.claim_lane(conn, self.clock(), lease, lane,
                                                    upto=upto, begun=group)
                    if not page:
                        if holder is not None:
                            waits.add("left lanes to other workers", 0.0, holder)
                        continue
                    took = True
                    handled += self.handle_lane(page, lane, group, hand_off, marks, waits,
                                                conn)
            if not took and not routed:
                break
        return handled

    def handle_lane(self, page: list[int], lane: int, group: int, hand_off: HandOff | None,
                    marks: Marks, waits: Waits, conn: Connection) -> int:
        """Handle a claimed page of a lane's mail (oldest first) on ``conn``, ``group``
        mails a transaction (handle_group); how many were handled. The attempts of each
        group are counted before it begins: the first's by the claim, each next one's by
        the commit that ends the group before it."""
        handled = 0
        groups = [page[n:n + group] for n in range(0, len(page), group)]
        for number, ids in enumerate(groups):
            following = groups[number + 1] if number + 1 < len(groups) else []
            if len(ids) == 1 and len(following) <= 1:   # a mail alone: as on SQLite
                marks("mail>")
                handled += self.handle_claimed(ids[0], following[0] if following else None,
                                               hand_off, lane=lane, waits=waits, bind=conn)
                marks("mail<")
                continue
            together = self.handle_group(ids, following, hand_off, lane, waits, conn, marks)
            if together is not None:
                handled += together
                continue
            # one at a time, each in its own transaction (their attempts are counted)
            for inbound_id in ids:
                marks("mail>")
                handled += self.handle_claimed(inbound_id, None, hand_off, lane=lane,
                                               waits=waits, bind=conn)
                marks("mail<")
            if following:
                with Session(conn) as session:
                    inbox.count_attempts(session, following)
                    session.commit()
        return handled

    def handle_group(self, ids: list[int], following: list[int], hand_off: HandOff | None,
                     lane: int, waits: Waits, conn: Connection, marks: Marks) -> int | None:
        """Handle several claimed mails of a game's ``lane`` (oldest first) in ONE
        transaction on ``conn``: one BEGIN and COMMIT, the game's and the senders' locks
        taken once, the claims held and the endings written by one statement each, and
        the ``following`` mails' attempts counted by the commit (PostgreSQL: each round
        trip saved is a wait for the server). Each mail is handled as if alone: what the
        session read is expired between two, so the next reads what the one before
        wrote; the unit of work's memo (the game's players, orders and moves) is kept
        right by what writes them, and is read once a group. All or nothing, as a mail alone: a
        crash or a kill before the commit leaves every mail of the group new, each
        with its attempt counted, so each is handled again (cut short: in a bounded
        child, suspect), none applied twice. None, with nothing applied, when the group
        cannot be handled so: a mail no longer ours or cut short before, or one that
        failed (a bug): the caller handles them one at a time."""
        with Work(conn, keep_queued=hand_off is not None) as session:
            rows = self.hold_group(session, ids, lane, waits)
            if [row.id for row in rows] != ids or any(inbox.cut_short(row) for row in rows):
                session.rollback()
                return None
            for row in rows:
                marks("mail>")
                poison_point(row.raw)
                try:
                    row.outcome = handle(session, self.post, row)
                except Exception as exc:
                    session.rollback()
                    marks("mail<")
                    if isinstance(exc, OperationalError) and transient_error(exc):
                        for held in rows:   # an outage: no attempt held against a mail
                            inbox.give_back_attempt(self.engine, held.id or 0)
                        raise   # the mails stay new for the next tick
                    log.warning("mail %s failed in a group of %d; they are handled one at "
                                "a time", row.id, len(rows))
                    return None
                row.status = "done"
                row.processed_at = self.clock()
                session.flush()
                crash_point("inbound-handled")
                # the next mail reads what this one wrote, as alone: the ORM's objects
                # anew; the memo's players, orders and moves are kept, as between two
                # commands of one mail (what writes them keeps them right: pbem.store.work)
                session.expire_all()
                session.replies.clear()
                marks("mail<")
            inbox.finish_all(session, rows, following)
            claimed = claim(session, hand_off)
            session.commit()
            for _row in rows:
                crash_point("inbound-committed")
            hand_over(claimed, hand_off)
        return len(rows)

    def hold_group(self, session: Work, ids: list[int], lane: int,
                   waits: Waits | None) -> list[HeldMail]:
        """Begin a group's transaction: its game's lock, its claims held (pbem.runner.inbox.
        hold_claims: the mails still ours and new), then all their senders' locks
        (pbem.store.advisory_locks.senders_writer)."""
        started = time.perf_counter()
        rows = inbox.hold_claims(session, ids, self.clock(), lane)
        senders_writer(session, [sender for row in rows
                                 if (sender := inbox.sender_of(row)) is not None])
        waited = time.perf_counter() - started
        if waits is not None and waited >= LOCK_WAIT_NOTED:
            waits.add("database locks", waited, f"game {lane}")
        return rows

    def route(self, upto: int) -> int:
        """Give stored mail up to id ``upto`` without a lane its lane (lanes_of), a page a
        commit: the first page after the worker giving lanes now, if one is, the next
        ones while no other worker is at it (one that is takes its turn, and this one
        goes to handle the lanes given so far); how many were given."""
        def lane(session: Work, reads: list[inbox.LaneRead]) -> list[int]:
            return lanes_of(session, self.post, reads)
        given = inbox.give_lanes(self.engine, upto, lane, wait=True) or 0
        total = given
        while given == inbox.PAGE:
            given = inbox.give_lanes(self.engine, upto, lane) or 0
            total += given
        return total

    def handle_claimed(self, inbound_id: int, following: int | None,
                       hand_off: HandOff | None = None, *, lane: int | None = None,
                       waits: Waits | None = None, isolated: bool = False,
                       bind: Connection | None = None) -> bool:
        """Handle one claimed mail in one transaction; False if it was not ours to handle.

        The mail was claimed (a lease in its row, committed), so other processes
        leave it alone. The transaction that handles it begins with a write that
        re-checks the claim and that the mail is still new: that takes SQLite's write
        lock (PostgreSQL: the row's lock and the referee's advisory lock), so what the
        transaction reads is current, and of two processes that both got this far the
        second finds the mail done. A database that is locked or gone raises
        OperationalError and leaves the mail new for the next tick. The commit that
        ends the mail also counts the attempt of the ``following`` mail of the page,
        which begins next (pbem.runner.inbox.count_attempt). The mail the transaction queued goes
        to the ``hand_off`` once it is committed (claimed in the transaction, then handed
        over: ``end``).
        A mail of a game's ``lane`` (process_lanes) takes that game's lock and its
        sender's instead of the one writer's; a wait for them is told to ``waits``. The
        transaction runs on ``bind`` when given (a connection not in a transaction: the
        lane's), else on one of the engine's.

        A mail whose handling was cut short before (a crash or a kill: pbem.runner.inbox) is
        handled in a bounded child process (``suspect``), unless this is that child
        (``isolated``).
        """
        with Work(bind or self.engine, keep_queued=hand_off is not None) as session:
            row = self.hold(session, inbound_id, lane, waits)
            if row is None:
                session.rollback()
                if following is not None:   # its attempt is counted on its own then
                    inbox.count_attempt(session, following)
                    session.commit()
                return False
            if inbox.cut_short(row) and not isolated:
                session.rollback()   # its locks are the child's to take
                return self.suspect(session, inbound_id, following, lane, waits, hand_off)
            poison_point(row.raw)
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
            self.end(session, row, following, hand_off)
        return True

    def end(self, session: Work, row: HeldMail, following: int | None,
            hand_off: HandOff | None) -> None:
        """Write how the mail's handling ended, count the ``following`` mail's attempt,
        claim the mail it queued for the ``hand_off``, commit, and hand that mail over."""
        row.processed_at = self.clock()
        session.flush()   # (before the statement below: what is pending goes first)
        inbox.finish(session, row, following)   # the following mail's attempt counted too
        crash_point("inbound-handled")
        claimed = claim(session, hand_off)
        session.commit()
        crash_point("inbound-committed")
        hand_over(claimed, hand_off)

    def suspect(self, session: Work, inbound_id: int, following: int | None,
                lane: int | None, waits: Waits | None, hand_off: HandOff | None) -> bool:
        """A mail whose handling was cut short: was it the mail, or a kill from outside?
        It is handled in a bounded child process (pbem.runner.isolation), claiming as this one;
        a kill of the whole server takes the child with it and tells nothing, so only a
        child that died while this process went on counts against the mail. After
        ISOLATED_TRIES such deaths it is set aside and its sender asked to send it again
        as plain text; the game goes on by its deadline. False if it was not handled
        (the child stopped on an error of its own: the next tick tries again)."""
        deaths: list[isolation.Ending] = []
        while len(deaths) < ISOLATED_TRIES:
            ending = isolation.run_bounded(lambda: self.handle_alone(inbound_id, lane))
            if not ending.died:
                break
            log.warning("mail %s killed its bounded handler (%s)", inbound_id, ending)
            deaths.append(ending)
        with self.engine.connect() as conn:
            still_new = conn.execute(select(InboundMail.status).where(
                col(InboundMail.id) == inbound_id)).scalar_one() == "new"
        row = self.hold(session, inbound_id, lane, waits) if still_new else None
        if row is None:   # handled in the child (or no longer ours)
            session.rollback()
            if following is not None:
                inbox.count_attempt(session, following)
                session.commit()
            return not still_new
        if len(deaths) < ISOLATED_TRIES:   # the child failed of itself, not of the mail
            session.rollback()
            log.error("mail %s: its bounded handler stopped (%s); tried again next tick",
                      inbound_id, ending)
            if following is not None:
                inbox.count_attempt(session, following)
                session.commit()
            return False
        set_aside(session, self.post, row, len(deaths))
        self.end(session, row, following, hand_off)
        return True

    def handle_alone(self, inbound_id: int, lane: int | None) -> None:
        """In a bounded child (claiming as its parent): handle the mail on a connection of
        its own."""
        engine = open_database(self.settings.database, migrate=False,
                               synchronous=self.settings.db.synchronous)
        try:
            Referee(self.settings, engine, self.renderer, self.clock).handle_claimed(
                inbound_id, None, lane=lane, isolated=True)
        finally:
            engine.dispose()

    def hold(self, session: Session, inbound_id: int, lane: int | None,
             waits: Waits | None) -> HeldMail | None:
        """Begin a claimed mail's transaction (pbem.runner.inbox.hold_claim) and read the mail;
        a mail of a game's lane takes its sender's lock too (pbem.store.advisory_locks.sender_writer).
        None when the mail is no longer ours to handle."""
        started = time.perf_counter()
        row = inbox.hold_claim(session, inbound_id, self.clock(), lane)
        if row is None:
            return None
        if lane and (sender := inbox.sender_of(row)) is not None:
            sender_writer(session, sender)
        waited = time.perf_counter() - started
        if waits is not None and waited >= LOCK_WAIT_NOTED:
            waits.add("database locks", waited, f"game {lane}" if lane else "the one writer")
        return row

    def resolve_due(self, waits: Waits | None = None,
                    step: Callable[[], None] | None = None) -> int:
        """The clock work of a tick (pbem.services.clock): outage shift, vacations,
        reminders, grace, and the resolution of due turns; returns how many turns resolved.
        The games whose clock work another worker's claim held back are told to ``waits``;
        ``step`` is called after each game's."""
        left: list[int] = []
        resolved = clock.clock_tick(self.engine, self.post, self.clock(), left, step)
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
                    # the same error goes on, with what the shell shows of it
                    exc.add_note(self.command_failed(session, parsed.orders, exc))
                    raise
                session.commit()
            return out
        finally:
            lease.release()

    def command_failed(self, session: Work, orders: list[Order], exc: Exception) -> str:
        """A referee command hit a bug: its game's referee and players are told (as when the
        clock fails); returns what the shell prints (pbem.cli.cmd_admin: the error's last
        note)."""
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
        with Work(self.engine) as session:
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

    def undeliverable(self, session: Work, row: OutboundMail, failure: Undelivered) -> None:
        """The outbox gave up on a mail: a refused recipient is a bounce, anything else is
        told to the referee (pbem.services.bounces.undeliverable)."""
        undeliverable(session, self.post, row, failure)

    def budget_short(self, session: Work, short: Shortfall) -> None:
        """The send budget is short for the mail due: the referee is told (once a day)."""
        budget_short(session, self.post, short)
