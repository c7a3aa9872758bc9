"""Schema work killed anywhere commits whole or not at all, on SQLite and PostgreSQL.

A `pbem tick` on a fresh database (it creates the schema) and `pbem db upgrade` of a
database at the first revision with rows in every table are SIGKILLed at 20 moments
spread over their schema work (after the n-th statement of the migrations: the
crash point schema-statement, pbem.store.faults) and at a few moments in time. After each
kill the next start succeeds, the schema equals a fresh database's (tables, columns,
keys, indexes, foreign keys: SQLAlchemy's inspector) and every row is still there.
bench/schema_kills.py does the same at many random moments.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path

import pytest

from pbem.store import db, faults
from testkit.crash import Zygote
from testkit.pgstack import PgCluster
from testkit.schema_state import filled_at_first_revision, revision_of, rows_of, schema_of

KILLS = 20           # moments spread over the statements of the schema work
TIMED = (0.25, 0.5, 0.75)   # and moments in time, as parts of a whole run
ROWS = 5             # rows a table in the old database

NewDatabase = Callable[[], str]


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as z:
        yield z


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
def new_database(request: pytest.FixtureRequest, tmp_path: Path) -> NewDatabase:
    """Makes a fresh, empty database at each call (SQLite files, or databases of the
    session's PostgreSQL cluster)."""
    numbers = count()
    if request.param == "sqlite":
        return lambda: f"sqlite:///{tmp_path / f'pbem-{next(numbers)}.db'}"
    cluster: PgCluster = request.getfixturevalue("pgcluster")
    return cluster.new_database


def config_for(url: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "pbem.toml"
    config.write_text(f'[server]\ndatabase = "{url}"\naddress = "bluff@example.org"\n'
                      f'referee = "referee@example.org"\nreferee_key = "k"\n'
                      f'outbox_dir = "{folder / "out"}"\n')
    return config


def statements_of_schema_work(url: str, target: str | None = None) -> int:
    """Run the schema work here, uninterrupted, counting the crash point's passes."""
    faults.arm("schema-statement:1000000000")
    try:
        engine = db.open_database(url, migrate=False)
        db.upgrade(engine, target or "head")
        engine.dispose()
        return faults.passes("schema-statement")
    finally:
        faults.arm(None)


def moments(statements: int) -> list[int]:
    """KILLS statement numbers spread from the first to the last."""
    assert statements > KILLS, statements
    return sorted({1 + round(i * (statements - 1) / (KILLS - 1)) for i in range(KILLS)})


def assert_recovered(url: str, fresh: dict, rows: dict, columns: dict) -> None:
    assert revision_of(url) == db.head_revision()
    assert schema_of(url) == fresh
    if columns:
        assert rows_of(url, columns) == rows


def test_a_first_start_killed_anywhere_in_making_the_schema_starts_next_time(
        zygote: Zygote, new_database: NewDatabase, tmp_path: Path) -> None:
    reference = new_database()
    statements = statements_of_schema_work(reference)
    fresh = schema_of(reference)
    began = time.monotonic()
    assert zygote.tick(config_for(new_database(), tmp_path / "whole")) == 0
    whole = time.monotonic() - began
    kills = [(f"schema-statement:{n}", None) for n in moments(statements)]
    kills += [(None, whole * part) for part in TIMED]
    for n, (crash, after) in enumerate(kills):
        url = new_database()
        config = config_for(url, tmp_path / str(n))
        (status,) = zygote.run(config, crash=crash, kill_after=after)
        assert status == -9 or (crash is None and status == 0), (crash, after, status)
        assert zygote.tick(config) == 0, (crash, after)    # the next start carries on
        assert_recovered(url, fresh, {}, {})


def test_an_upgrade_killed_anywhere_keeps_every_row_and_upgrades_next_time(
        zygote: Zygote, new_database: NewDatabase, tmp_path: Path) -> None:
    reference = new_database()
    statements = statements_of_schema_work(reference)
    fresh = schema_of(reference)
    old = new_database()
    filled_at_first_revision(old, ROWS)
    upgrades = statements_of_schema_work(old)
    assert schema_of(old) == fresh      # an old database upgraded is a fresh one
    assert statements > upgrades
    whole_run = new_database()
    filled_at_first_revision(whole_run, ROWS)
    began = time.monotonic()
    assert zygote.run(config_for(whole_run, tmp_path / "whole"), job="upgrade") == [0]
    whole = time.monotonic() - began
    kills = [(f"schema-statement:{n}", None) for n in moments(upgrades)]
    kills += [(None, whole * part) for part in TIMED]
    for n, (crash, after) in enumerate(kills):
        url = new_database()
        columns = filled_at_first_revision(url, ROWS)
        rows = rows_of(url, columns)
        config = config_for(url, tmp_path / str(n))
        (status,) = zygote.run(config, crash=crash, job="upgrade", kill_after=after)
        assert status == -9 or (crash is None and status == 0), (crash, after, status)
        assert zygote.run(config, job="upgrade") == [0], (crash, after)
        assert_recovered(url, fresh, rows, columns)
