"""Shared pytest fixtures. Keep each fixture small and self-contained; add new
ones in their own section below."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pbem.runner.server import Server
from testkit.desk import Clock, make_server
from testkit.dovecot import dovecot_available
from testkit.mailstack import MailStack
from testkit.pgstack import PgCluster, postgres_available

# --------------------------------------------------------------------------- mail stack


@pytest.fixture(scope="session")
def mailstack() -> Iterator[MailStack]:
    """One private Dovecot (IMAP + LMTP) + SMTP front end for the whole session.

    Tests share it: clear() the mailboxes a test uses before using them.
    Without Dovecot the tests are skipped, except under CI (env CI set), where a
    missing Dovecot is an error of the CI setup and fails loudly.
    """
    if not dovecot_available():
        msg = ("Dovecot (dovecot-imapd + dovecot-lmtpd) is not installed; the "
               "mailstack tests need it (apt-get install dovecot-imapd dovecot-lmtpd)")
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    stack = MailStack().start()
    try:
        yield stack
    finally:
        stack.stop()


# --------------------------------------------------------------------------- referee's desk


@pytest.fixture
def clock() -> Clock:
    """A clock the test moves by hand, at testkit.desk.T0 (modules may define their own)."""
    return Clock()


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> Server:
    """The desk tests' server on SQLite in tmp_path with the .eml outbox, on `clock`."""
    return make_server(tmp_path, clock)


# --------------------------------------------------------------------------- databases


@pytest.fixture(scope="session")
def pgcluster() -> Iterator[PgCluster]:
    """One private PostgreSQL cluster for the session (one per xdist worker).

    Without PostgreSQL the tests that need it are skipped, except under CI (env CI
    set), where a missing PostgreSQL is an error of the CI setup and fails loudly.
    """
    if not postgres_available():
        msg = ("PostgreSQL (the postgresql package: initdb, postgres) or the psycopg driver "
               "is not installed; the PostgreSQL runs need both (apt-get install "
               "postgresql; pip install 'psycopg[binary]')")
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    cluster = PgCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh, empty database: a test that takes it runs twice, on a SQLite
    file in tmp_path and on a database of its own in the session's PostgreSQL cluster."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pbem.db'}"
    cluster: PgCluster = request.getfixturevalue("pgcluster")
    return cluster.new_database()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per database, so a CI log shows the PostgreSQL runs beside the SQLite ones."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            for name in ("sqlite", "postgresql"):
                if f"[{name}" in nodeid or f"-{name}" in nodeid:
                    per = counts.setdefault(name, {})
                    per[outcome] = per.get(outcome, 0) + 1
    for name, per in sorted(counts.items()):
        terminalreporter.write_line(
            f"database {name}: " + ", ".join(f"{n} {o}" for o, n in sorted(per.items())))
