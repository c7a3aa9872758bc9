"""Sending ahead: a tick's answers leave while it handles the next mails.

Without it a tick handles all its mail, then drains the outbox: the mail server
waits while the referee works, and the referee waits while the mail server
delivers. With it, the mail a handled mail queued is claimed in that mail's own
transaction (pbem.outbox.claim_as_queued) and, once committed, handed to one of
``connections`` sender threads, which send it while the tick handles the next
mail; what is left when the handling ends is sent then (``finish``), and the
tick's outbox drain takes whatever else is due.

The guarantees of the outbox drain hold (README "Guarantees"):

- Only the tick's own thread writes to the database: a sender thread hands a
  mail off, then waits until the tick has marked it sent (``write_marks``,
  after each handled mail, and while finishing) before it takes its next mail.
  So a crash repeats at most the mail in flight on each connection, and the
  handling never waits for a sender's commit.
- The mails to one address go over one connection in queue order.
- A mail the server defers or refuses is recorded as the drain records it
  (pbem.outbox.settle); a server that cannot be reached stops every sender
  after its mail in hand, and the claims of what was left unsent are released,
  for the drain's back-off.
- A mail queued by a transaction that rolled back is never sent: it is handed
  over only after its commit.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from datetime import datetime
from types import TracebackType

from sqlalchemy import Engine
from sqlmodel import Session

from pbem.faults import crash_point
from pbem.mail.smtp_out import SendResult
from pbem.models import OutboundMail
from pbem.outbox import (
    ClaimedMail,
    DrainReport,
    Sender,
    Stream,
    claim_as_queued,
    mark_sent,
    release,
    settle,
)

log = logging.getLogger(__name__)


class SendAhead:
    """Sender threads fed with the mail of each handled mail as it is committed."""

    def __init__(self, engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
                 now: Callable[[], datetime], *,
                 on_failure: Callable[[Session, OutboundMail, str], None] | None = None,
                 verp: bool = False, connections: int = 1) -> None:
        if connections < 1:
            raise ValueError("connections must be >= 1")
        self.engine, self.open_sender, self.now = engine, open_sender, now
        self.on_failure, self.verp = on_failure, verp
        self.report = DrainReport()
        self._queues: list[deque[ClaimedMail]] = [deque() for _ in range(connections)]
        # an address keeps its connection while it has mail not handed off yet (so its
        # mails leave in queue order); else it goes to the least busy one
        self._slot_of: dict[tuple[str, ...], int] = {}
        self._waiting: Counter[tuple[str, ...]] = Counter()
        self._in_hand = [0] * connections
        self._threads: list[threading.Thread | None] = [None] * connections
        self._alive = 0
        self._changed = threading.Condition()
        self._handed: list[tuple[ClaimedMail, SendResult]] = []   # sent, not marked yet
        self._marked: set[int] = set()
        self._closing = False     # finish: send what is queued, then stop
        self._stopped = False     # the server is unavailable, or a sender failed: stop now
        self._abandoned = False   # the marks could not be written: senders stop waiting

    # --- the handling thread -------------------------------------------------------

    def watch(self, session: Session) -> Stream:
        """Claim the mail ``session`` queues from now on as it is queued."""
        return claim_as_queued(session, self.now())

    def submit(self, mails: list[ClaimedMail]) -> None:
        """Hand committed, claimed mail to the senders; then write the marks of the mail
        they handed off meanwhile."""
        if mails:
            with self._changed:
                for mail in mails:
                    slot = self._slot_for(tuple(mail.rcpts))
                    self._queues[slot].append(mail)
                    self._start(slot)
                self._changed.notify_all()
        self.write_marks()

    def write_marks(self) -> None:
        """Record what the senders handed off since the last call (one transaction for the
        mails sent), and let them go on."""
        with self._changed:
            handed, self._handed = self._handed, []
        if not handed:
            return
        try:
            ok = [mail.id for mail, result in handed if result.ok and not result.unavailable]
            marked = mark_sent(self.engine, ok, self.now()) if ok else set()
            counted = DrainReport(sent=len(marked),
                                  unavailable=any(r.unavailable for _, r in handed))
            for mail, result in handed:
                if mail.id not in marked:
                    one = settle(self.engine, mail.id, result, self.now(), self.on_failure)
                    counted.sent += one.sent
                    counted.deferred += one.deferred
                    counted.failed += one.failed
        except BaseException:
            with self._changed:   # the senders stop; the claims run out with their lease
                self._abandoned = self._stopped = True
                self._changed.notify_all()
            raise
        crash_point("outbox-marked")
        with self._changed:
            self.report.sent += counted.sent
            self.report.deferred += counted.deferred
            self.report.failed += counted.failed
            self.report.unavailable = self.report.unavailable or counted.unavailable
            self._marked.update(mail.id for mail, _ in handed)
            self._changed.notify_all()

    def finish(self) -> None:
        """Send what is queued, mark it, stop the senders and release the claims of what
        was left unsent."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        try:
            while True:
                self.write_marks()
                with self._changed:
                    if self._alive == 0 and not self._handed:
                        break
                    if not self._handed:
                        self._changed.wait(1.0)
        finally:
            with self._changed:   # (after an error: a sender waiting for its mark stops)
                self._stopped = self._abandoned = True
                self._changed.notify_all()
            for thread in self._threads:
                if thread is not None:
                    thread.join()
            with self._changed:
                left = [mail.id for queue in self._queues for mail in queue]
                for queue in self._queues:
                    queue.clear()
            if left:
                release(self.engine, left)

    def __enter__(self) -> SendAhead:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None:   # stop after the mail in hand; what was handed off is marked
            with self._changed:
                self._stopped = True
                self._changed.notify_all()
        self.finish()

    # --- the sender threads --------------------------------------------------------

    def _slot_for(self, rcpts: tuple[str, ...]) -> int:
        """The connection for a mail to ``rcpts`` (called holding _changed)."""
        slot = self._slot_of.get(rcpts)
        if slot is None or not self._waiting[rcpts]:
            slot = min(range(len(self._queues)),
                       key=lambda s: len(self._queues[s]) + self._in_hand[s])
            self._slot_of[rcpts] = slot
        self._waiting[rcpts] += 1
        return slot

    def _start(self, slot: int) -> None:
        """Start the sender of ``slot`` unless it runs (called holding _changed)."""
        if self._threads[slot] is None:
            thread = threading.Thread(target=self._work, args=(slot,), daemon=True,
                                      name=f"pbem-send-ahead-{slot}")
            self._threads[slot] = thread
            self._alive += 1
            thread.start()

    def _next(self, slot: int) -> ClaimedMail | None:
        with self._changed:
            queue = self._queues[slot]
            while not queue and not self._closing and not self._stopped:
                self._changed.wait()
            if self._stopped or not queue:
                return None
            self._in_hand[slot] = 1
            return queue.popleft()

    def _work(self, slot: int) -> None:
        with ExitStack() as stack:
            try:
                sender: Sender | None = None
                while (mail := self._next(slot)) is not None:
                    if sender is None:
                        sender = stack.enter_context(self.open_sender())
                    crash_point("outbox-claimed")
                    try:
                        result = sender.send(mail.mail_from, mail.rcpts, mail.raw)
                    except BaseException:
                        with self._changed:   # not handed off: released with the rest
                            self._queues[slot].appendleft(mail)
                        raise
                    crash_point("outbox-handed-off")
                    with self._changed:
                        self._handed.append((mail, result))
                        self._waiting[tuple(mail.rcpts)] -= 1
                        self._in_hand[slot] = 0
                        if result.unavailable:
                            self._stopped = True   # the others stop after their mail in hand
                        self._changed.notify_all()
                        while mail.id not in self._marked and not self._abandoned:
                            self._changed.wait()
                        self._marked.discard(mail.id)
            except Exception:   # the drain after the tick tries these mails again
                log.exception("sending ahead failed; the outbox drain takes the rest")
                with self._changed:
                    self._stopped = True
            finally:
                with self._changed:
                    self._alive -= 1
                    self._changed.notify_all()
