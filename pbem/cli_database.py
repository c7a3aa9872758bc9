"""`pbem db`: the database from the shell, for operators: its schema's revision, an
upgrade by hand, a backup (SQLite's online one, or PostgreSQL's pg_dump) and [retention]
now (docs/operating.md). The parser and the other commands are pbem.cli's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from pbem.config import Settings, command_settings
from pbem.runner.retention import Pruned, prune_inbound, prune_outbox
from pbem.store import db, engines
from pbem.store.backup import (
    BackupPlan,
    backup_name,
    backup_sqlite,
    backups_in,
    keep_newest,
    pg_dump_command,
)


def cmd_db(args: argparse.Namespace) -> int:
    """`pbem db current` and `pbem db upgrade`: the schema, for operators who migrate by hand;
    `pbem db backup` and `pbem db prune` (docs/operating.md)."""
    settings = command_settings(args.config)
    url = settings.database
    path = engines.sqlite_path(url)
    if args.action == "backup":
        return db_backup(settings, args.path, run=args.run)
    if args.action == "prune":
        return db_prune(settings)
    if path is not None and args.action == "current" and not path.is_file():
        # looking must not make an empty database (and its folder) at a mistyped path
        print(f"empty: no database at {path} (nothing created; `pbem db upgrade` makes it, "
              f"revision {db.head_revision()})")
        return 0
    engine = db.open_database(url, migrate=False)
    current, head = db.current_revision(engine), db.head_revision()
    if args.action == "upgrade":
        plan = BackupPlan(settings.backup_folder, settings.backup.keep)
        had = set(backups_in(plan.folder, before_migration=True))
        before, after = db.upgrade(engine, args.to or "head", backups=plan)
        for taken in sorted(set(backups_in(plan.folder, before_migration=True)) - had):
            print(f"backed up to {taken} first")
        print(f"database already at {after}" if before == after else
              f"database upgraded from {before or 'empty'} to {after}")
    elif current is None:
        print(f"empty (no pbem tables yet; `pbem db upgrade` makes them, revision {head})")
    elif current == head:
        print(f"{current} (the newest this pbem knows)")
    elif current in db.revisions():
        print(f"{current} (this pbem knows up to {head}: run `pbem db upgrade`)")
    else:
        print(f"{current} (newer than this pbem knows, {head}: a newer pbem upgraded it)")
        return 1
    return 0


def db_backup(settings: Settings, given: str | None, *, run: bool) -> int:
    """`pbem db backup [PATH]`: SQLite's online backup, whole while pbem runs; without PATH
    into [backup] dir, where the newest [backup] keep are kept. PostgreSQL: pg_dump's
    command line, run with --run."""
    path = engines.sqlite_path(settings.database)
    folder = settings.backup_folder
    if path is not None:
        owner = path.stat().st_uid if path.is_file() else os.geteuid()
        if os.geteuid() == 0 and owner != 0:
            # root would leave the -wal and -shm files it opens root's: pbem could not write
            print(f"error: {path} belongs to user {owner}: back it up as that user "
                  f"(sudo -u '#{owner}' pbem db backup ...)", file=sys.stderr)
            return 2
        target = Path(given).expanduser() if given else None
        taken, revision = backup_sqlite(path, target, folder=folder)
        if target is None:
            keep_newest(folder, max(settings.backup.keep, 1), before_migration=False)
        print(f"backed up {path} (schema {revision or 'empty'}) to {taken}")
        return 0
    if not settings.database.startswith("postgresql"):
        print(f"error: pbem backs up SQLite and PostgreSQL databases, not "
              f"{settings.database.partition(':')[0]}", file=sys.stderr)
        return 2
    if given:
        target = Path(given).expanduser()
    else:
        engine = db.open_database(settings.database, migrate=False)
        try:
            target = folder / backup_name(db.current_revision(engine), suffix=".dump")
        finally:
            engine.dispose()
    dump = pg_dump_command(settings.database, target)
    if not run:
        print("A PostgreSQL database is backed up with pg_dump (consistent while pbem runs; "
              "`pbem db backup --run` runs it):\n\n    " + dump.shown +
              "\n\nand restored, pbem stopped, with pg_restore --clean --if-exists "
              "--no-owner --dbname=... (docs/operating.md)")
        return 0
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        done = subprocess.run(dump.argv, env={**os.environ, **dump.env}, check=False)
    except FileNotFoundError:
        print("error: there is no pg_dump here: install PostgreSQL's client programs "
              "(Debian: apt-get install postgresql-client)", file=sys.stderr)
        return 2
    if done.returncode != 0:
        print(f"error: pg_dump failed (exit {done.returncode}): {dump.shown}", file=sys.stderr)
        return 1
    if not given:
        keep_newest(folder, max(settings.backup.keep, 1), before_migration=False)
    print(f"backed up the PostgreSQL database to {target}")
    return 0


def db_prune(settings: Settings) -> int:
    """`pbem db prune`: [retention] now, as the ticks do once a day (pbem.runner.retention)."""
    keep = settings.retention
    engine = db.open_database(settings.database, migrate=False)
    try:
        db.check_schema(engine)
        if db.current_revision(engine) != db.head_revision():
            print("error: the database's schema is not the newest: run `pbem db upgrade` "
                  "first", file=sys.stderr)
            return 2
        now = datetime.now(UTC)
        pruned = (prune_inbound(engine, now, keep.inbound_days) if keep.inbound_days > 0
                  else Pruned())
        if keep.outbox_days > 0:
            pruned.files = prune_outbox(engine, settings.outbox_dir, now, keep.outbox_days).files
    finally:
        engine.dispose()
    print(f"pruned: {pruned} (inbound_days {keep.inbound_days:g}, "
          f"outbox_days {keep.outbox_days:g}; 0: kept for ever)")
    return 0
