"""A mail's bytes are kept apart from its row (pbem.store.bodies, schema 0016).

On SQLite an UPDATE writes the whole row again: with a mail's bytes in its row, each
claim, sent mark and finish wrote the mail through the WAL. Now those writes touch a
small row; the bytes are written once, read where they are needed, moved by the
migration and deleted with their mail.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlmodel import Session, col, delete, select

from pbem.outbox import Origin, enqueue
from pbem.outbox import table as outbox_table
from pbem.runner import inbox, storing
from pbem.store import db
from pbem.store.db import open_database
from pbem.store.models import InboundMail, OutboundMail
from pbem.store.work import Work
from testkit.stored import inbound_rows, outbound_rows

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=5)
BIG = 300_000   # bytes of each mail: more than any write of its status may take


def big_mail(n: int) -> bytes:
    return (f"From: p{n}@x.test\r\nTo: bluff@x.test\r\nMessage-ID: <big{n}@x.test>\r\n"
            f"Subject: big {n}\r\n\r\n").encode() + b"y" * BIG + b"\r\n"


def wal_bytes(path: Path, work: object) -> int:
    """The bytes ``work`` (a callable) writes to the WAL, from an emptied WAL."""
    plain = sqlite3.connect(path, isolation_level=None)   # no transaction: pbem's begin one
    try:
        assert plain.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    finally:
        plain.close()
    wal = path.with_name(path.name + "-wal")
    assert wal.stat().st_size == 0
    work()   # type: ignore[operator]
    return wal.stat().st_size


def test_a_claim_a_sent_mark_and_a_finish_do_not_write_the_mail_again(tmp_path: Path) -> None:
    """The path of an order on SQLite: the stored mail claimed, held and finished, the
    queued mail claimed and marked sent. Each of those commits writes pages of the small
    rows and their indexes, not the mail: together less than one mail's bytes (with the
    bytes in the rows they wrote 2.5 MB, now 25 KB)."""
    path = tmp_path / "pbem.db"
    engine = open_database(f"sqlite:///{path}")
    assert storing.store_inbound(engine, big_mail(1), now=NOW, max_bytes=10**7, source="smtp")
    with Work(engine) as session:
        queued = enqueue(session, Origin("bluff@x.test"), kind="report", to="p1@x.test",
                         subject="report", text="z" * BIG, html=None, now=NOW)
        session.commit()

    def inbound_path() -> None:
        claimed, _ = inbox.claim_page(engine, NOW, LEASE)
        assert len(claimed) == 1
        with Session(engine) as session:
            held = inbox.hold_claim(session, claimed[0], NOW)
            assert held is not None and held.raw == big_mail(1)
            held.status, held.outcome, held.processed_at = "done", "help sent", NOW
            inbox.finish(session, held)
            session.commit()

    def outbound_path() -> None:
        due, _, _ = outbox_table.due(engine, NOW, LEASE, outbox_table.START, 10)
        [claimed] = outbox_table.claim_page(engine, due, NOW, verp=False)
        assert claimed.raw == queued.raw
        with outbox_table.marking(engine) as conn:
            assert outbox_table.mark_sent(conn, [claimed.id], NOW) == {claimed.id}

    written = wal_bytes(path, inbound_path) + wal_bytes(path, outbound_path)
    print(f"WAL bytes written: {written}")
    assert written < BIG, written
    [stored] = inbound_rows(engine)
    [sent] = outbound_rows(engine)
    assert (stored.status, stored.raw) == ("done", big_mail(1))
    assert (sent.status, sent.raw) == ("sent", queued.raw)
    engine.dispose()


def test_a_queued_mail_and_its_bytes_are_one_and_go_together(database: str) -> None:
    """enqueue writes the row and its bytes (on PostgreSQL in one statement); a savepoint
    rolled back takes both; a mail deleted takes its bytes (ON DELETE CASCADE), a stored
    mail's as well."""
    engine = open_database(database)
    origin = Origin("bluff@x.test")
    with Work(engine) as session:
        kept = enqueue(session, origin, kind="notice", to="p1@x.test", subject="kept",
                       text="kept\n", html=None, now=NOW)
        savepoint = session.begin_nested()
        enqueue(session, origin, kind="notice", to="p2@x.test", subject="gone",
                text="gone\n", html=None, now=NOW)
        savepoint.rollback()
        dropped = enqueue(session, origin, kind="notice", to="p3@x.test", subject="dropped",
                          text="dropped\n", html=None, now=NOW)
        session.commit()
    assert [(r.id, r.raw) for r in outbound_rows(engine)] == [(kept.id, kept.raw),
                                                             (dropped.id, dropped.raw)]
    assert b"Subject: kept" in kept.raw
    assert storing.store_inbound(engine, big_mail(2), now=NOW, max_bytes=10**7, source="smtp")
    with Session(engine) as session:
        session.exec(delete(OutboundMail).where(col(OutboundMail.id) == dropped.id))
        session.exec(delete(InboundMail))
        session.commit()
    with engine.connect() as conn:
        bodies = conn.exec_driver_sql("SELECT mail_id FROM outbound_body").scalars().all()
        raws = conn.exec_driver_sql("SELECT count(*) FROM inbound_raw").scalar_one()
    assert (bodies, raws) == ([kept.id], 0)
    engine.dispose()


def test_the_upgrade_to_0016_moves_each_mails_bytes_to_its_own_row(database: str) -> None:
    """A database at 0015 with mail in both tables: after the upgrade each mail's bytes
    (NULs and all) are its bytes' row, the rows have no raw column, and the mail reads as
    before."""
    engine = db.open_database(database, migrate=False)
    db.upgrade(engine, "0015")
    ins = {n: b"From: p%d@x\r\n\r\nBID %d\x00\xff" % (n, n) + b"q" * (n * 5000)
           for n in range(1, 4)}
    outs = {n: b"Subject: report %d\r\n\r\n" % n + b"r" * (n * 7000) for n in range(1, 3)}
    with engine.begin() as conn:
        for n, raw in ins.items():
            conn.execute(sa.text(
                "INSERT INTO inbound_mail (id, dedupe_key, source, raw, size, truncated,"
                " received_at, status, attempts) VALUES (:id, :key, 'smtp', :raw, :size,"
                " :no, :at, 'done', 1)"),
                {"id": n, "key": f"<m{n}@x>", "raw": raw, "size": len(raw), "no": False,
                 "at": "2026-12-01 12:00:00"})
        for n, raw in outs.items():
            conn.execute(sa.text(
                "INSERT INTO outbound_mail (id, message_id, kind, mail_from, rcpts_json, raw,"
                " status, attempts, next_attempt_at, created_at, inbound_id) VALUES (:id,"
                " :mid, 'report', 'b@x', '[]', :raw, 'sent', 1, :at, :at, :inbound)"),
                {"id": n, "mid": f"<o{n}@x>", "raw": raw, "at": "2026-12-01 12:00:00",
                 "inbound": n})
    assert db.upgrade(engine) == ("0015", db.head_revision())
    columns = {table: {c["name"] for c in sa.inspect(engine).get_columns(table)}
               for table in ("inbound_mail", "outbound_mail")}
    assert "raw" not in columns["inbound_mail"] | columns["outbound_mail"]
    assert {r.id: r.raw for r in inbound_rows(engine)} == ins
    assert {r.id: r.raw for r in outbound_rows(engine)} == outs
    with Session(engine) as session:   # the readers of the bytes read them
        held = inbox.read_held(session, 2)
        assert (held.raw, held.status, held.size) == (ins[2], "done", len(ins[2]))
        assert session.exec(select(InboundMail.dedupe_key).where(
            InboundMail.id == 3)).one() == "<m3@x>"
    engine.dispose()
