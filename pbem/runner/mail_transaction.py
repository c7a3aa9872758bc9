"""A claimed mail, or several of a game's lane, handled in one database transaction.

Reading, authorising, checking and recording an order, the answer to the sender and
(when the mail completes a turn) the turn's reports are committed together or not at
all. The mail's row is marked done in that same transaction, so a crash before the
commit leaves it to be handled again and a crash after it leaves nothing to redo. A mail
whose handling was cut short before is handled in a bounded child process
(pbem.runner.isolation), and set aside when it kills that child twice.

Which mail is handled when (pages on SQLite, a game's lane at a time on PostgreSQL) is
pbem.runner.referee's; what a mail says and asks, pbem.runner.triage's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from pbem.config import Settings
from pbem.render.reports import Renderer
from pbem.runner import inbox, isolation
from pbem.runner.composer import Composing
from pbem.runner.triage import answer_internal_error, handle, readable, set_aside
from pbem.services.failures import mail_failed
from pbem.services.post import Post
from pbem.services.progress import Marks
from pbem.store.advisory_locks import sender_writer, senders_writer
from pbem.store.bodies import HeldMail
from pbem.store.claims import Waits
from pbem.store.db import open_database
from pbem.store.engines import transient_error
from pbem.store.faults import crash_point, poison_point
from pbem.store.models import InboundMail
from pbem.store.work import Work

# its lines under the referee's name, where operators find a mail's failures
log = logging.getLogger("pbem.runner.referee")


class HandOff(Protocol):
    """Who sends a transaction's mail as soon as it commits (pbem.outbox.Stream over SMTP,
    pbem.outbox.Inline for the .eml outbox)."""

    def claim(self, work: Work) -> list[Any]:
        """Claim what ``work`` queued, in its transaction, just before its commit."""

    def feed(self, rows: list[Any]) -> None:
        """Send what ``claim`` returned, now committed."""


def drafts_reports(hand_off: HandOff | None) -> bool:
    """The hand-off's answer for the transaction about to begin: whether the turns it plays
    have their reports queued as drafts for the tick's composer (pbem.runner.composer.
    Composing.drafting: the tick has reported enough turns); else (below that, or any other
    hand-off, or none) they are made with the turn, in its transaction."""
    return isinstance(hand_off, Composing) and hand_off.drafting()


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
LOCK_WAIT_NOTED = 0.01   # a mail's locks took this long (seconds): a wait, told to Waits


@dataclass
class MailTransactions:
    """Handles claimed mail, a transaction a mail (or a game's group of mails)."""

    settings: Settings
    engine: Engine
    renderer: Renderer
    clock: Callable[[], datetime]
    post: Post = field(init=False)

    def __post_init__(self) -> None:
        self.post = Post(self.settings, self.renderer, self.clock)

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
                row.outcome = handle(session, self.post, row,
                                     draft_reports=drafts_reports(hand_off))
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
        draft_reports = drafts_reports(hand_off)
        with Work(conn, keep_queued=hand_off is not None) as session:
            rows = self.hold_group(session, ids, lane, waits)
            if [row.id for row in rows] != ids or any(inbox.cut_short(row) for row in rows):
                session.rollback()
                return None
            for row in rows:
                marks("mail>")
                poison_point(row.raw)
                try:
                    row.outcome = handle(session, self.post, row, draft_reports=draft_reports)
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
            MailTransactions(self.settings, engine, self.renderer, self.clock).handle_claimed(
                inbound_id, None, lane=lane, isolated=True)
        finally:
            engine.dispose()
