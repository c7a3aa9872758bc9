"""Backups of a SQLite database taken while pbem runs, and the folder that keeps them.

``backup_sqlite`` copies the database with SQLite's online backup API in one step: one
read transaction, so the copy is the database as one commit left it, while the server
goes on writing (in WAL mode a reader holds no writer up). The copy is written to a
temporary file beside the target, checked (``PRAGMA quick_check``), flushed to disk
and only then renamed to its name: a backup that is there is whole.

In a backup folder the backups are named by when they were taken and the schema revision
they hold (``pbem-20261206T070102Z-0012.db``); the one taken before a migration says so
(``pbem-20261206T070102Z-0011-before-0013.db``). ``keep_newest`` deletes all but the
newest of one kind. Below pbem.store.db (which takes one before each migration): the standard
library only.
"""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from sqlalchemy.engine import make_url

from pbem.store.paths import fsync_dir
from pbem.text.errors import PbemError

__all__ = ["BackupError", "BackupPlan", "PgDump", "backup_name", "backup_sqlite",
           "backups_in", "keep_newest", "pg_dump_command"]

_NAME = re.compile(r"^pbem-(\d{8}T\d{6}(?:\.\d+)?Z)-([0-9A-Za-z_]+|empty)"
                   r"(?:-before-([0-9A-Za-z_]+))?\.(?:db|dump)$")


class BackupError(PbemError):
    """A backup could not be taken (no room, no such database, a copy that is not whole)."""


class BackupPlan:
    """Where the backups before a migration go and how many are kept ([backup] dir, keep);
    keep 0: none is taken."""

    def __init__(self, folder: Path, keep: int) -> None:
        self.folder, self.keep = Path(folder), keep

    def __repr__(self) -> str:
        return f"BackupPlan({self.folder}, keep={self.keep})"


def backup_name(revision: str | None, before: str | None = None,
                now: datetime | None = None, suffix: str = ".db") -> str:
    """The file name of a backup at ``revision`` (taken before migrating to ``before``);
    suffix .dump: pg_dump's."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S.%fZ")
    name = f"pbem-{stamp}-{revision or 'empty'}"
    return f"{name}-before-{before}{suffix}" if before else f"{name}{suffix}"


def backups_in(folder: Path, *, before_migration: bool) -> list[Path]:
    """The backups of one kind in ``folder``, oldest first (their names begin with the
    time they were taken)."""
    if not folder.is_dir():
        return []
    found = [path for path in folder.iterdir()
             if (match := _NAME.match(path.name)) and bool(match.group(3)) == before_migration]
    return sorted(found, key=lambda path: path.name)


def keep_newest(folder: Path, keep: int, *, before_migration: bool) -> list[Path]:
    """Delete all but the newest ``keep`` backups of one kind; returns those deleted."""
    gone = backups_in(folder, before_migration=before_migration)[:-keep or None]
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


def _revision(connection: sqlite3.Connection) -> str | None:
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError:   # no pbem tables
        return None
    return str(row[0]) if row else None


def backup_sqlite(source: Path, target: Path | None = None, *, folder: Path | None = None,
                  before: str | None = None, busy_ms: int = 30000) -> tuple[Path, str | None]:
    """Copy the SQLite database ``source`` to ``target`` (or, without it, to a new name in
    ``folder``: backup_name) while other processes may be writing it; returns the
    backup's path and the schema revision it holds. The file is readable by its owner
    alone: it holds the players' keys."""
    if not source.is_file():
        raise BackupError(f"there is no database at {source}")
    into = target.parent if target is not None else folder
    assert into is not None, "a target or a folder"
    temporary = into / f".pbem-backup-{uuid.uuid4().hex}.tmp"
    made = False
    try:
        into.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        made = True
        # read-only, so a backup never makes a database; the path quoted: a ? or # in it
        # would begin the URI's query
        src = sqlite3.connect(f"file:{quote(str(source))}?mode=ro", uri=True,
                              timeout=busy_ms / 1000, isolation_level=None)
        try:
            dst = sqlite3.connect(temporary, isolation_level=None)
            try:
                src.backup(dst)   # all pages in one step: one read transaction, one commit
                dst.execute("PRAGMA journal_mode=DELETE")   # one file, no -wal beside it
                checked = dst.execute("PRAGMA quick_check").fetchone()
                if not checked or checked[0] != "ok":
                    raise BackupError(f"the copy of {source} is not whole: {checked}")
                revision = _revision(dst)
            finally:
                dst.close()
        finally:
            src.close()
        with open(temporary, "rb+") as copy:
            os.fsync(copy.fileno())
        final = target if target is not None else into / backup_name(revision, before)
        os.replace(temporary, final)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot back up {source}: {exc}") from exc
    except OSError as exc:
        raise BackupError(f"cannot write the backup in {into}: "
                          f"{exc.strerror or exc}") from exc
    finally:
        if made:
            temporary.unlink(missing_ok=True)   # gone already when renamed
    fsync_dir(into)
    return final, revision


@dataclass(frozen=True)
class PgDump:
    """pg_dump's command line for a PostgreSQL URL: argv, the environment it needs on top
    (the password, as PGPASSWORD: not on the command line, where `ps` shows it) and the
    line to show (the password masked)."""

    argv: list[str]
    env: dict[str, str]
    shown: str


def pg_dump_command(url: str, target: Path) -> PgDump:
    """``pg_dump -Fc`` (its custom format, for pg_restore) of the database at ``url`` into
    ``target``; the URL's query (sslmode=...) goes as PGSSLMODE and the like."""
    parts = make_url(url)
    argv = ["pg_dump", "--format=custom", "--no-owner", f"--file={target}"]
    if parts.host:
        argv.append(f"--host={parts.host}")
    if parts.port:
        argv.append(f"--port={parts.port}")
    if parts.username:
        argv.append(f"--username={parts.username}")
    argv.append(f"--dbname={parts.database or ''}")
    env = {f"PG{key.upper()}": str(value) for key, value in parts.query.items()
           if key in ("sslmode", "sslrootcert", "sslcert", "sslkey")}
    shown = [f"{name}={shlex.quote(value)}" for name, value in env.items()]
    if parts.password:
        env["PGPASSWORD"] = str(parts.password)
        shown.append("PGPASSWORD=****")
    return PgDump(argv, env, " ".join([*shown, *(shlex.quote(a) for a in argv)]))
