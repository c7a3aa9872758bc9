"""A unit of work: the session of one handling transaction and what it carries.

A ``Work`` is the SQLAlchemy session of a transaction that handles a mail or a game's
clock work (or any other that queues mail: a bounce heard, a failure told), with what that
transaction keeps on the side named here (nothing rides in ``session.info``, and a Work
registers no event listener of its own). What begins and ends its transactions are the
listeners pbem.store.db.make_engine sets up on each engine it makes, none at import: on
SQLite ``connect`` and ``begin`` (SQLAlchemy's documented recipe for pysqlite, BEGIN
IMMEDIATE after the process's writer turn), ``commit`` and ``rollback`` (which end the
transaction and give the turn back) and the pool's ``reset``, ``invalidate`` and ``close``
(which give it back too); on every engine ``before_cursor_execute`` (a NUL in a
statement's text parameters replaced). Listed by ``bench/house.py``.

- ``memo``: the players and the pending orders of a game, read once a transaction
  (pbem.games.players_of, pending_orders). What writes them keeps it right:
  pbem.games.record_order and drop_orders set the orders they wrote; ``add`` and
  ``delete`` of a Player or a PendingOrder forget what the memo holds of that kind;
  ``commit``, ``rollback`` and a ``savepoint`` that rolls back forget all of it. A bulk
  UPDATE or DELETE of players or orders through the ORM must call ``forget()``.
- ``queued``: the mail queued in this transaction (pbem.outbox.enqueue) when it has a
  ``hand_off`` (without, none is kept: a report is some 60 KB), what a Stream claims
  before the commit and sends after it (pbem.outbox.Stream.claim).
- ``replies``: the mail of ours each inbound mail replies to (pbem.runner.sender_check), looked up
  once a mail.
- ``hand_off``: where the queued mail goes once committed (a pbem.outbox.Stream, or
  None: the tick's drain sends it). ``commit`` claims the mail for it in the transaction;
  ``hand_over`` gives it the claimed mail, after the commit, when the caller says.

A function that uses what a Work carries says so: its parameter is a Work (pbem.games'
memo, pbem.runner.sender_check's replies, pbem.outbox.queue's queued mail, ``savepoint``
below), so a transaction that reaches one opens a Work, and mypy finds one that does not.
No function asks which kind of session it was given. A reader that reads a game once (a web
page, a replay, an export) takes a plain Session and reads without a memo
(pbem.games.read_players).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from sqlmodel import Session

from pbem.store.models import PendingOrder, Player

# what the memo keeps of each kind of row: its keys begin with the kind's name
_MEMOISED: dict[type, str] = {Player: "players", PendingOrder: "orders"}


@dataclass(frozen=True)
class Queued:
    """A mail just queued (a row of outbound_mail): what sending it needs."""

    id: int
    message_id: str
    mail_from: str
    bounce_token: str | None
    rcpts_json: str
    raw: bytes


class HandOff(Protocol):
    """Who sends a unit's mail as soon as it commits (pbem.outbox.Stream)."""

    def claim(self, work: Work) -> list[Any]:
        """Claim what ``work`` queued, in its transaction, just before its commit."""

    def feed(self, rows: list[Any]) -> None:
        """Send what ``claim`` returned, now committed."""


class Work(Session):
    """One transaction's session with its memo, its queued mail, its replies looked up
    and its mail's hand-off (see the module's docstring for who keeps each right)."""

    def __init__(self, *args: Any, hand_off: HandOff | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memo: dict[tuple[Any, ...], Any] = {}
        self.queued: list[Queued] = []
        self.replies: dict[int, tuple[Any, Any]] = {}
        self.hand_off = hand_off
        self._claimed: list[Any] = []    # claimed at the last commit, not handed over yet

    def forget(self, kinds: Iterable[str] | None = None) -> None:
        """Forget what the memo holds of ``kinds`` ("players", "orders"; None: all)."""
        if kinds is None:
            self.memo.clear()
            return
        gone = set(kinds)
        for key in [key for key in self.memo if key[0] in gone]:
            del self.memo[key]

    def _forget_rows(self, rows: Iterable[object]) -> None:
        kinds = {_MEMOISED[type(row)] for row in rows if type(row) in _MEMOISED}
        if kinds and self.memo:
            self.forget(kinds)

    def add(self, instance: object, *, _warn: bool = True) -> None:
        """Add as a Session does; a new player or order forgets that kind (a query made
        before it would have missed it). One the session holds already changes in place:
        the memo holds that very object."""
        new = type(instance) in _MEMOISED and instance not in self
        super().add(instance, _warn=_warn)
        if new:
            self._forget_rows([instance])

    def add_all(self, instances: Iterable[object]) -> None:
        for instance in instances:
            self.add(instance)

    def delete(self, instance: object) -> None:
        """Delete as a Session does; a player or order deleted forgets that kind."""
        super().delete(instance)
        self._forget_rows([instance])

    def commit(self) -> None:
        """Commit; the memo and the queued mail belong to the transaction that ended. With
        a ``hand_off`` the queued mail is claimed for it first, in this transaction, and
        waits for ``hand_over`` (until then it is claimed and unsent: a crash leaves it to
        the next drain, pbem.store.claims.claim_stale)."""
        if self.hand_off is not None:
            self._claimed += self.hand_off.claim(self)
        try:
            super().commit()
        finally:
            self._ended()

    def rollback(self) -> None:
        """Roll back; what the transaction memoised and queued is gone with it."""
        try:
            super().rollback()
        finally:
            self._ended()

    def _ended(self) -> None:
        """The transaction is over: what it memoised, queued and looked up goes with it."""
        self.memo.clear()
        self.queued.clear()
        self.replies.clear()

    def hand_over(self) -> None:
        """Give the mail claimed at the commits so far to the ``hand_off`` to send."""
        claimed, self._claimed = self._claimed, []
        if self.hand_off is not None and claimed:
            self.hand_off.feed(claimed)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A savepoint (begin_nested) that forgets the memo if it rolls back: the rows it
        added are gone (the mail it queued is not claimed: Stream.claim takes only the
        rows still there)."""
        try:
            with self.begin_nested():
                yield
        except BaseException:
            self.memo.clear()
            raise

