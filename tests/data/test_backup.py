"""Backups: `pbem db backup` while games are played restores to the same records; a
backup before every migration, kept [backup] keep deep; PostgreSQL's pg_dump."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import Session

from pbem.config import load_settings
from pbem.games.records import find_game
from pbem.kinds.verify import check_record
from pbem.runner.server import Server
from pbem.services.export import export_json
from pbem.store import db
from pbem.store.backup import (
    BackupError,
    backup_name,
    backup_sqlite,
    backups_in,
    keep_newest,
    pg_dump_command,
)
from testkit.crash import ROOT
from testkit.pgstack import PgCluster
from testkit.schema_state import filled_at_first_revision, revision_of, rows_of


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return env


def pbem(*words: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pbem.cli", *words], capture_output=True,
                          text=True, timeout=120, env=environment(), cwd=cwd, check=False)


def config(folder: Path, database: str, extra: str = "") -> Path:
    path = folder / "pbem.toml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[server]\ndatabase = "{database}"\naddress = "bluff@example.org"\n'
                    f'referee = "referee@example.org"\nreferee_key = "k"\n{extra}', "utf-8")
    return path


def games_in(path: Path) -> dict[str, tuple[str, int]]:
    """The games of a backup; none when it was taken before the schema was made (all the
    migrations are one transaction: then there is no table at all)."""
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        if "game" not in tables:
            assert not tables
            return {}
        return {name: (status, turn) for name, status, turn in
                conn.execute("SELECT name, status, turn FROM game")}


def moves_in(path: Path, game: str) -> list[tuple[int, int, str]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute(
            "SELECT move.turn, seat, move_json FROM move JOIN game ON game.id = move.game_id "
            "WHERE game.name = ? ORDER BY move.turn, seat", (game,)))


def record_of(path: Path, game: str) -> dict[str, object]:
    engine = db.open_database(f"sqlite:///{path}", migrate=False)
    try:
        with Session(engine) as session:
            return export_json(session, find_game(session, game))
    finally:
        engine.dispose()


def test_a_backup_taken_while_games_are_played_restores_the_same_records(
        tmp_path: Path) -> None:
    """Two robot games played one after the other by `pbem demo` in another process,
    backed up with `pbem db backup` all the while: every backup is the database as one
    commit left it (each game's moves are those of its finished turns, no more, no less),
    a finished game's record from it is the one the live database gave and `pbem verify`
    passes it, also after a restore through the command line."""
    live = tmp_path / "live"
    toml = config(tmp_path / "cfg", f"sqlite:///{live / 'pbem.db'}")
    play = subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -m pbem.cli demo --dir {live} --seed 1"
                     f" && {sys.executable} -m pbem.cli demo --dir {live} --seed 2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment())
    backups: list[Path] = []
    first = ""
    by_command: subprocess.Popen[str] | None = None
    try:
        while play.poll() is None:
            if (live / "pbem.db").is_file():
                target = tmp_path / "backups" / f"b{len(backups)}.db"
                ended = list(live.glob("*.json"))
                if by_command is None and ended:
                    first = ended[0].stem
                    # the second game is on: one backup through the command line too
                    by_command = subprocess.Popen(
                        [sys.executable, "-m", "pbem.cli", "db", "backup", "-c", str(toml),
                         str(target)], stdout=subprocess.PIPE, text=True, env=environment())
                else:
                    backup_sqlite(live / "pbem.db", target)
                backups.append(target)
            time.sleep(0.1)
    finally:
        if play.poll() is None:
            play.kill()
    assert by_command is not None
    said, _ = by_command.communicate(timeout=60)
    assert by_command.returncode == 0 and f"schema {db.head_revision()}) to " in said
    assert play.wait() == 0
    records = {path.stem: json.loads(path.read_text("utf-8")) for path in live.glob("*.json")}
    assert len(records) == 2 and len(backups) >= 5
    final = {name: moves_in(live / "pbem.db", name) for name in records}
    mid_game_after_one_ended = []
    for backup in backups:
        assert not Path(f"{backup}-wal").exists()
        with sqlite3.connect(backup) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for name, (status, turn) in games_in(backup).items():
            resolved = [m for m in final[name] if m[0] < turn or status == "over"]
            assert moves_in(backup, name) == resolved, (backup, name)
            if status == "over":
                record = record_of(backup, name)
                assert record == records[name]
                assert check_record(record).ok
        statuses = games_in(backup)
        if statuses.get(first, ("",))[0] == "over" and any(
                s == "running" for s, _ in statuses.values()):
            mid_game_after_one_ended.append(backup)
    assert mid_game_after_one_ended, "no backup was taken while the second game was played"

    # restore one of them as an operator would: the backup copied over the database file
    restored = tmp_path / "restored"
    restored.mkdir()
    shutil.copy(mid_game_after_one_ended[0], restored / "pbem.db")
    toml = config(restored, "sqlite:///pbem.db")
    exported = pbem("export", "-c", str(toml), first)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout) == records[first]
    (restored / "record.json").write_text(exported.stdout, "utf-8")
    verified = pbem("verify", str(restored / "record.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert pbem("db", "current", "-c", str(toml)).stdout.startswith(db.head_revision())


def test_a_migration_backs_up_the_database_first_and_keeps_the_newest(
        tmp_path: Path) -> None:
    """An old database is backed up before each migration (`pbem db upgrade`, and a
    server's first start), the backup holds the old revision and all its rows; of those
    backups the newest [backup] keep stay. Nothing to migrate, or nothing in it: none."""
    url = f"sqlite:///{tmp_path / 'pbem.db'}"
    columns = filled_at_first_revision(url, 3)
    rows = rows_of(url, columns)
    toml = config(tmp_path, "sqlite:///pbem.db", '[backup]\nkeep = 2\ndir = "saved"\n')
    folder = tmp_path / "saved"
    steps = db.revisions()
    upgraded = pbem("db", "upgrade", "-c", str(toml), "--to", steps[1])
    assert upgraded.returncode == 0, upgraded.stderr
    [first] = backups_in(folder, before_migration=True)
    assert f"backed up to {first} first" in upgraded.stdout
    assert first.name.endswith(f"-{steps[0]}-before-{steps[1]}.db")
    assert revision_of(f"sqlite:///{first}") == steps[0]
    assert rows_of(f"sqlite:///{first}", columns) == rows
    assert first.stat().st_mode & 0o077 == 0

    pbem("db", "upgrade", "-c", str(toml), "--to", steps[2])
    Server(load_settings(toml, env={})).close()   # serve's start migrates to the newest
    kept = backups_in(folder, before_migration=True)
    assert len(kept) == 2 and first not in kept
    assert [revision_of(f"sqlite:///{path}") for path in kept] == [steps[1], steps[2]]

    again = pbem("db", "upgrade", "-c", str(toml))
    assert "backed up" not in again.stdout and "already at" in again.stdout
    assert backups_in(folder, before_migration=True) == kept

    empty = tmp_path / "new"
    toml = config(empty, "sqlite:///pbem.db")
    assert pbem("db", "upgrade", "-c", str(toml)).returncode == 0
    assert not (empty / "pbem-backups").exists()


def test_backups_without_a_path_go_to_the_folder_and_the_newest_are_kept(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pbem.db'}"
    db.open_database(url).dispose()
    toml = config(tmp_path, "sqlite:///pbem.db", "[backup]\nkeep = 2\n")
    for _ in range(3):
        done = pbem("db", "backup", "-c", str(toml))
        assert done.returncode == 0, done.stderr
    kept = backups_in(tmp_path / "pbem-backups", before_migration=False)
    assert len(kept) == 2 and all(p.name.endswith(f"-{db.head_revision()}.db") for p in kept)
    assert keep_newest(tmp_path / "pbem-backups", 1, before_migration=True) == []


def test_a_backup_of_no_database_says_so(tmp_path: Path) -> None:
    toml = config(tmp_path, "sqlite:///nothing.db")
    done = pbem("db", "backup", "-c", str(toml), str(tmp_path / "b.db"))
    assert done.returncode == 2
    assert f"backup error: there is no database at {tmp_path / 'nothing.db'}" in done.stderr
    assert not (tmp_path / "nothing.db").exists() and not (tmp_path / "b.db").exists()


def test_a_backup_into_a_folder_that_cannot_be_written_leaves_nothing(tmp_path: Path) -> None:
    source = tmp_path / "pbem.db"
    db.open_database(f"sqlite:///{source}").dispose()
    (tmp_path / "file").write_text("")
    with pytest.raises(BackupError, match="cannot write the backup in .*: Not a directory"):
        backup_sqlite(source, folder=tmp_path / "file" / "under")


def test_pg_dump_is_shown_with_the_password_masked(tmp_path: Path) -> None:
    dump = pg_dump_command("postgresql+psycopg://pbem:a%20long%20secret@db.example.org:5433/"
                           "games?sslmode=require", tmp_path / "x.dump")
    assert dump.env == {"PGSSLMODE": "require", "PGPASSWORD": "a long secret"}
    assert "secret" not in dump.shown
    assert dump.shown == (f"PGSSLMODE=require PGPASSWORD=**** pg_dump --format=custom "
                          f"--no-owner --file={tmp_path / 'x.dump'} --host=db.example.org "
                          f"--port=5433 --username=pbem --dbname=games")


@pytest.mark.postgresql
def test_pg_dump_backs_up_a_postgresql_database_that_restores(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    url = pgcluster.new_database()
    columns = filled_at_first_revision(url, 3)
    rows = rows_of(url, columns)
    toml = config(tmp_path, url)
    shown = pbem("db", "backup", "-c", str(toml), str(tmp_path / "pg.dump"))
    assert shown.returncode == 0 and "pg_dump --format=custom" in shown.stdout
    assert not (tmp_path / "pg.dump").exists()
    done = pbem("db", "backup", "--run", "-c", str(toml), str(tmp_path / "pg.dump"))
    assert done.returncode == 0, done.stderr
    copy = pgcluster.new_database()
    target = pg_dump_command(copy, tmp_path / "unused")
    dbname = target.argv[-1].removeprefix("--dbname=")
    restored = subprocess.run(["pg_restore", "--no-owner", *target.argv[4:-1],
                               f"--dbname={dbname}", str(tmp_path / "pg.dump")],
                              capture_output=True, text=True, check=False)
    assert restored.returncode == 0, restored.stderr
    assert revision_of(copy) == db.revisions()[0]
    assert rows_of(copy, columns) == rows


@pytest.mark.skipif(os.geteuid() != 0, reason="root backing up another user's database")
def test_root_backing_up_another_users_database_is_told_to_be_that_user(
        tmp_path: Path) -> None:
    """SQLite makes the -wal and -shm files as whoever opens the database: root's would
    lock pbem out of its own database."""
    db.open_database(f"sqlite:///{tmp_path / 'pbem.db'}").dispose()
    os.chown(tmp_path / "pbem.db", 65534, 65534)
    toml = config(tmp_path, "sqlite:///pbem.db")
    done = pbem("db", "backup", "-c", str(toml), str(tmp_path / "b.db"))
    assert done.returncode == 2
    assert "belongs to user 65534: back it up as that user" in done.stderr
    assert not (tmp_path / "b.db").exists() and not (tmp_path / "pbem.db-shm").exists()


@given(st.lists(st.tuples(st.datetimes(min_value=datetime(2000, 1, 1),
                                       max_value=datetime(2999, 12, 31)),
                          st.sampled_from([None, "0001", "0012", "0013"]),
                          st.sampled_from([None, "0013", "0014"])),
                min_size=0, max_size=12, unique_by=lambda t: t[0]),
       st.integers(min_value=1, max_value=5))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_newest_backups_of_each_kind_are_kept(
        tmp_path_factory: pytest.TempPathFactory,
        taken: list[tuple[datetime, str | None, str | None]], keep: int) -> None:
    """Backups are named so that their names sort as they were taken; keep_newest keeps
    the newest of one kind and never touches the other kind or other files."""
    folder = tmp_path_factory.mktemp("backups")
    (folder / "pbem.db").write_bytes(b"")              # not a backup: never deleted
    names = {backup_name(rev, before, when.replace(tzinfo=UTC)): (when, before)
             for when, rev, before in taken}
    for name in names:
        (folder / name).write_bytes(b"")
    for kind in (True, False):
        mine = sorted((when, name) for name, (when, before) in names.items()
                      if bool(before) == kind)
        assert [p.name for p in backups_in(folder, before_migration=kind)] == \
            [name for _, name in mine]
        keep_newest(folder, keep, before_migration=kind)
        assert [p.name for p in backups_in(folder, before_migration=kind)] == \
            [name for _, name in mine][-keep:]
    assert (folder / "pbem.db").exists()


def test_a_database_whose_path_has_uri_characters_is_backed_up(tmp_path: Path) -> None:
    """The source is opened by URI (read-only): a ?, # or % in its path is quoted, not
    taken for the URI's query (which would open, or make, another file)."""
    folder = tmp_path / "odd ?#% name"
    folder.mkdir()
    source = folder / "p?b#m%20.db"
    with sqlite3.connect(source) as conn:
        conn.execute("CREATE TABLE t (a)")
        conn.execute("INSERT INTO t VALUES (7)")
    conn.close()
    taken, revision = backup_sqlite(source, folder=folder / "saved")
    with sqlite3.connect(taken) as conn:
        assert conn.execute("SELECT a FROM t").fetchall() == [(7,)]
    conn.close()
    assert revision is None and sorted(p.name for p in folder.iterdir()) == [
        "p?b#m%20.db", "saved"]
