"""Opening the database, and its schema: created and migrated with Alembic on first use.

Migrations run under a lock, so any number of processes starting together on a
fresh (or older) database make the schema once and all carry on: a session
advisory lock on PostgreSQL; on SQLite an exclusive lock (flock) on a lock file
next to the database file, which works before the database file exists too.
A database whose schema is newer than this pbem knows is refused (SchemaError).
All the migrations of a run are one transaction (schema/env.py), on SQLite too:
there the engine begins every transaction itself (BEGIN IMMEDIATE, or BEGIN on
``reading(engine)``: pbem.store.engines), so DDL is transactional and a run killed
anywhere leaves the schema and the rows as they were.
"""

from __future__ import annotations

import fcntl
import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from pbem.store.advisory_locks import MIGRATION_LOCK_KEY
from pbem.store.backup import BackupPlan, backup_sqlite, keep_newest
from pbem.store.engines import make_engine, reading, sqlite_path
from pbem.store.paths import packaged_dir
from pbem.text.errors import PbemError

log = logging.getLogger(__name__)

class SchemaError(PbemError):
    """The database's schema does not fit this pbem (e.g. a newer pbem upgraded it)."""


def alembic_config(engine: Engine | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(packaged_dir("schema")))
    cfg.attributes["engine"] = engine
    return cfg


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
