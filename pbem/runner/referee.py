"""The referee: the stored mail handled, each mail in its own transaction, the clock's
work, and referee commands from the shell.

It claims the stored mail (a page at a time on SQLite, a game's lane at a time on
PostgreSQL) and runs each mail's transaction (pbem.runner.mail_transaction), which hands the
mail to pbem.runner.triage, which reads it and dispatches its commands. What a command does
lives in pbem.commands; what it shares with the clock (turns, mail) in pbem.services.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Connection
from sqlmodel import Session

from pbem.commands.context import CommandContext
from pbem.commands.registry import (
    referee_commands,
    run,
)
from pbem.mail.text import BodyLine
from pbem.orders.commands import Order
from pbem.orders.parsing import parse_text
from pbem.outbox import Shortfall, Undelivered
from pbem.runner import inbox, lanes, storing
from pbem.runner.mail_transaction import HandOff, MailTransactions
from pbem.runner.triage import find_game_or_none, lanes_of
from pbem.services import clock, failures
from pbem.services.bounces import undeliverable
from pbem.services.failures import game_failed, what_failed
from pbem.services.post import budget_short
from pbem.services.progress import Marks, unmarked
from pbem.store.advisory_locks import lanes_apart, one_writer
from pbem.store.claims import Lease, Waits
from pbem.store.models import OutboundMail
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import _, _n

log = logging.getLogger(__name__)

GROUP = 10               # a game's lane's mails handled in one transaction (PostgreSQL)


class Referee(MailTransactions):
    """Handles stored mail, runs the clock work and referee commands from the shell."""

    def store_inbound(self, raw: bytes, *, source: str, envelope_from: str | None = None,
                      imap_key: str | None = None, truncated: bool = False,
                      size: int | None = None) -> bool:
        """Keep the raw mail (pbem.runner.storing.store_inbound); False if seen before."""
        return storing.store_inbound(self.engine, raw, now=self.clock(),
                                   max_bytes=self.settings.max_mail_bytes, source=source,
                                   envelope_from=envelope_from, imap_key=imap_key,
                                   truncated=truncated, size=size)

    def store_many(self, mails: list[tuple[bytes, str, bool, int]], *, source: str) -> int:
        """Keep a batch of fetched mails in one transaction (pbem.runner.storing.store_many)."""
        return storing.store_many(self.engine, mails, now=self.clock(),
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
        whose oldest mail came first first (pbem.runner.lanes.claim_lane); a lane another worker
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
                for lane in lanes.waiting_lanes(self.engine, upto):
                    group = GROUP if lane != lanes.NO_GAME else 1
                    page, holder = lanes.claim_lane(conn, self.clock(), lease, lane,
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

    def route(self, upto: int) -> int:
        """Give stored mail up to id ``upto`` without a lane its lane (lanes_of), a page a
        commit: the first page after the worker giving lanes now, if one is, the next
        ones while no other worker is at it (one that is takes its turn, and this one
        goes to handle the lanes given so far); how many were given."""
        def lane(session: Work, reads: list[lanes.LaneRead]) -> list[int]:
            return lanes_of(session, self.post, reads)
        given = lanes.give_lanes(self.engine, upto, lane, wait=True) or 0
        total = given
        while given == inbox.PAGE:
            given = lanes.give_lanes(self.engine, upto, lane) or 0
            total += given
        return total

    def resolve_due(self, waits: Waits | None = None,
                    step: Callable[[], None] | None = None, *, draft: bool = False) -> int:
        """The clock work of a tick (pbem.services.clock): outage shift, vacations,
        reminders, grace, and the resolution of due turns; returns how many turns resolved.
        The games whose clock work another worker's claim held back are told to ``waits``;
        ``step`` is called after each game's; ``draft``: the turns' reports queued as
        drafts for the tick's composer (else made with the turn)."""
        left: list[int] = []
        resolved = clock.clock_tick(self.engine, self.post, self.clock(), left, step,
                                    draft=draft)
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
