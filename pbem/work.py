"""A unit of work: the session of one handling transaction and what it carries.

A ``Work`` is the SQLAlchemy session of a transaction that handles a mail or a game's
clock work, with what that transaction keeps on the side named here (nothing rides in
``session.info``, no event listener is registered anywhere):

- ``memo``: the players and the pending orders of a game, read once a transaction
  (pbem.games.players_of, pending_orders). What writes them keeps it right:
  pbem.games.record_order and drop_orders set the orders they wrote; ``add`` and
  ``delete`` of a Player or a PendingOrder forget what the memo holds of that kind;
  ``commit``, ``rollback`` and a ``savepoint`` that rolls back forget all of it. A bulk
  UPDATE or DELETE of players or orders through the ORM must call ``forget()``.
- ``queued``: the mail queued in this transaction (pbem.outbox.enqueue), what a Stream
  claims before the commit and sends after it (pbem.outbox.Stream.claim).
- ``replies``: the mail of ours each inbound mail replies to (pbem.senders), looked up
  once a mail.

A plain Session works wherever a Work does: it memoises nothing and collects no mail.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from pbem.models import PendingOrder, Player

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


class Work(Session):
    """One transaction's session with its memo, its queued mail and its replies looked
    up (see the module's docstring for who keeps each right)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memo: dict[tuple[Any, ...], Any] = {}
        self.queued: list[Queued] = []
        self.replies: dict[int, tuple[Any, Any]] = {}

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
        """Commit; the memo and the queued mail belong to the transaction that ended."""
        try:
            super().commit()
        finally:
            self.memo.clear()
            self.queued.clear()
            self.replies.clear()

    def rollback(self) -> None:
        """Roll back; what the transaction memoised and queued is gone with it."""
        try:
            super().rollback()
        finally:
            self.memo.clear()
            self.queued.clear()
            self.replies.clear()

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


def savepoint(session: Session) -> AbstractContextManager[Any]:
    """A savepoint of ``session``: a Work's forgets its memo if it rolls back."""
    return session.savepoint() if isinstance(session, Work) else session.begin_nested()
