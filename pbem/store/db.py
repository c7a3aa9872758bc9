"""Opening the database, and its schema: created and migrated with Alembic on first use.

Migrations run under a lock, so any number of processes starting together on a
fresh (or older) database make the schema once and all carry on: a session
advisory lock on PostgreSQL; on SQLite an exclusive lock (flock) on a lock file
next to the database file, which works before the database file exists too.
A database whose schema is newer than this pbem knows is refused (SchemaError).
All the migrations of a run are one transaction (schema/env.py), on SQLite too:
there the engine begins every transaction itself (BEGIN IMMEDIATE, or BEGIN on
``reading(engine)``), so DDL is transactional and a run killed anywhere leaves the
schema and the rows as they were.

SQLite and PostgreSQL behave the same here: text is stored without NUL characters
on both (PostgreSQL's text cannot hold one, SQLite's can: a NUL in mail-borne
text becomes U+FFFD), and transient_error tells an outage (try again later) from
an error that will happen again with the same data.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import sqlite3
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, Integer, cast, event, func, select, text, true
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError
from sqlmodel import Session, create_engine

from pbem.store.backup import BackupPlan, backup_sqlite, keep_newest
from pbem.store.paths import packaged_dir
from pbem.text.errors import PbemError

log = logging.getLogger(__name__)

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


def open_database(url: str, *, migrate: bool = True, synchronous: str = "normal",
                  backups: BackupPlan | None = None) -> Engine:
    """The engine for url; with migrate, its schema brought up to date (under the lock),
    a SQLite database backed up first into ``backups`` (see upgrade).

    Raises SchemaError when the database is at a revision this pbem does not know.
    """
    engine = make_engine(url, synchronous=synchronous)
    if migrate:
        upgrade(engine, backups=backups)
    return engine


def core_read(session: Session, statement: Any, params: dict[str, Any] | None = None) -> Any:
    """Run a read on the session's connection as Core: rows of plain columns at a tenth of
    an ORM query's cost. What the session holds unflushed is flushed first, as the ORM's
    autoflush would, so the read sees the transaction's own changes (flush() returns at
    once when nothing is pending)."""
    session.flush()
    return session.connection().execute(statement, params or {})


_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


def one_writer(session: Session) -> None:
    """Begin a transaction that changes games alone: take the writer's lock first, so
    that what it reads next is current and no other such transaction interleaves.

    PostgreSQL (read committed) lets two transactions read the same game and both
    write: an advisory lock, held until the transaction ends. On SQLite the transaction
    began with BEGIN IMMEDIATE (make_engine): it holds the write lock already, and here
    it is only begun if it was not yet.
    """
    conn = session.connection()   # Core: the ORM adds nothing to a plain statement
    if conn.dialect.name == "postgresql":
        conn.execute(_ADVISORY_LOCK, {"key": WRITER_LOCK_KEY})


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
# game_writer's two locks in one round trip: a select list is evaluated left to right,
# so the writer's shared lock is still taken first
_GAME_WRITER_LOCKS = text("SELECT pg_advisory_xact_lock_shared(:writer), "
                          "pg_advisory_xact_lock(CAST(:space AS integer), "
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
    if wait:
        conn.execute(_GAME_WRITER_LOCKS, {"writer": WRITER_LOCK_KEY, "space": GAME_LOCK_SPACE,
                                          "key": game_id})
        return True
    conn.execute(_SHARED_WRITER_LOCK, {"key": WRITER_LOCK_KEY})
    return bool(conn.execute(_TRY_PAIR_LOCK, {"space": GAME_LOCK_SPACE,
                                              "key": game_id}).scalar())


def sender_writer(session: Session, address: str) -> None:
    """In a game_writer transaction, the sender's lock too (taken after the game's: one
    order everywhere, no deadlock): two mails of one address to two games do not write
    its rate limits, bounces and seats at once."""
    session.connection().execute(_PAIR_LOCK, {"space": SENDER_LOCK_SPACE,
                                              "key": lock_key(address.lower())})


# the senders' locks of a group of mails (senders_writer) in one statement: the keys in
# ascending order (unnest keeps the array's order), so two groups never wait in a circle
_SENDER_LOCKS = text("SELECT pg_advisory_xact_lock(CAST(:space AS integer), key) "
                     "FROM unnest(CAST(:keys AS integer[])) AS key")


def senders_writer(session: Session, addresses: list[str]) -> None:
    """In a game_writer transaction that handles several mails of the game (a group), the
    locks of all their senders, taken at its start in one round trip and always in the
    same order (ascending keys): a transaction that waits for a sender's lock holds
    only smaller ones and its game's, so no two wait for each other in a circle, and it
    never waits for one once it has written rows (each mail alone: sender_writer)."""
    keys = sorted({lock_key(address.lower()) for address in addresses})
    if keys:
        session.connection().execute(_SENDER_LOCKS, {"space": SENDER_LOCK_SPACE,
                                                     "keys": keys})


def lane_claim(session: Session, lane: int, *, wait: bool = False) -> bool:
    """One claim of a lane's mail at a time (pbem.runner.inbox.claim_lane), one giving of lanes
    (pbem.runner.inbox.give_lanes): without ``wait`` only tried, False if another process is at
    it right now; with it, waited for (True)."""
    conn = session.connection()
    if wait:
        conn.execute(_PAIR_LOCK, {"space": LANE_CLAIM_SPACE, "key": lane})
        return True
    return bool(conn.execute(_TRY_PAIR_LOCK, {"space": LANE_CLAIM_SPACE,
                                              "key": lane}).scalar())


def lane_claim_reading(session: Session, lane: int, rows: Any) -> list[Any] | None:
    """lane_claim tried, and when it is ours the ``rows`` (a SELECT, in the order of its
    first column) read, in one round trip: None if another process is at the lane right
    now. The lock is tried first (a
    one-row subquery), the rows read after it (a LATERAL subquery that reads none
    without it); the statement's snapshot may be a moment older than the lock, so a
    claim committed by the lock's last holder in that moment can look free here: the
    caller's claim (a compare-and-swap) then finds it taken."""
    tried = select(func.pg_try_advisory_xact_lock(
        cast(LANE_CLAIM_SPACE, Integer), cast(lane, Integer)).label("got")).subquery("tried")
    found = rows.where(tried.c.got).lateral("found")
    read = session.connection().execute(
        select(tried.c.got, *found.c).select_from(tried.outerjoin(found, true()))
        .order_by(found.c[0])).all()
    if not read[0][0]:
        return None
    return [row[1:] for row in read if row[1] is not None]


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
    with reading(engine).connect() as conn:
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
        with reading(engine).connect() as conn:
            revision = conn.execute(_VERSION).scalar_one_or_none()
    except (OperationalError, ProgrammingError) as exc:
        if "alembic_version" not in str(exc):   # locked, unreachable: the tick's to handle
            raise
        revision = None   # no pbem tables (yet)
    check_known(revision)


def upgrade(engine: Engine, target: str = "head", *,
            backups: BackupPlan | None = None) -> tuple[str | None, str | None]:
    """Bring the schema to target (under the migration lock); (before, after) revisions.

    Cheap when there is nothing to do: the revision is read first without the lock,
    and again under it, since another process may have migrated in between. With
    ``backups`` (keep > 0), a SQLite database that has pbem's tables and a migration to
    run is backed up into its folder first, under the lock, and the newest ``keep`` of
    those backups are kept (pbem.store.backup); a backup that fails stops the migration.
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
            _backup_before(engine, before, wanted, backups)
            command.upgrade(alembic_config(engine), wanted)
        return before, current_revision(engine)


def _backup_before(engine: Engine, before: str | None, wanted: str,
                   backups: BackupPlan | None) -> None:
    """The backup before a migration (upgrade): only of a SQLite file with pbem's tables
    in it (a new database holds nothing to lose). PostgreSQL's is the operator's pg_dump
    (docs/operating.md)."""
    path = sqlite_path(str(engine.url))
    if backups is None or backups.keep <= 0 or before is None or path is None:
        return
    taken, _revision = backup_sqlite(path, folder=backups.folder, before=wanted)
    keep_newest(backups.folder, backups.keep, before_migration=True)
    log.info("backed up the database to %s before migrating it from %s to %s",
                taken, before, wanted)


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
