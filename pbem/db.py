"""Opening the database, and its schema: created and migrated with Alembic on first use.

Migrations run under a lock, so any number of processes starting together on a
fresh (or older) database make the schema once and all carry on: a session
advisory lock on PostgreSQL; on SQLite an exclusive lock (flock) on a lock file
next to the database file, which works before the database file exists too.
A database whose schema is newer than this pbem knows is refused (SchemaError).

SQLite and PostgreSQL behave the same here: text is stored without NUL characters
on both (PostgreSQL's text cannot hold one, SQLite's can: a NUL in mail-borne
text becomes U+FFFD), and transient_error tells an outage (try again later) from
an error that will happen again with the same data.
"""

from __future__ import annotations

import fcntl
import functools
import re
import sqlite3
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, event, text
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError
from sqlmodel import Session, create_engine

from pbem.errors import PbemError
from pbem.paths import packaged_dir

# pg_advisory_lock keys: any bigint, the same in every pbem process on the database
WRITER_LOCK_KEY = 52550      # one transaction that changes games at a time (one_writer)
MIGRATION_LOCK_KEY = 52551
# pg_advisory_xact_lock(space, key) pairs: a game's writer, a sender's, a lane's claim
GAME_LOCK_SPACE = 52552
SENDER_LOCK_SPACE = 52553
LANE_CLAIM_SPACE = 52554


class SchemaError(PbemError):
    """The database's schema does not fit this pbem (e.g. a newer pbem upgraded it)."""


def alembic_config(engine: Engine | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(packaged_dir("schema")))
    cfg.attributes["engine"] = engine
    return cfg


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


class _HandOffLock:
    """The writer's turn on one SQLite file among this process's threads, handed at
    release to the thread that has waited longest.

    SQLite lets one connection write at a time and makes the others wait by polling,
    asleep in steps that grow to 100 ms: a sender's mark (one short UPDATE) that meets
    the referee's transaction could sleep through the next few of them. Here it waits
    its turn instead and gets it the moment that transaction ends, before the referee's
    next one (a threading.Lock would go back to the thread that released it: it runs
    on while the woken one waits for the interpreter)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None          # the thread whose turn it is
        self._waiters: deque[tuple[int, threading.Event]] = deque()

    def acquire(self, timeout: float) -> bool:
        """Wait for the turn (at most ``timeout`` s); False if it did not come, or if this
        thread has it already on another connection (SQLite then decides, as without)."""
        thread = threading.get_ident()
        with self._mutex:
            if self._owner is None:
                self._owner = thread
                return True
            if self._owner == thread:
                return False
            turn = threading.Event()
            self._waiters.append((thread, turn))
        if turn.wait(timeout):
            return True
        with self._mutex:
            if turn.is_set():     # handed over just as the wait ran out
                return True
            self._waiters.remove((thread, turn))
            return False

    def release(self) -> None:
        with self._mutex:
            if self._waiters:
                self._owner, turn = self._waiters.popleft()
                turn.set()
            else:
                self._owner = None


# the statements that begin a write transaction in sqlite3 (its implicit BEGIN)
_WRITES = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


def _turn_taking_connection(turn: _HandOffLock) -> type[sqlite3.Connection]:
    """A sqlite3 connection class whose write transactions take ``turn`` first (at
    their first write) and give it back when they end (commit, rollback, close)."""

    class Cursor(sqlite3.Cursor):
        def execute(self, sql: str, parameters: Any = (), /) -> Self:
            _take_turn(self.connection, sql)
            return super().execute(sql, parameters)

        def executemany(self, sql: str, seq_of_parameters: Any, /) -> Self:
            _take_turn(self.connection, sql)
            return super().executemany(sql, seq_of_parameters)

    class Connection(sqlite3.Connection):
        holds_turn = False
        writer_turn = turn

        def cursor(self, factory: Any = Cursor) -> Any:   # noqa: ANN401 (sqlite3's own)
            return super().cursor(factory)

        def commit(self) -> None:
            try:
                super().commit()
            finally:
                _end_turn(self)

        def rollback(self) -> None:
            try:
                super().rollback()
            finally:
                _end_turn(self)

        def close(self) -> None:
            try:
                super().close()
            finally:
                _end_turn(self)

    return Connection


def _take_turn(connection: Any, sql: str) -> None:   # noqa: ANN401
    if not connection.holds_turn and not connection.in_transaction and _WRITES.match(sql):
        connection.holds_turn = connection.writer_turn.acquire(BUSY_TIMEOUT_MS / 1000)


def _end_turn(connection: Any) -> None:   # noqa: ANN401
    if connection.holds_turn:
        connection.holds_turn = False
        connection.writer_turn.release()


def _without_nul(parameters: object) -> object:
    """The statement's parameters with every NUL in text replaced by U+FFFD."""
    if isinstance(parameters, str):
        return parameters.replace("\x00", "\ufffd") if "\x00" in parameters else parameters
    if isinstance(parameters, dict):
        return {key: _without_nul(value) for key, value in parameters.items()}
    if isinstance(parameters, (list, tuple)):
        return type(parameters)(_without_nul(value) for value in parameters)
    return parameters   # bytes (the raw mail) and everything else as they are


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

    On SQLite the rule no caller sees: the engine's connections are a sqlite3.Connection
    subclass (_turn_taking_connection), and a transaction takes this process's writer turn
    (_HandOffLock) at its first statement that _WRITES matches (INSERT, UPDATE, DELETE,
    REPLACE: those that begin sqlite3's implicit write transaction) and gives it back when
    sqlite3 ends it (commit, rollback, close). A write that begins otherwise (a statement
    the expression does not match) waits on SQLite's own busy timeout, as without. It is
    the one place that sees every start and end of a write transaction, the pool's resets
    and closes included; engine events would need a listener for each."""
    path = sqlite_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    if url.startswith("sqlite"):
        # the threads of this process take turns to write the file (_HandOffLock)
        turn = _HandOffLock()
        engine = create_engine(url, connect_args={"factory": _turn_taking_connection(turn)})
        event.listen(engine, "connect", _sqlite_pragmas(synchronous))
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


def open_database(url: str, *, migrate: bool = True, synchronous: str = "normal") -> Engine:
    """The engine for url; with migrate, its schema brought up to date (under the lock).

    Raises SchemaError when the database is at a revision this pbem does not know.
    """
    engine = make_engine(url, synchronous=synchronous)
    if migrate:
        upgrade(engine)
    return engine


def core_read(session: Session, statement: Any, params: dict[str, Any] | None = None) -> Any:
    """Run a read on the session's connection as Core: rows of plain columns at a tenth of
    an ORM query's cost. What the session holds unflushed is flushed first, as the ORM's
    autoflush would, so the read sees the transaction's own changes (flush() returns at
    once when nothing is pending)."""
    session.flush()
    return session.connection().execute(statement, params or {})


_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:key)")
_TAKE_WRITE_LOCK = text("UPDATE server_state SET value = value WHERE 1 = 0")


def one_writer(session: Session) -> None:
    """Begin a transaction that changes games alone: take the writer's lock first, so
    that what it reads next is current and no other such transaction interleaves.

    Needed on both databases: PostgreSQL (read committed) lets two transactions read
    the same game and both write; SQLite lets one writer in at a time, but Python's
    sqlite3 begins a transaction only at its first write, so what was read before
    that may be stale by then. PostgreSQL: an advisory lock, held until the
    transaction ends; SQLite: a write that changes nothing takes the write lock.
    """
    conn = session.connection()   # Core: the ORM adds nothing to a plain statement
    if conn.dialect.name == "postgresql":
        conn.execute(_ADVISORY_LOCK, {"key": WRITER_LOCK_KEY})
    else:
        conn.execute(_TAKE_WRITE_LOCK)


def lanes_apart(engine: Engine) -> bool:
    """Do workers handle the mail of different games side by side (PostgreSQL: one game's
    writer at a time, game_writer), or all of it one transaction at a time (SQLite has one
    writer: one_writer, under the referee lease)?"""
    return engine.dialect.name == "postgresql"


_SHARED_WRITER_LOCK = text("SELECT pg_advisory_xact_lock_shared(:key)")
_PAIR_LOCK = text("SELECT pg_advisory_xact_lock(CAST(:space AS integer), "
                  "CAST(:key AS integer))")
_TRY_PAIR_LOCK = text("SELECT pg_try_advisory_xact_lock(CAST(:space AS integer), "
                      "CAST(:key AS integer))")


def lock_key(text_: str) -> int:
    """A text (an address) as the int4 key of an advisory lock: the same in every process."""
    value = zlib.crc32(text_.encode(errors="replace"))
    return value - (1 << 32) if value >= (1 << 31) else value


def game_writer(session: Session, game_id: int, *, wait: bool = True) -> bool:
    """Begin a transaction that changes one game beside other games' transactions
    (PostgreSQL, lanes_apart): the writer's lock shared (one_writer, which changes what
    no one game owns, waits for it), then the game's alone. Without ``wait`` the game's
    lock is only tried: False if another transaction holds it (nothing taken then that
    outlives the caller's rollback)."""
    conn = session.connection()
    conn.execute(_SHARED_WRITER_LOCK, {"key": WRITER_LOCK_KEY})
    if wait:
        conn.execute(_PAIR_LOCK, {"space": GAME_LOCK_SPACE, "key": game_id})
        return True
    return bool(conn.execute(_TRY_PAIR_LOCK, {"space": GAME_LOCK_SPACE,
                                              "key": game_id}).scalar())


def sender_writer(session: Session, address: str) -> None:
    """In a game_writer transaction, the sender's lock too (taken after the game's: one
    order everywhere, no deadlock): two mails of one address to two games do not write
    its rate limits, bounces and seats at once."""
    session.connection().execute(_PAIR_LOCK, {"space": SENDER_LOCK_SPACE,
                                              "key": lock_key(address.lower())})


def lane_claim(session: Session, lane: int, *, wait: bool = False) -> bool:
    """One claim of a lane's mail at a time (pbem.inbox.claim_lane), one giving of lanes
    (pbem.inbox.give_lanes): without ``wait`` only tried, False if another process is at
    it right now; with it, waited for (True)."""
    conn = session.connection()
    if wait:
        conn.execute(_PAIR_LOCK, {"space": LANE_CLAIM_SPACE, "key": lane})
        return True
    return bool(conn.execute(_TRY_PAIR_LOCK, {"space": LANE_CLAIM_SPACE,
                                              "key": lane}).scalar())


# --------------------------------------------------------------------------- revisions


def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


@functools.lru_cache(maxsize=1)
def _known() -> tuple[str, ...]:
    """The migrations shipped with this pbem, read once (they change only with pbem
    itself; walking them took a few ms of every tick's schema check)."""
    return tuple(r.revision for r in reversed(list(_scripts().walk_revisions())))


def revisions() -> list[str]:
    """The revisions this pbem knows, oldest first."""
    return list(_known())


def head_revision() -> str:
    head = _scripts().get_current_head()
    assert head is not None
    return head


def current_revision(engine: Engine) -> str | None:
    """The database's revision; None for a database without pbem's tables."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def check_known(revision: str | None) -> None:
    """Refuse a revision this pbem does not know: a newer pbem migrated the database."""
    if revision is not None and revision not in revisions():
        raise SchemaError(
            f"the database is at schema revision {revision}, which this pbem does not know "
            f"(it knows up to {head_revision()}): a newer pbem has upgraded it. Run that "
            f"newer pbem, or restore the backup taken before the upgrade.")


_VERSION = text("SELECT version_num FROM alembic_version")


def check_schema(engine: Engine) -> None:
    """Refuse a database that a newer pbem upgraded since this process opened it. (Every
    tick asks: one plain SELECT, not Alembic's migration context.)"""
    try:
        with engine.connect() as conn:
            revision = conn.execute(_VERSION).scalar_one_or_none()
    except (OperationalError, ProgrammingError) as exc:
        if "alembic_version" not in str(exc):   # locked, unreachable: the tick's to handle
            raise
        revision = None   # no pbem tables (yet)
    check_known(revision)


def upgrade(engine: Engine, target: str = "head") -> tuple[str | None, str | None]:
    """Bring the schema to target (under the migration lock); (before, after) revisions.

    Cheap when there is nothing to do: the revision is read first without the lock,
    and again under it, since another process may have migrated in between.
    """
    wanted = head_revision() if target == "head" else target
    before = current_revision(engine)
    check_known(before)
    if before == wanted:
        return before, before
    with migration_lock(engine):
        before = current_revision(engine)
        check_known(before)
        if before != wanted:
            command.upgrade(alembic_config(engine), wanted)
        return before, current_revision(engine)


# --------------------------------------------------------------------------- the lock


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Hold the database's migration lock: one migrating process at a time."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:   # a session lock: it ends with the connection
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"),
                             {"key": MIGRATION_LOCK_KEY})
                conn.commit()
        return
    path = sqlite_path(str(engine.url))
    if path is None:   # in memory: private to this process
        yield
        return
    # a file of its own: never open the database file itself, since closing any
    # descriptor of it drops this process's SQLite (POSIX) locks on it
    with open(path.with_name(path.name + ".migrate-lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
