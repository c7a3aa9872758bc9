"""pbem.runner.storing.store_many: a fetched batch kept in one transaction, each mail once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from pbem.runner import storing
from pbem.store.db import open_database
from pbem.store.models import InboundMail
from testkit.pgstack import PgCluster
from testkit.stored import inbound_rows

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def mail(n: int, body: bytes = b"hello") -> bytes:
    return (f"From: p{n}@x.test\r\nTo: r@x.test\r\nMessage-ID: <m{n}@x.test>\r\n"
            f"Subject: {n}\r\n\r\n").encode() + body + b"\r\n"


def test_a_batch_keeps_each_new_mail_once_and_cuts_a_large_one(database: str) -> None:
    engine = open_database(database)
    assert storing.store_inbound(engine, mail(1), now=NOW, max_bytes=10_000, source="imap",
                               imap_key="INBOX/7/1")
    batch = [(mail(1), "INBOX/7/1", False, 60),          # stored before
             (mail(2), "INBOX/7/2", False, 60),
             (mail(2), "INBOX/7/3", False, 60),          # the same mail twice (a copy)
             (mail(4, b"x" * 20_000), "INBOX/7/4", False, 20_060)]
    assert storing.store_many(engine, batch, now=NOW, max_bytes=10_000, source="imap") == 2
    rows = {r.dedupe_key: r for r in inbound_rows(engine)}
    assert len(rows) == 3
    big = next(r for r in rows.values() if r.imap_key == "INBOX/7/4")
    assert big.truncated and big.size == 20_060 and b"xxx" not in big.raw


def test_a_batch_that_loses_a_race_keeps_nothing(pgcluster: PgCluster) -> None:
    """All or nothing: the caller (ImapInbox.poll) then stores the mails one by one.
    (PostgreSQL: on SQLite the race cannot be lost, see the test below.)"""
    engine = open_database(pgcluster.new_database())
    batch = [(mail(n), f"INBOX/7/{n}", False, 60) for n in range(3)]
    # another process stores mail 2 under another IMAP key between our look and our commit
    raced: list[bool] = []

    def race(conn, cursor, statement: str, *_) -> None:   # noqa: ANN001
        if not raced and statement.startswith("INSERT INTO inbound_mail"):   # the batch's
            raced.append(True)
            assert storing.store_inbound(engine, mail(2), now=NOW, max_bytes=10_000,
                                       source="smtp")

    event.listen(engine, "before_cursor_execute", race)
    try:
        with pytest.raises(IntegrityError):
            storing.store_many(engine, batch, now=NOW, max_bytes=10_000, source="imap")
    finally:
        event.remove(engine, "before_cursor_execute", race)
    assert raced
    with Session(engine) as session:
        assert [r.source for r in session.exec(select(InboundMail))] == ["smtp"]


def test_on_sqlite_a_store_racing_a_batch_waits_for_its_commit(tmp_path: Path) -> None:
    """SQLite: the batch's look and its commit are one transaction that holds the write
    lock from its start (BEGIN IMMEDIATE), so another process that stores mail 2 between
    them waits for the commit, then finds it stored: nothing lost, nothing twice."""
    url = f"sqlite:///{tmp_path / 'pbem.db'}"
    engine = open_database(url)
    other = open_database(url)     # an engine of its own: as another process
    batch = [(mail(n), f"INBOX/7/{n}", False, 60) for n in range(3)]
    racer: list[threading.Thread] = []
    stored: list[bool] = []

    def race(conn, cursor, statement: str, *_) -> None:   # noqa: ANN001
        if not racer and statement.startswith("INSERT INTO inbound_mail"):   # the batch's
            racer.append(threading.Thread(target=lambda: stored.append(storing.store_inbound(
                other, mail(2), now=NOW, max_bytes=10_000, source="smtp"))))
            racer[0].start()
            racer[0].join(0.5)
            assert racer[0].is_alive(), "the other store went between the look and the commit"

    event.listen(engine, "before_cursor_execute", race)
    try:
        assert storing.store_many(engine, batch, now=NOW, max_bytes=10_000, source="imap") == 3
    finally:
        event.remove(engine, "before_cursor_execute", race)
    racer[0].join(30)
    assert stored == [False]       # it found mail 2 stored by the batch
    with Session(engine) as session:
        assert [r.source for r in session.exec(select(InboundMail))] == ["imap"] * 3
