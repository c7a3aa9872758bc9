"""The connections that send claimed mail: a page's mails waiting for a free
connection (ByAddress: one address's mails in queue order), and the senders with the
marks of what each hand-off did (Connections), shared by a drain and a Stream."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from datetime import datetime
from typing import Protocol

from sqlalchemy import Connection, Engine

from pbem.mail.smtp_out import SendResult
from pbem.outbox import table
from pbem.outbox.table import Claimed, DrainReport, OnFailure
from pbem.store.claims import me
from pbem.store.faults import crash_point
from pbem.store.models import OutboundMail
from pbem.store.work import Work

log = logging.getLogger(__name__)

MAILS_PER_CONNECTION = 4              # a page of fewer mails opens fewer connections


class Sender(Protocol):
    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult: ...


class ByAddress:
    """A claimed page's mails waiting for a connection. A mail is ready once the mail
    queued before it to the same address is handed off (and marked), so the mails to
    one address leave in queue order, never two at once, over whichever connection is
    free. Of the addresses ready, the one with the most mails waiting goes first: its
    chain would otherwise finish last (a turn's answer and report to each of five
    players over four connections: three rounds, not the four of one connection an
    address)."""

    def __init__(self, rows: list[Claimed], *, more: bool = False) -> None:
        self._waiting: dict[tuple[str, ...], deque[Claimed]] = {}
        self._busy: set[tuple[str, ...]] = set()
        self._changed = threading.Condition()
        self._stopped = False
        self._more = more        # mail may still be added (a Stream): take() waits for it
        self.waiting = 0         # mails not taken yet
        self.add(rows)

    def add(self, rows: list[Claimed]) -> None:
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

    def take(self) -> Claimed | None:
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

    def handed_off(self, row: Claimed) -> None:
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


class Connections:
    """The senders of one drain (opened when first needed, closed at its end) and
    what happened."""

    def __init__(self, engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
                 now: Callable[[], datetime],
                 on_failure: OnFailure | None,
                 connections: int,
                 unreleased: Callable[[list[int]], object] | None = None,
                 defer_marks: bool = False) -> None:
        self.engine, self.open_sender, self.now = engine, open_sender, now
        # with defer_marks a mail handed off is not marked sent here: it waits in
        # ``unmarked`` for its caller's next transaction to mark it (pbem.outbox.Inline)
        self.defer_marks = defer_marks
        self.unmarked: list[Claimed] = []
        self.on_failure = on_failure
        self.unreleased = unreleased   # told the claims release could not give back
        self.senders: list[Sender | None] = [None] * connections
        self.report = DrainReport()
        self._stack = ExitStack()
        self._lock = threading.Lock()
        self._writing = threading.Lock()   # our threads take turns to write, not SQLite's
        self._queued: list[int] = []        # busy wait; marks queued meanwhile go together
        self._marks: dict[int, bool] = {}
        self._marking: Connection | None = None   # the marks' connection, once one is made

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the senders opened (an SMTP pool takes its connections back) and the
        marks' connection."""
        try:
            self._stack.close()
        finally:
            marking, self._marking = self._marking, None
            if marking is not None:
                marking.close()

    def _sender(self, slot: int) -> Sender:
        sender = self.senders[slot]
        if sender is None:
            with self._lock:
                sender = self.senders[slot] = self._stack.enter_context(self.open_sender())
        return sender

    def send(self, rows: list[Claimed]) -> None:
        """Send a claimed page over the senders; release what was left unsent. The mails
        to one address leave in the order they were queued (ByAddress): a player's
        answers to two mails, a report and the next turn's."""
        schedule = ByAddress(rows)
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
            self.release([row.id for row in rows if row.id not in done])
        if errors:
            raise errors[0]

    def release(self, row_ids: list[int]) -> None:
        """Give back our claims on mail left unsent; those the database did not take back
        (it is gone) are told to ``unreleased``."""
        left = table.release(self.engine, row_ids)
        if left and self.unreleased is not None:
            self.unreleased(left)

    def work(self, schedule: ByAddress, slot: int, handed_off: Callable[[int], None],
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

    def _send_one(self, slot: int, row: Claimed) -> None:
        crash_point("outbox-claimed")
        result = self._sender(slot).send(row.mail_from, row.rcpts, row.raw)
        crash_point("outbox-handed-off")
        counted = DrainReport(sent=1)
        if result.ok and not result.unavailable and self.defer_marks:
            with self._lock:
                self.unmarked.append(row)   # marked with the next transaction's commit
        else:
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
            if result.rate_limited:
                self.report.rate_limited = True

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
                    if self._marking is None:
                        self._marking = table.marking(self.engine)
                    marked = table.mark_sent(self._marking, batch, self.now())
                except BaseException:   # the others' marks wait for the next of them
                    with self._lock:
                        self._queued[:0] = [i for i in batch if i != row_id]
                    raise
                self._marks.update((i, i in marked) for i in batch)
            return self._marks.pop(row_id)

    def marked_late(self, rows: list[Claimed], marked: set[int]) -> None:
        """The deferred marks of ``rows`` are committed, those in ``marked`` taken: a mail
        whose claim was no longer ours is recorded sent by itself (``_mark``)."""
        for row in rows:
            if row.id not in marked:
                with self._writing:
                    self._mark(row, SendResult(accepted=row.rcpts))
            crash_point("outbox-marked")

    def mark_unmarked(self, rows: list[Claimed]) -> None:
        """Mark ``rows`` (handed off, their marks deferred) sent now, in one statement and
        one commit on the marks' connection (a tick's end, with no transaction to carry
        them)."""
        if not rows:
            return
        with self._writing:
            if self._marking is None:
                self._marking = table.marking(self.engine)
            marked = table.mark_sent(self._marking, [row.id for row in rows], self.now())
        self.marked_late(rows, marked)

    def _mark(self, row: Claimed, result: SendResult) -> DrainReport:
        """Record what the hand-off did (deferred, failed: on_failure; sent when our claim
        was taken over) and release our claim."""
        counted = DrainReport()
        with Work(self.engine) as session:
            mail = session.get(OutboundMail, row.id)
            assert mail is not None
            if mail.claimed_by != me():
                log.warning("mail %s: our claim was taken over while sending", mail.message_id)
            table.record(session, mail, result, self.now(), counted, self.on_failure)
            mail.claimed_by = mail.claimed_at = None
            session.add(mail)
            session.commit()
        return counted
