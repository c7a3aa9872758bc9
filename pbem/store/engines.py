"""The engine of a database URL and how it behaves, on SQLite as on PostgreSQL.

On SQLite the engine begins every transaction itself (BEGIN IMMEDIATE after this
process's writer turn, or a plain BEGIN on ``reading(engine)``), so DDL is
transactional there as on PostgreSQL. SQLite and PostgreSQL behave the same here: text
is stored without NUL characters on both (PostgreSQL's text cannot hold one, SQLite's
can: a NUL in mail-borne text becomes U+FFFD), and transient_error tells an outage (try
again later) from an error that will happen again with the same data.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlmodel import Session, create_engine

SYNCHRONOUS = ("normal", "full")   # [database] synchronous (pbem.config.DatabaseSettings)
BUSY_TIMEOUT_MS = 30000   # how long a SQLite statement waits out another process's lock


def _sqlite_pragmas(synchronous: str) -> Callable[..., None]:
    """The connect hook of a SQLite engine: WAL, foreign keys, and how commits reach disk.

    synchronous NORMAL in WAL mode: a commit is not flushed at once (the WAL is at each
    checkpoint), so a process crash loses nothing, a power loss may lose the last commits,
    and the database is never corrupted. FULL flushes every commit.
    """
    if synchronous not in SYNCHRONOUS:
        raise ValueError(f"synchronous must be one of {SYNCHRONOUS}, not {synchronous!r}")

    def on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_connection.isolation_level = None   # its own BEGINs off: _sqlite_transactions
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # WAL lets the sender read while the referee writes
        _switch_to_wal(cursor)
        cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
    return on_connect


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """PRAGMA journal_mode=WAL, retried while another process holds the file's write lock.

    Switching a file that is not WAL yet (a new database, two processes starting together)
    needs the file to itself, and SQLite answers "database is locked" at once when another
    connection is writing it, without waiting out busy_timeout (that could deadlock). So
    it is tried again, for as long as busy_timeout would have waited."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class _WriterTurn:
    """The writer's turn on one SQLite file among this process's threads, handed at
    release to the thread that has waited longest.

    SQLite lets one connection write at a time and makes the others wait by polling,
    asleep in steps that grow to 100 ms: a sender's mark (one short UPDATE) that meets
    the referee's transaction could sleep through the next few of them. Here it waits
    its turn instead and gets it the moment that transaction ends, before the referee's
    next one (a threading.Lock would go back to the thread that released it: it runs
    on while the woken one waits for the interpreter). The turn is held by one DB-API
    connection: ``give_back`` by any other is no-op, so every end of a transaction may
    call it."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None          # the thread whose turn it is
        self._holder: object = None             # and its connection that holds it
        self._waiters: deque[tuple[int, object, threading.Event]] = deque()

    def take(self, holder: object, timeout: float) -> str:
        """Wait for the turn (at most ``timeout`` s) for the connection ``holder``:
        "taken"; "own" when this thread holds it already on another connection;
        "timeout" when it did not come."""
        thread = threading.get_ident()
        with self._mutex:
            if self._owner is None:
                self._owner, self._holder = thread, holder
                return "taken"
            if self._owner == thread:
                return "own"
            turn = threading.Event()
            self._waiters.append((thread, holder, turn))
        if turn.wait(timeout):
            return "taken"
        with self._mutex:
            if turn.is_set():     # handed over just as the wait ran out
                return "taken"
            self._waiters.remove((thread, holder, turn))
            return "timeout"

    def give_back(self, holder: object) -> None:
        """End ``holder``'s turn, if it has it: to the longest waiter, or free."""
        if self._holder is not holder:   # the common case, read without the mutex
            return
        with self._mutex:
            if self._holder is not holder:
                return
            if self._waiters:
                self._owner, self._holder, turn = self._waiters.popleft()
                turn.set()
            else:
                self._owner = self._holder = None


READS_ONLY = "pbem_reads_only"   # the execution option of a transaction that only reads


def reading(engine: Engine) -> Engine:
    """The engine (the same pool) for transactions that only read: on SQLite they begin
    with a plain BEGIN, take no writer's turn and do not make writers wait. A write in
    one may fail at once with "database is locked" when another connection wrote since
    it began (WAL): use it only where nothing is written."""
    return engine.execution_options(**{READS_ONLY: True})


def _sqlite_transactions(engine: Engine) -> None:
    """How a transaction begins and ends on a SQLite engine: SQLAlchemy's documented recipe
    for pysqlite (the driver's own transaction handling off, isolation_level None, set by
    the connect hook; a BEGIN of ours on the "begin" event), which also makes DDL
    transactional: a migration commits whole or not at all.

    A transaction begins with BEGIN IMMEDIATE: it takes SQLite's write lock (waiting out
    busy_timeout) at its start, after this process's writer turn (_WriterTurn), so what
    it reads is current until it commits. One begun on ``reading(engine)`` begins with a
    plain BEGIN and takes neither; so does one that a thread begins while it holds the
    turn on another connection (its writes would wait for itself: it can only read, as
    before). The turn is given back once the transaction has ended: the "commit" and
    "rollback" events run COMMIT or ROLLBACK themselves, then give it back (SQLAlchemy's
    own commit() or rollback() of the driver's connection, after them, finds no
    transaction open); the pool's reset, invalidate and close give it back too, for a
    transaction that ends without those events. These statements run on the driver's
    connection itself (_own_statement)."""
    turn = _WriterTurn()

    def begin(conn) -> None:  # type: ignore[no-untyped-def]
        holder = conn.connection.dbapi_connection
        if conn.get_execution_options().get(READS_ONLY) or \
                turn.take(holder, BUSY_TIMEOUT_MS / 1000) == "own":
            _own_statement(holder, "BEGIN")
            return
        try:   # "timeout": SQLite's busy_timeout decides, as it would without the turn
            _own_statement(holder, "BEGIN IMMEDIATE")
        except BaseException:
            turn.give_back(holder)
            raise

    def commit(conn) -> None:  # type: ignore[no-untyped-def]
        holder = conn.connection.dbapi_connection
        try:
            if holder.in_transaction:
                _own_statement(holder, "COMMIT")
        finally:
            turn.give_back(holder)

    def rollback(conn) -> None:  # type: ignore[no-untyped-def]
        if conn.invalidated:   # its connection is gone, and with it the transaction
            return
        holder = conn.connection.dbapi_connection
        try:
            if holder is not None and holder.in_transaction:
                _own_statement(holder, "ROLLBACK")
        finally:
            turn.give_back(holder)

    def pool_end(dbapi_connection, *_args) -> None:  # type: ignore[no-untyped-def]
        turn.give_back(dbapi_connection)

    event.listen(engine, "begin", begin)
    event.listen(engine, "commit", commit)
    event.listen(engine, "rollback", rollback)
    for name in ("reset", "invalidate", "close"):
        event.listen(engine.pool, name, pool_end)


def _own_statement(holder: sqlite3.Connection, statement: str) -> None:
    """A transaction's own statement (BEGIN, COMMIT, ROLLBACK), run on the driver's
    connection itself: SQLAlchemy's execution around it (a cursor, a result, the statement
    events) cost about as much CPU as the statement. Its error is raised as SQLAlchemy's
    (sqlalchemy.exc.OperationalError for "database is locked": transient_error)."""
    try:
        holder.execute(statement)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(statement, None, exc, sqlite3.Error) from exc


def _without_nul(parameters: object) -> object:
    """The statement's parameters with every NUL in text replaced by U+FFFD: the same
    object when none holds one (the common case, found in one pass over a statement's
    values), else a copy."""
    if isinstance(parameters, str):
        return parameters.replace("\x00", "\ufffd") if "\x00" in parameters else parameters
    values: Iterable[object]
    if isinstance(parameters, dict):
        values = parameters.values()
    elif isinstance(parameters, (list, tuple)):
        values = parameters
    else:
        return parameters   # bytes (the raw mail) and everything else as they are
    for value in values:
        held = type(value)
        if held is str:
            if "\x00" in value:
                return _copy_without_nul(parameters)
        elif held not in _PLAIN and _without_nul(value) is not value:   # a list, a date ...
            return _copy_without_nul(parameters)
    return parameters


_PLAIN = frozenset({int, float, bool, bytes, type(None)})   # never text, never holds any


def _copy_without_nul(parameters: object) -> object:
    if isinstance(parameters, dict):
        return {key: _without_nul(value) for key, value in parameters.items()}
    return type(parameters)(_without_nul(value) for value in parameters)  # type: ignore[call-arg,attr-defined]


def _scrub_nul(_conn, _cursor, statement, parameters, _context, _many):  # type: ignore[no-untyped-def]
    return statement, _without_nul(parameters)


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; None for another database or an in-memory one."""
    if not url.startswith("sqlite:///") or ":memory:" in url:
        return None
    return Path(url.removeprefix("sqlite:///").partition("?")[0]).expanduser()


def make_engine(url: str, *, synchronous: str = "normal") -> Engine:
    """An engine for url, nothing created or checked yet (synchronous: SQLite's, see
    _sqlite_pragmas; PostgreSQL keeps its server's settings).

    On SQLite every transaction begins with BEGIN IMMEDIATE after this process's writer
    turn, unless it runs on ``reading(engine)`` (see _sqlite_transactions); DDL is
    transactional there as on PostgreSQL."""
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    if url.startswith("sqlite"):
        engine = create_engine(url)
        event.listen(engine, "connect", _sqlite_pragmas(synchronous))
        _sqlite_transactions(engine)
    else:   # a long-running server outlives database restarts: test a pooled connection first
        engine = create_engine(url, pool_pre_ping=True)
    event.listen(engine, "before_cursor_execute", _scrub_nul, retval=True)
    return engine


def transient_error(exc: DBAPIError) -> bool:
    """Is this database error an outage (locked, gone, restarting: try again later), rather
    than one the same data will hit again? The latter: PostgreSQL's program limits (SQLSTATE
    class 54, e.g. a value too large for an index entry); a bad value or a constraint is
    no OperationalError. Every OperationalError of SQLite is an outage here."""
    if not isinstance(exc, OperationalError):
        return False
    return not str(getattr(exc.orig, "sqlstate", None) or "").startswith("54")


def core_read(session: Session, statement: Any, params: dict[str, Any] | None = None) -> Any:
    """Run a read on the session's connection as Core: rows of plain columns at a tenth of
    an ORM query's cost. What the session holds unflushed is flushed first, as the ORM's
    autoflush would, so the read sees the transaction's own changes (flush() returns at
    once when nothing is pending)."""
    session.flush()
    return session.connection().execute(statement, params or {})
