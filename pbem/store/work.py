"""A unit of work: the session of one handling transaction and what it carries.

A ``Work`` is the SQLAlchemy session of a transaction that handles a mail or a game's
clock work (or any other that queues mail: a bounce heard, a failure told), with what that
transaction keeps on the side named here (nothing rides in ``session.info``). It redefines
none of Session's methods and listens to no event: what it carries belongs to one database
transaction, and each of its own accessors (``memo``, ``queued``, ``replies``) asks the
session, by its documented ``get_transaction()``, whether that transaction is still the one
it was kept in; once a commit or a rollback has ended it, what was kept is forgotten there.
What begins and ends its transactions are the listeners pbem.store.engines.make_engine sets up on
each engine it makes, none at import: on SQLite ``connect`` and ``begin`` (SQLAlchemy's
documented recipe for pysqlite, BEGIN IMMEDIATE after the process's writer turn),
``commit`` and ``rollback`` (which end the transaction and give the turn back) and the
pool's ``reset``, ``invalidate`` and ``close`` (which give it back too); on every engine
``before_cursor_execute`` (a NUL in a statement's text parameters replaced). Listed by
``bench/house.py``.

- ``memo``: the players (rows: pbem.store.rows) and the pending orders of a game, read once
  a transaction (pbem.games.records.players_of,
  pbem.games.turn_in_play.pending_orders), its moves once a transaction and
  turn (pbem.games.states.load_state: kept under the turn, which no write makes stale), and the
  mail of ours an inbound mail replies to (pbem.services.post.replied_mail). A player's
  mail reads the first three with its game, by one statement
  (pbem.games.turn_in_play.game_at_hand, which keeps the game's id under its name); a turn
  played keeps the next turn's moves (pbem.games.states.record_moves). A group of a
  game's mails handled in one transaction (pbem.runner.referee.Referee.handle_group) keeps
  it from one mail to the next. What writes them keeps it right,
  explicitly: pbem.games.turn_in_play.record_order and drop_orders set the orders they wrote,
  update_players the players; a function that adds or deletes a Player or a PendingOrder
  (pbem.games.lifecycle.add_player, remove_entrant, pbem.commands.seats' REPLACE,
  pbem.commands.rollback), or changes players by another statement (LANGUAGE, TIMEZONE,
  ADDRESS), calls ``forget`` with that kind; a savepoint that rolls back (``savepoint``, the one way this
  code makes one) forgets all of it, and the transaction's end does (above).
- ``queued``: the mail queued in this transaction (pbem.outbox.enqueue) when it is made
  with ``keep_queued`` (without, none is kept: a report is some 60 KB): what the caller
  hands off, claimed before the commit and sent after it (pbem.runner.referee.end, with a
  pbem.outbox Stream or Inline).
- ``replies``: the mail of ours each inbound mail replies to (pbem.runner.sender_check), looked up
  once a mail.
- ``drafts``: the ids of the turn reports' drafts queued in this transaction
  (pbem.services.drafts.queue_draft): a tick's first starts its composer
  (pbem.runner.composer.Composing).
- ``reported``: the games whose turn this transaction reported (pbem.services.turns.
  report_turn, made at once or drafted): the tick counts them (Composing), and has the
  composer make them from its ``composer_from_turn``th on.

A Work calls nothing above it: who sends its mail, and when, is its caller's business.

A function that uses what a Work carries says so: its parameter is a Work (pbem.games'
memo, pbem.runner.sender_check's replies, pbem.outbox.queue's queued mail, ``savepoint``
below), so a transaction that reaches one opens a Work, and mypy finds one that does not.
No function asks which kind of session it was given. A reader that reads a game once (a web
page, a replay, an export) takes a plain Session and reads without a memo
(pbem.games.records.read_players).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import SessionTransaction
from sqlmodel import Session


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
    """One transaction's session with its memo, its queued mail, its replies looked up
    (see the module's docstring for who keeps each right).

    It redefines none of Session's methods and listens to no event: what it carries is
    kept with the transaction it was kept in (``_carried``)."""

    def __init__(self, *args: Any, keep_queued: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.keep_queued = keep_queued   # queued mail kept for its caller to hand off
        self._memo: dict[tuple[Any, ...], Any] = {}
        self._queued: list[Queued] = []
        self._replies: dict[int, tuple[Any, Any]] = {}
        self._drafts: list[int] = []
        self._reported: list[int] = []
        self._kept_in: SessionTransaction | None = None   # the transaction of all five

    def _carried(self) -> None:
        """What this Work carries is its present transaction's: once that transaction has
        ended (a commit, a rollback: the session begins another, or has none yet), what
        was kept in it is forgotten, here, before it is looked at or added to."""
        present = self.get_transaction()
        if present is not self._kept_in:
            self._kept_in = present
            self._memo.clear()
            self._queued.clear()
            self._replies.clear()
            self._drafts.clear()
            self._reported.clear()

    @property
    def memo(self) -> dict[tuple[Any, ...], Any]:
        """The players and orders of games read in this transaction, by key (their kind's
        name first: "players", "orders")."""
        self._carried()
        return self._memo

    @property
    def queued(self) -> list[Queued]:
        """The mail queued in this transaction (with ``keep_queued``), not claimed yet."""
        self._carried()
        return self._queued

    @property
    def replies(self) -> dict[int, tuple[Any, Any]]:
        """The mail of ours each inbound mail replies to, looked up in this transaction."""
        self._carried()
        return self._replies

    @property
    def drafts(self) -> list[int]:
        """The drafts queued in this transaction (their ids)."""
        self._carried()
        return self._drafts

    @property
    def reported(self) -> list[int]:
        """The games whose turn this transaction reported (their ids)."""
        self._carried()
        return self._reported

    def forget(self, kinds: Iterable[str] | None = None) -> None:
        """Forget what the memo holds of ``kinds`` ("players", "orders"; None: all): a
        function that adds or deletes such rows through the ORM calls it, as does a bulk
        UPDATE or DELETE of them."""
        memo = self.memo
        if kinds is None:
            memo.clear()
            return
        gone = set(kinds)
        for key in [key for key in memo if key[0] in gone]:
            del memo[key]

    def recall(self, key: tuple[Any, ...]) -> Any:
        """What the memo holds under ``key`` (None: nothing)."""
        return self.memo.get(key)

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
