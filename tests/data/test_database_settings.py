"""[database]: how SQLite commits is a setting (synchronous NORMAL by default, or FULL).

With WAL and synchronous=NORMAL a commit is not flushed to disk at once: a process crash
(the crash tests kill with SIGKILL) loses nothing, a power loss may lose the last commits
but never corrupts the database. FULL flushes every commit. README "Guarantees" says so.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from pbem.config import ConfigError, DatabaseSettings, load_settings
from pbem.store.db import open_database
from pbem.store.engines import make_engine
from testkit.desk import Clock, make_server

# PRAGMA synchronous reads back as a number: 1 NORMAL, 2 FULL
LEVELS = {"normal": 1, "full": 2}


def synchronous_of(tmp_path: Path, db: DatabaseSettings | None) -> int:
    server = make_server(tmp_path, Clock(), **({"db": db} if db is not None else {}))
    with server.engine.connect() as conn:
        level = conn.execute(text("PRAGMA synchronous")).scalar_one()
        mode = conn.execute(text("PRAGMA journal_mode")).scalar_one()
    assert mode == "wal"
    return int(level)


def test_the_default_is_normal_and_full_is_a_setting(tmp_path: Path) -> None:
    assert synchronous_of(tmp_path / "default", None) == LEVELS["normal"]
    assert synchronous_of(tmp_path / "full", DatabaseSettings("full")) == LEVELS["full"]


def test_the_setting_is_read_from_the_database_section(tmp_path: Path) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text('[server]\ndatabase = "sqlite:///x.db"\n[database]\nsynchronous = "FULL"\n')
    assert load_settings(config, env={}).db.synchronous == "full"
    config.write_text('[server]\ndatabase = "sqlite:///x.db"\n')
    assert load_settings(config, env={}).db.synchronous == "normal"


@pytest.mark.parametrize("body", ['synchronous = "off"', 'fsync = "yes"'])
def test_a_wrong_setting_is_refused_with_its_section(tmp_path: Path, body: str) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text(f"[database]\n{body}\n")
    with pytest.raises(ConfigError, match=r"\[database\]"):
        load_settings(config, env={})


@pytest.mark.parametrize(("level", "fsyncs"), [("normal", 0), ("full", 2)])
def test_the_eml_outbox_flushes_each_mail_only_when_every_commit_is_flushed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: str, fsyncs: int) -> None:
    """An .eml written is as durable as the commit that marks it sent: "full" fsyncs the
    file and its folder, "normal" leaves both to the OS (a process crash loses neither)."""
    server = make_server(tmp_path, Clock(), db=DatabaseSettings(level))
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd))[1])
    raw = b"From: a@x.test\r\nTo: b@x.test\r\nMessage-ID: <m1@x.test>\r\nSubject: s\r\n\r\nbody\r\n"
    with server.senders.open() as sender:
        assert sender.send("a@x.test", ["b@x.test"], raw).accepted == ["b@x.test"]
    (written,) = Path(server.settings.outbox_dir).glob("*.eml")
    assert written.read_bytes() == raw and len(calls) == fsyncs


def test_switching_a_new_file_to_wal_waits_for_another_process_writing_it(
        tmp_path: Path) -> None:
    """Two pbem processes starting together on a new database: one writes the file while
    the other switches it to WAL. SQLite answers that switch "database is locked" at
    once, without waiting out busy_timeout, so the connection retries it meanwhile."""
    path = tmp_path / "new.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE first (n INTEGER)")
    writer.execute("BEGIN IMMEDIATE")          # a write in progress, journal not WAL yet
    writer.execute("INSERT INTO first VALUES (1)")
    done = threading.Timer(0.5, lambda: writer.execute("COMMIT"))
    done.start()
    try:
        engine = make_engine(f"sqlite:///{path}")
        with engine.connect() as conn:        # waits for the writer, then switches
            assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
            assert conn.execute(text("SELECT n FROM first")).scalar_one() == 1
        engine.dispose()
    finally:
        done.join()
        writer.close()


def test_a_short_write_waiting_behind_a_transaction_goes_before_the_next_one(
        tmp_path: Path) -> None:
    """The threads of one process take turns to write a SQLite file, each turn handed to
    the thread that waited longest: a sender's mark (one UPDATE) that meets the referee's
    transaction goes the moment it ends, before the referee's next one. Before, SQLite's
    own wait (polling, asleep in steps growing to 100 ms) slept through that moment and
    the mark came after the referee's next transaction too."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    write = text("UPDATE server_state SET value = value WHERE 1 = 0")   # takes the lock
    ended: dict[str, float] = {}

    def referee() -> None:
        for n in range(2):
            with engine.connect() as conn:
                conn.execute(write)
                time.sleep(0.15)
                conn.commit()
            ended[f"referee {n}"] = time.monotonic()

    def mark() -> None:
        time.sleep(0.05)      # the referee's first transaction holds the lock by now
        with engine.connect() as conn:
            conn.execute(write)
            conn.commit()
        ended["mark"] = time.monotonic()

    threads = [threading.Thread(target=referee), threading.Thread(target=mark)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ended["referee 0"] < ended["referee 1"]
    assert ended["mark"] < ended["referee 1"] - 0.1, ended


def test_a_thread_writing_on_two_connections_is_not_made_to_wait_for_itself(
        tmp_path: Path) -> None:
    """A thread holding the turn on one connection that writes on another is left to
    SQLite (which says "locked" once its busy_timeout runs out), not made to wait for a
    turn only it can give back."""
    engine = make_engine(f"sqlite:///{tmp_path}/pbem.db")
    with engine.connect() as setup:
        setup.execute(text("CREATE TABLE t (x INTEGER)"))
        setup.commit()
    with engine.connect() as first:
        first.execute(text("INSERT INTO t VALUES (1)"))
        with engine.connect() as second:
            second.execute(text("PRAGMA busy_timeout=100"))
            started = time.monotonic()
            with pytest.raises(OperationalError, match="locked"):
                second.execute(text("INSERT INTO t VALUES (2)"))
            assert time.monotonic() - started < 5
        first.commit()
    with engine.connect() as conn:   # the turn was given back: writes go on
        conn.execute(text("INSERT INTO t VALUES (3)"))
        conn.commit()
        assert conn.execute(text("SELECT x FROM t ORDER BY x")).scalars().all() == [1, 3]
