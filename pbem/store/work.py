"""A unit of work: the session of one handling transaction and what it carries.

A ``Work`` is the SQLAlchemy session of a transaction that handles a mail or a game's
clock work (or any other that queues mail: a bounce heard, a failure told), with what that
transaction keeps on the side named here (nothing rides in ``session.info``). It redefines
none of Session's methods: it listens, on itself alone (set up in ``Work.__init__``, none at
import), to SQLAlchemy's documented Session events named below. What begins and ends its
transactions are the listeners pbem.store.db.make_engine sets up on each engine it makes,
none at import: on SQLite ``connect`` and ``begin`` (SQLAlchemy's documented recipe for
pysqlite, BEGIN IMMEDIATE after the process's writer turn), ``commit`` and ``rollback``
(which end the transaction and give the turn back) and the pool's ``reset``,
``invalidate`` and ``close`` (which give it back too); on every engine
``before_cursor_execute`` (a NUL in a statement's text parameters replaced). Listed by
``bench/house.py``.

- ``memo``: the players and the pending orders of a game, read once a transaction
  (pbem.games.players_of, pending_orders). What writes them keeps it right:
  pbem.games.record_order and drop_orders set the orders they wrote; a Player or a
  PendingOrder added (``transient_to_pending``, ``detached_to_persistent``) or deleted
  (``persistent_to_deleted`` once flushed; before, ``recall`` sees it in
  ``Session.deleted``) forgets what the memo holds of that kind; a commit (``after_commit``),
  a rollback (``after_rollback``, ``after_soft_rollback``) and a ``savepoint`` that rolls
  back forget all of it. A bulk UPDATE or DELETE of players or orders through the ORM must
  call ``forget()``.
- ``queued``: the mail queued in this transaction (pbem.outbox.enqueue) when it has a
  ``hand_off`` (without, none is kept: a report is some 60 KB), what a Stream claims
  before the commit and sends after it (pbem.outbox.Stream.claim).
- ``replies``: the mail of ours each inbound mail replies to (pbem.runner.sender_check), looked up
  once a mail.
- ``hand_off``: where the queued mail goes once committed (a pbem.outbox.Stream, or
  None: the tick's drain sends it). A commit claims the mail for it in the transaction
  (``before_commit``; a savepoint released is no commit);
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

from sqlalchemy import event
from sqlalchemy.orm import SessionTransaction
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
    and its mail's hand-off (see the module's docstring for who keeps each right).

    It redefines none of Session's methods: what keeps its memo and its mail right are
    SQLAlchemy's documented Session events, listened to on this instance alone (set up in
    ``__init__``, listed by bench/house.py)."""

    def __init__(self, *args: Any, hand_off: HandOff | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memo: dict[tuple[Any, ...], Any] = {}
        self.queued: list[Queued] = []
        self.replies: dict[int, tuple[Any, Any]] = {}
        self.hand_off = hand_off
        self._claimed: list[Any] = []    # claimed at the last commit, not handed over yet
        event.listen(self, "transient_to_pending", self._row_changed)
        event.listen(self, "detached_to_persistent", self._row_changed)
        event.listen(self, "persistent_to_deleted", self._row_changed)
        event.listen(self, "before_commit", self._committing)
        event.listen(self, "after_commit", self._committed)
        event.listen(self, "after_rollback", self._rolled_back)
        event.listen(self, "after_soft_rollback", self._rollback_ended)

    def forget(self, kinds: Iterable[str] | None = None) -> None:
        """Forget what the memo holds of ``kinds`` ("players", "orders"; None: all)."""
        if kinds is None:
            self.memo.clear()
            return
        gone = set(kinds)
        for key in [key for key in self.memo if key[0] in gone]:
            del self.memo[key]

    def recall(self, key: tuple[Any, ...]) -> Any:
        """What the memo holds under ``key`` (None: nothing). A row of its kind deleted and
        not flushed yet forgets that kind first (no event sees ``delete`` itself)."""
        if key in self.memo and self.deleted:
            self._forget_rows(self.deleted)
        return self.memo.get(key)

    def _forget_rows(self, rows: Iterable[object]) -> None:
        kinds = {_MEMOISED[type(row)] for row in rows if type(row) in _MEMOISED}
        if kinds and self.memo:
            self.forget(kinds)

    def _row_changed(self, session: Session, row: object) -> None:
        """A player or order added (new or from another session) or its delete flushed:
        the memo of that kind is stale. One the session holds already changes in place:
        the memo holds that very object."""
        self._forget_rows([row])

    def _committing(self, session: Session) -> None:
        """With a ``hand_off`` the queued mail is claimed for it, in this transaction, just
        before it commits, and waits for ``hand_over`` (until then it is claimed and
        unsent: a crash leaves it to the next drain, pbem.store.claims.claim_stale). A
        savepoint released is no commit."""
        if self.hand_off is not None and not self.in_nested_transaction():
            self._claimed += self.hand_off.claim(self)

    def _committed(self, session: Session) -> None:
        if not self.in_nested_transaction():
            self._ended()

    def _rolled_back(self, session: Session) -> None:
        """The database's transaction or a savepoint rolled back: what was read is void."""
        self.memo.clear()

    def _rollback_ended(self, session: Session, previous: SessionTransaction) -> None:
        if previous.parent is None:   # the session's own transaction, not a savepoint
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

