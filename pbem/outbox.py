"""The outbox: mail is queued in the same transaction as the change that
caused it, and a sender drains the queue, retrying with back-off.

Rows are claimed (claimed_by/claimed_at, a lease) a page at a time before
their SMTP hand-off, and each is marked sent right after its own hand-off, one
commit a mail, so a crash in the middle of a drain can repeat at most the mail
in flight on each connection (one with ``connections=1``), and such a mail
carries the same Message-ID both times; two senders never send the same row.
Claims of a process that died are taken over at once (pbem.faults.claim_stale).
The mails of a page to one address leave in queue order: the next one goes out,
over whichever connection is free, only once the one before it is handed off.

A server that cannot be reached (or says 421) stops the drain without
counting against any mail; a 4xx for a recipient defers that mail with
back-off; a 5xx fails it at once and the referee is told (on_failure), and
the other mails go on.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Engine, bindparam, insert, update
from sqlalchemy import select as select_columns  # sqlmodel's select takes at most 4
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from pbem.faults import aware, claim_many, claim_stale, crash_point, me
from pbem.mail.bounces import Bounce, new_bounce_token, verp_address
from pbem.mail.compose import build_mail, make_message_id
from pbem.mail.remote_content import without_remote_content
from pbem.mail.smtp_out import SendResult
from pbem.models import OutboundMail
from pbem.work import Queued as Queued  # what enqueue returns
from pbem.work import Work

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 12                     # a deferred mail is given up after this many tries
GIVE_UP_AFTER = timedelta(days=2)     # ... and this long (MTAs wait days, so do we)
CLAIM_LEASE = timedelta(minutes=5)
PAGE = 50                             # outbox rows claimed in one transaction
DUE_CHUNK = 2000                      # due rows read at once: memory stays flat
MAILS_PER_CONNECTION = 4              # a page of fewer mails opens fewer connections
LOOP_HEADER = "X-Pbem-Loop"


class Sender(Protocol):
    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult: ...


@dataclass(frozen=True)
class Origin:
    """Identity of the server as a sender of mail."""

    address: str
    name: str = "Bluff referee"

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"


_INSERT = insert(OutboundMail).returning(col(OutboundMail.id))


def enqueue(session: Session, origin: Origin, *, kind: str, to: str, subject: str,
            text: str, html: str | None, now: datetime,
            attachments: Sequence[tuple[str, str, bytes]] = (),
            in_reply_to: str | None = None, references: Sequence[str] = (),
            game_id: int | None = None, seat: int | None = None, turn: int | None = None,
            inbound_id: int | None = None, auto_submitted: str | None = None,
            shipped_html: bool = False) -> Queued:
    """Queue one mail: a row inserted in the session's transaction (a unit of work keeps
    it in its ``queued``: a Stream claims it there). Auto-Submitted (RFC
    3834) is "auto-replied" for a mail that answers one (``in_reply_to``), else
    "auto-generated", unless ``auto_submitted`` says. The HTML loses any remote content
    (a referee's own templates may add some) unless ``shipped_html`` says it comes from
    the shipped templates, which have none."""
    message_id = make_message_id(origin.domain, kind)
    auto_submitted = auto_submitted or ("auto-replied" if in_reply_to else "auto-generated")
    if html is not None and not shipped_html:
        html = without_remote_content(html)
    raw = build_mail(from_addr=origin.address, from_name=origin.name, to_addrs=[to],
                     subject=subject, text=text, html=html, attachments=attachments,
                     message_id=message_id, in_reply_to=in_reply_to, references=references,
                     auto_submitted=auto_submitted, loop_header=(LOOP_HEADER, origin.address),
                     date=now)
    rcpts_json, bounce_token = json.dumps([to]), new_bounce_token()
    values = {"message_id": message_id, "kind": kind, "mail_from": origin.address,
              "rcpts_json": rcpts_json, "raw": raw, "game_id": game_id, "seat": seat,
              "turn": turn, "inbound_id": inbound_id, "status": "pending", "attempts": 0,
              "next_attempt_at": now, "created_at": now, "bounce_token": bounce_token}
    # Core, not an ORM object: a turn queues a mail a player, and an object in the session
    # costs its flush and the commit's bookkeeping (about a tenth of `pbem demo`'s ticks)
    session.flush()   # what is pending first (none: a no-op), in the order the code made it
    row_id = session.connection().execute(_INSERT, values).scalar_one()
    assert row_id is not None
    row = Queued(row_id, message_id, origin.address, bounce_token, rcpts_json, raw)
    if isinstance(session, Work):   # what a Stream claims as the transaction commits
        session.queued.append(row)
    crash_point("outbox-enqueued")
    return row


def backoff(attempts: int) -> timedelta:
    """1, 2, 4 ... minutes, at most an hour between tries."""
    return timedelta(minutes=min(60, 2 ** max(0, attempts - 1)))


@dataclass
class DrainReport:
    sent: int = 0
    deferred: int = 0
    failed: int = 0
    unavailable: bool = False   # the mail server could not be reached: try again later
    released: int = 0           # claimed and left unsent (an error): for the next drain


def drain(engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
          now: Callable[[], datetime], *,
          on_failure: Callable[[Session, OutboundMail, str], None] | None = None,
          limit: int | None = None, lease: timedelta = CLAIM_LEASE,
          rounds: int = 3, verp: bool = False, connections: int = 1,
          page: int = PAGE) -> DrainReport:
    """Send every pending mail that is due; return what happened.

    Due mail is claimed ``page`` rows in one transaction and sent over up to
    ``connections`` senders at once (one thread and one ``open_sender()`` each);
    each mail is marked sent right after its hand-off, before its sender takes
    the next one (marks that meet are committed together), so a crash repeats at
    most the mail each sender has in flight. Claimed mail left unsent (the server
    became unavailable, an error) is released at once.

    Mail queued while draining (the referee's notice of an undeliverable mail)
    goes out in the same drain, in up to ``rounds`` passes; a pass that failed no
    mail queued nothing, so none follows it (mail queued meanwhile by another
    process waits for the next drain). With ``verp`` each
    mail's envelope sender is its own VERP address (``envelope_sender``).
    """
    if connections < 1 or page < 1:
        raise ValueError("connections and page must be >= 1")
    with _Drain(engine, open_sender, now, on_failure, connections) as run:
        for _ in range(rounds):
            found_any, after, left = False, 0, limit
            failed_before = run.report.failed
            while left is None or left > 0:   # the due mail read a chunk at a time
                chunk = DUE_CHUNK if left is None else min(DUE_CHUNK, left)
                due, looked, after = _due(engine, now(), lease, after, chunk)
                if not looked:
                    break
                left = None if left is None else left - looked
                found_any = found_any or bool(due)
                for start in range(0, len(due), page):
                    run.send(_claim_page(engine, due[start:start + page], now(), verp))
                    if run.report.unavailable:
                        return run.report
                if looked < chunk:   # that was the last of it: no read to learn so
                    break
            # another pass only for what this one queued: the notices of failed mail
            if not found_any or run.report.failed == failed_before:
                break
    return run.report


@dataclass(frozen=True)
class _Claimed:
    """A mail claimed for sending: what the hand-off needs."""

    id: int
    mail_from: str      # the envelope sender
    rcpts: list[str]
    raw: bytes

    @classmethod
    def of(cls, row: Any, verp: bool) -> _Claimed:
        """What sending ``row`` needs (an OutboundMail, or a row of its id, message_id,
        mail_from, bounce_token, rcpts_json and raw)."""
        return cls(row.id, envelope_sender(row, verp), json.loads(row.rcpts_json), row.raw)


class _ByAddress:
    """A claimed page's mails waiting for a connection. A mail is ready once the mail
    queued before it to the same address is handed off (and marked), so the mails to
    one address leave in queue order, never two at once, over whichever connection is
    free. Of the addresses ready, the one with the most mails waiting goes first: its
    chain would otherwise finish last (a turn's answer and report to each of five
    players over four connections: three rounds, not the four of one connection an
    address)."""

    def __init__(self, rows: list[_Claimed], *, more: bool = False) -> None:
        self._waiting: dict[tuple[str, ...], deque[_Claimed]] = {}
        self._busy: set[tuple[str, ...]] = set()
        self._changed = threading.Condition()
        self._stopped = False
        self._more = more        # mail may still be added (a Stream): take() waits for it
        self.waiting = 0         # mails not taken yet
        self.add(rows)

    def add(self, rows: list[_Claimed]) -> None:
        """More mail, queued after all there is (a Stream's next transaction)."""
        with self._changed:
            for row in rows:
                self._waiting.setdefault(tuple(row.rcpts), deque()).append(row)
            self.waiting += len(rows)
            self._changed.notify_all()

    def close(self) -> None:
        """No more mail will be added: take() returns None once all is taken."""
        with self._changed:
            self._more = False
            self._changed.notify_all()

    @property
    def addresses(self) -> int:
        return len(self._waiting)

    def take(self) -> _Claimed | None:
        """The next mail to send; waits while only addresses with a mail in flight have
        mail left. None once no mail is left to take, or after stop()."""
        with self._changed:
            while not self._stopped:
                ready = [key for key, rows in self._waiting.items()
                         if rows and key not in self._busy]
                if ready:
                    key = max(ready, key=lambda k: (len(self._waiting[k]),
                                                    -self._waiting[k][0].id))
                    self._busy.add(key)
                    self.waiting -= 1
                    return self._waiting[key].popleft()
                if not self._more and not any(self._waiting.values()):
                    return None
                self._changed.wait()
            return None

    def handed_off(self, row: _Claimed) -> None:
        """``row`` is handed off: the next mail to its address is ready."""
        key = tuple(row.rcpts)
        with self._changed:
            self._busy.discard(key)
            if not self._waiting.get(key):
                self._waiting.pop(key, None)
            self._changed.notify_all()

    def stop(self) -> None:
        """No more mail is taken (an outage, an error): the waiting connections return."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()


class _Drain:
    """The senders of one drain (opened when first needed, closed at its end) and
    what happened."""

    def __init__(self, engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
                 now: Callable[[], datetime],
                 on_failure: Callable[[Session, OutboundMail, str], None] | None,
                 connections: int) -> None:
        self.engine, self.open_sender, self.now = engine, open_sender, now
        self.on_failure = on_failure
        self.senders: list[Sender | None] = [None] * connections
        self.report = DrainReport()
        self._stack = ExitStack()
        self._lock = threading.Lock()
        self._writing = threading.Lock()   # our threads take turns to write, not SQLite's
        self._queued: list[int] = []        # busy wait; marks queued meanwhile go together
        self._marks: dict[int, bool] = {}

    def __enter__(self) -> _Drain:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the senders opened (an SMTP pool takes its connections back)."""
        self._stack.close()

    def _sender(self, slot: int) -> Sender:
        sender = self.senders[slot]
        if sender is None:
            with self._lock:
                sender = self.senders[slot] = self._stack.enter_context(self.open_sender())
        return sender

    def send(self, rows: list[_Claimed]) -> None:
        """Send a claimed page over the senders; release what was left unsent. The mails
        to one address leave in the order they were queued (_ByAddress): a player's
        answers to two mails, a report and the next turn's."""
        schedule = _ByAddress(rows)
        done: set[int] = set()
        errors: list[BaseException] = []

        def work(slot: int) -> None:
            self.work(schedule, slot, done.add, errors)

        workers = min(len(self.senders), -(-len(rows) // MAILS_PER_CONNECTION),
                      schedule.addresses)
        try:
            if workers <= 1:
                work(0)
            else:
                threads = [threading.Thread(target=work, args=(slot,), name=f"pbem-send-{slot}")
                           for slot in range(workers)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
        finally:
            left = [row.id for row in rows if row.id not in done]
            if left:
                _release(self.engine, left)
        if errors:
            raise errors[0]

    def work(self, schedule: _ByAddress, slot: int, handed_off: Callable[[int], None],
             errors: list[BaseException]) -> None:
        """One connection's work: send what ``schedule`` gives it until it gives nothing,
        the server is unavailable or another connection failed; each id handed off goes
        to ``handed_off``, an error to ``errors`` (the caller re-raises it)."""
        try:
            while True:
                row = schedule.take()
                if row is None or self.report.unavailable or errors:
                    return   # (a row taken is left unsent: the caller releases it)
                self._send_one(slot, row)
                handed_off(row.id)
                if self.report.unavailable:
                    schedule.stop()   # before the next mail to the address is ready
                schedule.handed_off(row)
        except BaseException as exc:
            errors.append(exc)
            schedule.stop()

    def _send_one(self, slot: int, row: _Claimed) -> None:
        crash_point("outbox-claimed")
        result = self._sender(slot).send(row.mail_from, row.rcpts, row.raw)
        crash_point("outbox-handed-off")
        counted = DrainReport(sent=1)
        if not (result.ok and not result.unavailable and self._marked_sent(row.id)):
            with self._writing:
                counted = self._mark(row, result)
        crash_point("outbox-marked")
        with self._lock:
            self.report.sent += counted.sent
            self.report.deferred += counted.deferred
            self.report.failed += counted.failed
            if result.unavailable:
                self.report.unavailable = True   # the others stop after their mail in hand

    def _marked_sent(self, row_id: int) -> bool:
        """Mark a mail sent; False when our claim on it was taken over. The marks of the
        mails other connections handed off while this one waited to write are committed
        with it (a group commit): each connection still waits for its own mark before
        its next mail, so a crash repeats at most one mail a connection."""
        with self._lock:
            self._queued.append(row_id)
        with self._writing:
            if row_id not in self._marks:
                with self._lock:
                    batch, self._queued = self._queued, []
                try:
                    marked = _mark_sent(self.engine, batch, self.now())
                except BaseException:   # the others' marks wait for the next of them
                    with self._lock:
                        self._queued[:0] = [i for i in batch if i != row_id]
                    raise
                self._marks.update((i, i in marked) for i in batch)
            return self._marks.pop(row_id)

    def _mark(self, row: _Claimed, result: SendResult) -> DrainReport:
        """Record what the hand-off did (deferred, failed: on_failure; sent when our claim
        was taken over) and release our claim."""
        counted = DrainReport()
        with Session(self.engine) as session:
            mail = session.get(OutboundMail, row.id)
            assert mail is not None
            if mail.claimed_by != me():
                log.warning("mail %s: our claim was taken over while sending", mail.message_id)
            _record(session, mail, result, self.now(), counted, self.on_failure)
            mail.claimed_by = mail.claimed_at = None
            session.add(mail)
            session.commit()
        return counted


# a Stream's transaction claims the mail it queued, at its end (pending, unclaimed: what
# it did not take back)
_CLAIM_QUEUED = update(OutboundMail).where(
    col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
    col(OutboundMail.status) == "pending", col(OutboundMail.claimed_by).is_(None),
).values(claimed_by=bindparam("me"), claimed_at=bindparam("now")).returning(col(OutboundMail.id))


class Stream:
    """Mail sent while the tick still handles mail.

    A handling transaction (a pbem.work.Work) claims the mail it queued for this process
    as it ends (``claim``: no claim transaction of its own, no read of the
    outbox); once it commits, ``feed`` hands that mail to the connections, which send it at
    once, in queue order to each address (_ByAddress), each marked sent right after its
    hand-off as a drain's is. So a turn's answers leave while the next orders are
    handled. ``close`` waits for what was fed and releases what was left unsent (an
    outage, an error: the next drain sends it).

    A crash after the commit and before the hand-off leaves the mail claimed by a dead
    process: the next drain takes it over at once (pbem.faults.claim_stale), as it
    does a drain's claimed page.
    """

    def __init__(self, engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
                 now: Callable[[], datetime], *,
                 on_failure: Callable[[Session, OutboundMail, str], None] | None = None,
                 verp: bool = False, connections: int = 1, backlog: int = 4 * PAGE) -> None:
        if connections < 1 or backlog < 1:
            raise ValueError("connections and backlog must be >= 1")
        self.engine, self.verp = engine, verp
        # mails fed and not taken yet, at most: a handling faster than the connections (a
        # big turn) leaves the rest to the drain, a page at a time, and memory stays flat
        # (about 60 KB a report: some 12 MB)
        self.backlog = backlog
        self._behind = False
        self._run = _Drain(engine, open_sender, now, on_failure, connections)
        self._schedule = _ByAddress([], more=True)
        self._threads: list[threading.Thread] = []
        self._addresses: set[tuple[str, ...]] = set()
        self._unsent: set[int] = set()       # fed and not handed off yet
        self._errors: list[BaseException] = []

    def claim(self, work: Work) -> list[_Claimed]:
        """Claim what ``work`` queued and still holds for the stream, last thing before
        its commit; fed after it. Until then the transaction's mail is unclaimed, as any
        queued mail: what the transaction took back is not claimed (a row deleted, a
        savepoint rolled back: START drops a welcome not sent yet; a report cancelled):
        the claim takes only rows still there, pending and unclaimed. SQLite may give the
        id of a row rolled back to a row queued after it: the later one is the row."""
        rows = list({row.id: row for row in work.queued}.values())
        work.queued.clear()
        if not rows:
            return []
        if self._behind or self._schedule.waiting >= self.backlog:
            # the connections are behind: this and all later mail is the tick's drain's
            # at its end (so what is queued later to an address never leaves first)
            self._behind = True
            return []
        work.flush()   # a row deleted or cancelled through the ORM is not claimed
        claimed = set(work.connection().execute(_CLAIM_QUEUED, {
            "ids": [row.id for row in rows], "me": me(), "now": self._run.now()}).scalars())
        return [_Claimed.of(row, self.verp) for row in rows if row.id in claimed]

    def feed(self, rows: list[_Claimed]) -> None:
        """Send ``rows`` (committed, claimed by us) as soon as a connection is free."""
        if not rows:
            return
        self._unsent.update(row.id for row in rows)
        self._schedule.add(rows)
        if len(self._threads) == len(self._run.senders):
            return
        # a connection for each address with mail, up to the limit: more would wait
        self._addresses.update(tuple(row.rcpts) for row in rows)
        while len(self._threads) < min(len(self._run.senders), len(self._addresses)):
            slot = len(self._threads)
            # a daemon: a stream never closed (a bug, an error between feed and close)
            # must not keep the process from exiting; its claims run out as a dead one's
            thread = threading.Thread(target=self._run.work, name=f"pbem-stream-{slot}",
                                      args=(self._schedule, slot, self._unsent.discard,
                                            self._errors), daemon=True)
            self._threads.append(thread)
            thread.start()

    def close(self) -> DrainReport:
        """Wait until what was fed is sent; release the rest; what happened. An error
        of a connection is logged (the mail it held is released: the next drain)."""
        self._schedule.close()
        try:
            for thread in self._threads:
                thread.join()
        finally:
            if self._unsent:
                _release(self.engine, sorted(self._unsent))
                self._run.report.released += len(self._unsent)
            self._run.close()
        for exc in self._errors:
            log.error("sending while handling failed; the drain will send the rest",
                      exc_info=exc)
        return self._run.report


def envelope_sender(row: Any, verp: bool) -> str:
    """The MAIL FROM of a mail (an OutboundMail, or a row with its mail_from, bounce_token
    and message_id): the server's address, or with VERP its +b.<token> form."""
    if verp and row.bounce_token:
        try:
            return verp_address(row.mail_from, row.bounce_token)
        except ValueError:
            log.warning("mail %s: no VERP address for %s", row.message_id, row.mail_from)
    return str(row.mail_from)


@dataclass(frozen=True)
class BouncedMail:
    """A bounce matched to the mail of ours it is for."""

    mail: OutboundMail
    address: str           # the recipient whose delivery failed
    permanent: bool
    reason: str
    via: str               # "verp" | "message-id"


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


def _pending_due(when: datetime) -> tuple[Any, Any]:
    """Where a drain looks: pending mail due by ``when``."""
    return OutboundMail.status == "pending", col(OutboundMail.next_attempt_at) <= when


def others_due(engine: Engine, when: datetime) -> bool:
    """Is any pending mail due by ``when`` that this process does not hold (what a drain
    would look at, but for the mail a Stream of ours is sending)? Asked while a Stream's
    last mails are on their way, so the tick's drain after it can be skipped when there
    is none."""
    with Session(engine) as session:
        return session.execute(
            select(OutboundMail.id)
            .where(*_pending_due(when),
                   col(OutboundMail.claimed_by).is_(None) | (col(OutboundMail.claimed_by) != me()))
            .limit(1)).first() is not None


def _due(engine: Engine, when: datetime, lease: timedelta, after: int,
         limit: int) -> tuple[list[tuple[int, str | None]], int, int]:
    """Up to ``limit`` pending mails due by ``when`` with ids after ``after``: (those free
    to claim, with their claimer seen; how many were looked at; the last id looked at)."""
    with Session(engine) as session:
        rows = session.exec(
            select(OutboundMail.id, OutboundMail.claimed_by, OutboundMail.claimed_at)
            .where(*_pending_due(when), col(OutboundMail.id) > after)
            .order_by(col(OutboundMail.id)).limit(limit)).all()
    free = [(row_id, owner) for row_id, owner, at in rows
            if row_id is not None and claim_stale(owner, at, when, lease)]
    return free, len(rows), (rows[-1][0] or 0) if rows else after


def _claim_page(engine: Engine, due: list[tuple[int, str | None]], when: datetime,
                verp: bool) -> list[_Claimed]:
    """Claim the free or stale rows of ``due`` in one transaction (pbem.faults.claim_many:
    only one process gets each) and read what sending them needs."""
    with Session(engine) as session:
        got = claim_many(session, OutboundMail, due, when, status="pending")
        rows = session.execute(select_columns(*(col(c) for c in (
            OutboundMail.id, OutboundMail.message_id, OutboundMail.mail_from,
            OutboundMail.bounce_token, OutboundMail.rcpts_json, OutboundMail.raw)))
            .where(col(OutboundMail.id).in_(got))
            .order_by(col(OutboundMail.id))).all() if got else []
        claimed = [_Claimed.of(row, verp) for row in rows]
        session.commit()
    return claimed


# built once: one statement a mail sent
_MARK_SENT = update(OutboundMail).where(
    col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
    col(OutboundMail.claimed_by) == bindparam("me"), col(OutboundMail.status) == "pending",
).values(status="sent", sent_at=bindparam("when"), attempts=col(OutboundMail.attempts) + 1,
         claimed_by=None, claimed_at=None)


def _mark_sent(engine: Engine, row_ids: list[int], when: datetime) -> set[int]:
    """Mark mails we hold the claim of sent, in one transaction; the ids so marked (one
    whose claim is no longer ours is left to _Drain._mark)."""
    def mark(ids: list[int]) -> int:
        return int(conn.execute(_MARK_SENT, {"ids": ids, "me": me(), "when": when}).rowcount)

    with engine.connect() as conn:
        if mark(row_ids) == len(row_ids):
            conn.commit()
            return set(row_ids)
        conn.rollback()     # not all ours any more (rare): one by one
        marked = {row_id for row_id in row_ids if mark([row_id]) == 1}
        conn.commit()
        return marked


def _release(engine: Engine, row_ids: list[int]) -> None:
    """Give up our claim on mail we did not send (still pending): free for the next drain."""
    try:
        with Session(engine) as session:
            session.execute(update(OutboundMail).where(
                col(OutboundMail.id).in_(row_ids), col(OutboundMail.claimed_by) == me(),
                col(OutboundMail.status) == "pending").values(claimed_by=None, claimed_at=None))
            session.commit()
    except OperationalError as exc:   # the claims run out with their lease
        log.warning("could not release the claims of %d unsent mails: %s", len(row_ids), exc)


def _record(session: Session, row: OutboundMail, result: SendResult, when: datetime,
            report: DrainReport, on_failure: Callable[[Session, OutboundMail, str], Any] | None) -> None:
    if result.unavailable and not result.accepted and not result.permanent:
        # the service is down, not this mail: no try is counted, the server backs off
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.temporary.items())
        report.deferred += 1
        log.info("mail %s not sent, the mail server is unavailable: %s", row.message_id,
                 row.last_error)
        session.add(row)
        return
    row.attempts += 1
    if result.permanent and not result.temporary:
        row.status = "failed"
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.permanent.items())
        report.failed += 1
        log.warning("mail %s refused for good: %s", row.message_id, row.last_error)
        if on_failure is not None:
            on_failure(session, row, row.last_error)
    elif result.temporary:
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.temporary.items())
        if row.attempts >= MAX_ATTEMPTS and when - aware(row.created_at) >= GIVE_UP_AFTER:
            row.status = "failed"
            report.failed += 1
            log.warning("mail %s given up after %d tries: %s", row.message_id, row.attempts,
                        row.last_error)
            if on_failure is not None:
                on_failure(session, row, f"gave up after {row.attempts} tries: {row.last_error}")
        else:
            row.next_attempt_at = when + backoff(row.attempts)
            report.deferred += 1
            log.info("mail %s deferred: %s", row.message_id, row.last_error)
    else:
        row.status = "sent"
        row.sent_at = when
        report.sent += 1
    session.add(row)
