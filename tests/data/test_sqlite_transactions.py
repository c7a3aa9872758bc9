"""SQLite transactions begin where SQLAlchemy begins them (pbem.store.engines.make_engine).

Every transaction begins with BEGIN IMMEDIATE after the process's writer turn, so what
it reads is current until it commits and DDL is rolled back with it; one on
``engines.reading(engine)`` begins with a plain BEGIN and neither waits for a writer nor
makes one wait. (Before, Python's sqlite3 began a transaction at its first INSERT,
UPDATE or DELETE: the reads before it, and DDL, ran outside it.)
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from pbem.store import engines


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = engines.make_engine(f"sqlite:///{tmp_path / 'pbem.db'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE counter (n INTEGER NOT NULL)"))
        conn.execute(text("INSERT INTO counter VALUES (0)"))
    return engine


def test_a_read_then_write_in_one_transaction_sees_no_other_write_between(
        engine: Engine) -> None:
    """Two threads add one a hundred times each, reading the count and writing it plus
    one: no addition is lost."""
    def add(times: int) -> None:
        for _ in range(times):
            with engine.begin() as conn:
                n = conn.execute(text("SELECT n FROM counter")).scalar_one()
                time.sleep(0.0005)
                conn.execute(text("UPDATE counter SET n = :n"), {"n": n + 1})

    threads = [threading.Thread(target=add, args=(100,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT n FROM counter")).scalar_one() == 200


def test_ddl_is_rolled_back_with_its_transaction(engine: Engine) -> None:
    with pytest.raises(RuntimeError), engine.begin() as conn:
        conn.execute(text("CREATE TABLE made (x INTEGER)"))
        conn.execute(text("ALTER TABLE counter RENAME TO renamed"))
        raise RuntimeError("stopped half-way")
    with engine.connect() as conn:
        tables = set(conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))
                     .scalars())
    assert tables == {"counter"}


def test_a_savepoint_rolls_back_alone(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("UPDATE counter SET n = 1"))
        with pytest.raises(RuntimeError), conn.begin_nested():
            conn.execute(text("UPDATE counter SET n = 2"))
            raise RuntimeError("undo the inner one")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT n FROM counter")).scalar_one() == 1


def test_a_reading_transaction_neither_waits_for_a_writer_nor_blocks_one(
        engine: Engine) -> None:
    writing = threading.Event()
    done = threading.Event()

    def writer() -> None:
        with engine.begin() as conn:
            conn.execute(text("UPDATE counter SET n = 5"))
            writing.set()
            done.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert writing.wait(10)
        started = time.monotonic()
        with engines.reading(engine).connect() as conn:   # sees the last commit, at once
            assert conn.execute(text("SELECT n FROM counter")).scalar_one() == 0
        assert time.monotonic() - started < 1
    finally:
        done.set()
        thread.join()
    with engines.reading(engine).connect() as reader:
        assert reader.execute(text("SELECT n FROM counter")).scalar_one() == 5
        with engine.begin() as conn:       # a writer goes on while it is open
            conn.execute(text("UPDATE counter SET n = 6"))
        assert reader.execute(text("SELECT n FROM counter")).scalar_one() == 5   # its snapshot


def test_a_transaction_that_is_not_reading_waits_for_the_writer(engine: Engine) -> None:
    """The other side: a plain transaction takes the write lock at its start. From another
    process (no shared turn), it waits out busy_timeout and says "locked"."""
    with engine.begin() as conn:
        conn.execute(text("UPDATE counter SET n = 7"))
        other = engines.make_engine(str(engine.url))   # its own writer turn: as another process
        with other.connect() as second:
            second.connection.dbapi_connection.execute("PRAGMA busy_timeout=100")
            with pytest.raises(OperationalError, match="locked"):
                second.execute(text("SELECT n FROM counter"))
        other.dispose()


def test_a_begin_that_finds_the_file_locked_is_an_outage_and_the_connection_goes_on(
        engine: Engine, tmp_path: Path) -> None:
    """BEGIN IMMEDIATE runs on the driver's connection itself: a file another process
    holds past busy_timeout is SQLAlchemy's OperationalError, an outage (transient_error),
    and the connection and the writer's turn serve the next transaction."""
    other = sqlite3.connect(tmp_path / "pbem.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with engine.connect() as conn:
        conn.connection.dbapi_connection.execute("PRAGMA busy_timeout=50")  # type: ignore[union-attr]
        with pytest.raises(OperationalError, match="locked") as locked:
            conn.begin()
        assert engines.transient_error(locked.value)
        other.execute("COMMIT")
        with conn.begin():
            conn.execute(text("UPDATE counter SET n = 7"))
    other.close()
    with engine.begin() as conn:   # the turn was given back: another connection writes
        conn.execute(text("UPDATE counter SET n = n + 1"))
        assert conn.execute(text("SELECT n FROM counter")).scalar_one() == 8
