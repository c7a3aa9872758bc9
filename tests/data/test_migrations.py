"""A safe first start and upgrade, on SQLite and on PostgreSQL (the ``database``
fixture runs each test on both).

Any number of `pbem tick` processes started together on a fresh database make
the schema once and all carry on (the migrations run under a lock); `pbem db
upgrade` and `pbem db current` for operators who migrate by hand; a database
upgraded by a newer pbem is refused with a clear message, not misread.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import Session, SQLModel, select

from pbem.config import load_settings
from pbem.store import db
from pbem.store.models import Game, Player
from pbem.web.database import DatabaseNotReady, open_read_only
from testkit.crash import ROOT
from testkit.pgstack import PgCluster
from testkit.stored import inbound_rows
from testkit.workers import Workers, wait_until, write_config

DEPLOY = ROOT / "deploy"

TABLES = {"game", "player", "move", "pendingorder", "inbound_mail", "outbound_mail",
          "absence", "signup", "talk_message", "watcher", "sender_event", "server_state",
          "audit_entry", "inbound_raw", "outbound_body"}


def config_text(database: str, tmp_path: Path) -> str:
    return (f'[server]\ndatabase = "{database}"\naddress = "bluff@example.org"\n'
            f'referee = "referee@example.org"\nreferee_key = "k"\n'
            f'outbox_dir = "{tmp_path / "out"}"\n')


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return env


def pbem(*words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pbem.cli", *words], capture_output=True,
                          text=True, timeout=120, env=environment(), check=False)


def started_together(words: list[str], config: str, folder: Path,
                     n: int) -> list[subprocess.CompletedProcess[str]]:
    """n `pbem WORDS -c <config>` processes let go at the same moment.

    Each reads its config from a FIFO of its own; opening a FIFO blocks until both
    ends are open, so all n have started and imported pbem before any of them
    gets its config. Then all are given it at once and race to open the database.
    """
    gates = [folder / f"pbem-{i}.toml" for i in range(n)]
    procs = []
    for gate in gates:
        os.mkfifo(gate)
        procs.append(subprocess.Popen([sys.executable, "-m", "pbem.cli", *words, "-c", str(gate)],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=environment()))
    ends: list[int] = []
    deadline = time.monotonic() + 120
    for gate, proc in zip(gates, procs):
        while True:
            try:   # non-blocking: fails with ENXIO until the process opens its end
                ends.append(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))
                break
            except OSError as exc:
                assert exc.errno == errno.ENXIO, exc
                assert proc.poll() is None, proc.communicate()[0]
                assert time.monotonic() < deadline, "a process never read its config"
                time.sleep(0.01)
    for end in ends:
        os.write(end, config.encode())
    for end in ends:
        os.close(end)
    done = []
    for proc in procs:
        out, _ = proc.communicate(timeout=180)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, ""))
    return done


def schema_matches_the_models(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == []
    assert TABLES <= set(sa.inspect(engine).get_table_names())


# --------------------------------------------------------------------------- a first start


@pytest.mark.parametrize("n", [2, 10])
def test_pbem_ticks_started_together_on_a_fresh_database_all_carry_on(
        database: str, tmp_path: Path, n: int) -> None:
    done = started_together(["tick"], config_text(database, tmp_path), tmp_path, n)
    assert [p.returncode for p in done] == [0] * n, "\n".join(p.stdout for p in done)
    assert all("tick: fetched 0" in p.stdout for p in done)
    engine = db.open_database(database, migrate=False)
    assert db.current_revision(engine) == db.head_revision()
    schema_matches_the_models(engine)


def test_upgrade_from_empty_makes_the_models_schema(database: str, tmp_path: Path) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text(config_text(database, tmp_path))
    shown = pbem("db", "current", "-c", str(config))
    assert shown.returncode == 0 and "empty" in shown.stdout, shown.stdout + shown.stderr
    upgraded = pbem("db", "upgrade", "-c", str(config))
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    assert f"to {db.head_revision()}" in upgraded.stdout
    again = pbem("db", "upgrade", "-c", str(config))
    assert again.returncode == 0 and "already" in again.stdout, again.stdout + again.stderr
    shown = pbem("db", "current", "-c", str(config))
    assert shown.returncode == 0 and shown.stdout.startswith(db.head_revision())
    schema_matches_the_models(db.open_database(database, migrate=False))


def test_upgrade_from_every_earlier_revision_keeps_the_data(database: str) -> None:
    """From each revision (the previous one included) to the head; rows written under
    the first revision's schema read back through today's models."""
    engine = db.open_database(database, migrate=False)
    revisions = db.revisions()
    assert revisions[-1] == db.head_revision() and len(revisions) >= 2
    assert db.upgrade(engine, revisions[0]) == (None, revisions[0])
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO game (id, name, kind, rules_json, seed_hex, commitment, status, turn,"
            " created_at) VALUES (1, 'g1', 'postal', '{}', 'ab', 'cd', 'new', 0, :at)"),
            {"at": "2026-12-01 12:00:00"})
        conn.execute(sa.text(
            "INSERT INTO player (id, game_id, entrant, email, name, key)"
            " VALUES (1, 1, 1, 'ann@example.org', 'Ann', 'k1')"))
        conn.execute(sa.text(
            "INSERT INTO inbound_mail (id, dedupe_key, source, raw, size, truncated,"
            " received_at, status) VALUES (1, '<m1@x>', 'smtp', :raw, 5, :no, :at, 'done')"),
            {"raw": b"hi\x00\xff!", "no": False, "at": "2026-12-01 12:00:00"})
    for earlier in revisions[1:]:
        before, after = db.upgrade(engine, earlier)
        assert after == earlier and before != after
    assert db.upgrade(engine) == (db.head_revision(), db.head_revision())   # nothing to do
    schema_matches_the_models(engine)
    with Session(engine) as session:
        player = session.exec(select(Player)).one()
        assert (player.email, player.active, player.missed_turns) == ("ann@example.org", True, 0)
        assert session.exec(select(Game)).one().options_json == "{}"
        [row] = inbound_rows(session)
        assert row.raw == b"hi\x00\xff!" and row.status == "done"


def test_upgrade_from_the_previous_revision(database: str) -> None:
    engine = db.open_database(database, migrate=False)
    head = db.head_revision()
    previous = db.revisions()[-2]
    db.upgrade(engine, previous)
    assert db.current_revision(engine) == previous
    assert db.upgrade(engine) == (previous, head)
    schema_matches_the_models(engine)


# --------------------------------------------------------------------------- a newer schema


def test_a_schema_newer_than_this_pbem_is_refused_with_a_clear_message(
        database: str, tmp_path: Path) -> None:
    engine = db.open_database(database)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    config = tmp_path / "pbem.toml"
    config.write_text(config_text(database, tmp_path))
    for words in (["tick"], ["admin", "STATUS"], ["db", "upgrade"]):
        refused = pbem(*words, "-c", str(config))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "9999" in refused.stderr and "newer pbem" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    shown = pbem("db", "current", "-c", str(config))
    assert shown.returncode == 1 and "9999" in shown.stdout and "newer" in shown.stdout
    with pytest.raises(db.SchemaError, match="9999"):
        db.open_database(database)
    with pytest.raises(DatabaseNotReady, match="9999, newer than this code knows"):
        open_read_only(database)   # the web pages too
    with engine.connect() as conn:    # refused, and left alone
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == "9999"


# --------------------------------------------------------------------------- the deploy sample


def test_the_deploy_sample_sets_up_a_role_of_its_own_that_runs_pbem(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    """deploy/postgres-setup.sql as the README says to run it, then deploy/pbem-postgres.toml
    (its mail sections left out: mail goes to .eml files): pbem runs as a role that owns
    its database and nothing more."""
    assert pgcluster.bin_dir is not None
    setup = subprocess.run(
        [str(pgcluster.bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(pgcluster.port),
         "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1",
         "-v", "password='s3cret pass'", "-f", str(DEPLOY / "postgres-setup.sql")],
        capture_output=True, text=True, timeout=60, check=False)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    sample = (DEPLOY / "pbem-postgres.toml").read_text()
    assert load_settings(DEPLOY / "pbem-postgres.toml").database.startswith("postgresql+psycopg")
    url = f"postgresql+psycopg://pbem:s3cret%20pass@127.0.0.1:{pgcluster.port}/pbem"
    server_part = sample[sample.index("[server]"):sample.index("[imap]")]
    server_part = re.sub(r'(?m)^database = ".*"$', f'database = "{url}"', server_part)
    config = tmp_path / "pbem.toml"
    config.write_text(server_part + f'outbox_dir = "{tmp_path / "out"}"\n')
    for words in (["db", "upgrade"], ["tick"], ["admin", "NEWGAME", "g1"]):
        done = pbem(*words, "-c", str(config))
        assert done.returncode == 0, (words, done.stdout + done.stderr)
    assert "created" in done.stdout
    engine = db.open_database(url, migrate=False)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = 'pbem'")
                            ).scalar() is False
        owners = {row[0] for row in conn.execute(sa.text(
            "SELECT tableowner FROM pg_tables WHERE schemaname = 'public'"))}
        assert owners == {"pbem"}
    engine.dispose()


def test_a_running_worker_stops_when_a_newer_pbem_upgrades_the_database(
        database: str, mailstack: Any, tmp_path: Path) -> None:
    """`pbem serve` checks the schema every tick: once another pbem has upgraded the
    database past what this one knows, it stops (exit status 2) with the reason."""
    config = write_config(tmp_path / "pbem.toml", mailstack, database, poll_seconds=0.3)
    engine = db.open_database(database)
    with Workers(config, tmp_path) as workers:
        (pid,) = workers.start(1)
        wait_until(workers.all_ticking, 60, "the first tick")
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
        proc = workers.procs[0]
        assert proc.wait(60) == 2, workers.logs()
    log = workers.logs()
    assert "stopping: the database is at schema revision 9999" in log
    assert "database error: the database is at schema revision 9999" in log
