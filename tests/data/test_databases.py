"""Nothing SQLite-only: types and constraints behave the same on SQLite and PostgreSQL
(the ``database`` fixture runs each test on both).

Timezone-aware datetimes come back aware, in UTC; booleans filter; a mail of the
largest size is kept byte for byte; the dedupe key keeps a mail once however many
processes store it at once. Mail-borne text that PostgreSQL cannot hold as it is
(a NUL character; a Message-ID or an address too long for an index entry) is
stored, handled and answered the same way on both, and never stalls the queue.
"""

from __future__ import annotations

import random
import sqlite3
import string
import threading
from datetime import UTC, datetime, timedelta, timezone
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import OperationalError, StatementError
from sqlmodel import Session, col, select

from pbem.runner.server import Server
from pbem.store import db, engines
from pbem.store.models import Absence, InboundMail, OutboundMail, Player
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, SERVER, Clock, key_of, mail, make_server, started_game
from testkit.pgstack import PgCluster
from testkit.stored import inbound_rows


def server_on(database: str, tmp_path: Path, **settings: object) -> Server:
    return make_server(tmp_path, Clock(), database=database, **settings)


def junk(n: int, seed: int = 1) -> str:
    """n random letters and digits: text no compression shrinks (as an index entry)."""
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def raw_mail(headers: dict[str, str], body: str) -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (head + "\r\n" + body.replace("\n", "\r\n")).encode("utf-8")


# --------------------------------------------------------------------------- types


def test_aware_datetimes_come_back_in_utc_and_compare_as_instants(database: str) -> None:
    engine = db.open_database(database)
    india = timezone(timedelta(hours=5, minutes=30))
    starts = datetime(2026, 12, 24, 18, 0, tzinfo=india)
    with Session(engine) as session:
        session.add(Absence(email="ann@example.org", starts=starts, ends=starts + timedelta(days=7),
                            created_at=datetime(2026, 12, 1, tzinfo=UTC)))
        session.commit()
    with Session(engine) as session:
        row = session.exec(select(Absence)).one()
        assert row.starts == starts and row.starts.utcoffset() == timedelta(0)
        assert row.starts.hour == 12 and row.starts.minute == 30      # the same instant, UTC
        # a comparison in the query, with a bound value in yet another zone
        new_york = timezone(timedelta(hours=-5))
        just_before = datetime(2026, 12, 24, 7, 29, tzinfo=new_york)   # 12:29 UTC
        assert session.exec(select(Absence).where(col(Absence.starts) > just_before)).all()
        assert not session.exec(select(Absence).where(
            col(Absence.starts) > just_before + timedelta(minutes=1))).all()
    with Session(engine) as session, pytest.raises(StatementError, match="timezone"):
        session.add(Absence(email="bob@example.org", starts=datetime(2026, 12, 1),
                            ends=datetime(2026, 12, 2), created_at=datetime(2026, 12, 1)))
        session.commit()


def test_booleans_filter_the_same(database: str, tmp_path: Path) -> None:
    server = server_on(database, tmp_path)
    started_game(server)
    with Session(server.engine) as session:
        gone = session.exec(select(Player).where(Player.email == PLAYERS[2])).one()
        gone.active = False
        session.add(gone)
        session.commit()
    with Session(server.engine) as session:
        assert [p.email for p in session.exec(
            select(Player).where(col(Player.active).is_(False)))] == [PLAYERS[2]]
        assert len(session.exec(select(Player).where(Player.active == sa.true())).all()) == 4
        assert {type(p.active) for p in session.exec(select(Player))} == {bool}


def test_a_mail_of_the_largest_size_is_kept_byte_for_byte(database: str, tmp_path: Path) -> None:
    limit = 4_000_000
    server = server_on(database, tmp_path, max_mail_bytes=limit)
    head = b"From: ann@example.org\r\nMessage-ID: <big@example.org>\r\nSubject: x\r\n\r\n"
    raw = head + bytes(range(256)) * ((limit - len(head)) // 256)
    assert server.referee.store_inbound(raw, source="smtp")
    [row] = inbound_rows(server.engine)
    assert type(row.raw) is bytes and row.raw == raw and row.truncated is False


# --------------------------------------------------------------------------- the dedupe key


def stored_at_once(server: Server, raw: bytes, n: int) -> tuple[list[bool], list[BaseException]]:
    """n threads store raw at the same moment; what each store said, and what it raised."""
    gate = threading.Barrier(n)
    results: list[bool] = []
    errors: list[BaseException] = []

    def store() -> None:
        gate.wait()
        try:
            results.append(server.referee.store_inbound(raw, source="smtp"))
        except BaseException as exc:   # noqa: BLE001  (the test reports it)
            errors.append(exc)
    threads = [threading.Thread(target=store) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results, errors


def test_the_same_mail_stored_by_many_at_once_is_kept_once(database: str, tmp_path: Path) -> None:
    """Eight stores of each mail race; on PostgreSQL the loser's insert fails on the unique
    key and its transaction is rolled back: it reports the mail as seen, nothing more."""
    server = server_on(database, tmp_path)
    for round_no in range(5):
        results, errors = stored_at_once(server, mail("ann@example.org", "HELP\n"), 8)
        assert errors == [] and sorted(results) == [False] * 7 + [True], round_no
    with Session(server.engine) as session:
        assert len(session.exec(select(InboundMail)).all()) == 5


# --------------------------------------------------------------------------- mail-borne text


def test_nul_characters_and_oversized_fields_are_stored_handled_and_answered(
        database: str, tmp_path: Path) -> None:
    server = server_on(database, tmp_path)
    started_game(server)
    key = key_of(server, PLAYERS[0])
    sender = {"From": PLAYERS[0], "To": SERVER, "Subject": "orders"}
    mails = {
        "a NUL in the Message-ID": raw_mail({**sender, "Message-ID": "<a\x00b@example.org>"},
                                            "HELP\n"),
        "a Message-ID of 6,000 characters": raw_mail(
            {**sender, "Message-ID": f"<{junk(6000)}@example.org>"}, "HELP\n"),
        "a NUL in SAY": raw_mail({**sender, "Message-ID": "<say@example.org>"},
                                 f"GAME g1\nKEY {key}\nSAY hello\x00there\n"),
        "a NUL in an order": raw_mail({**sender, "Message-ID": "<order@example.org>"},
                                      f"GAME g1\nKEY {key}\nBID\x00 3 fives\n"),
        "a From of 6,000 characters": raw_mail(
            {**sender, "From": f"{junk(6000, 2)}@example.org", "Message-ID": "<from@example.org>"},
            "GAME g1\nKEY wrong\nBID 3 fives\n"),
        "a NUL in the envelope": raw_mail({**sender, "Message-ID": "<env@example.org>"}, "HELP\n"),
        "a plain mail after them": raw_mail({**sender, "Message-ID": "<plain@example.org>"},
                                            "HELP\n"),
    }
    for what, raw in mails.items():
        envelope = "p1\x00@example.org" if "envelope" in what else PLAYERS[0]
        assert server.referee.store_inbound(raw, source="smtp", envelope_from=envelope), what
        assert not server.referee.store_inbound(raw, source="smtp", envelope_from=envelope), what
    report = server.tick()
    assert report.processed == len(mails) and report.problems == []
    with Session(server.engine) as session:
        rows = session.exec(select(InboundMail).order_by(col(InboundMail.id))).all()
        outcomes = dict(zip(mails, [(r.status, r.outcome or "") for r in rows]))
        answered = {r.inbound_id for r in session.exec(select(OutboundMail))}
        assert {r.status for r in rows} == {"done"}, outcomes
        assert [r.id in answered for r in rows] == [True] * 4 + [False] + [True] * 2, outcomes
    assert outcomes["a NUL in SAY"][1].startswith(f"{PLAYERS[0]} said")
    # refused as no order (the reading of orders says so in its own words), never applied
    assert outcomes["a NUL in an order"][1].startswith("refused: ")
    assert "not an order" in outcomes["a NUL in an order"][1]
    # the one address rule refuses it at the edge, before anything is stored against it
    assert outcomes["a From of 6,000 characters"][1].startswith("ignored: the From header is")
    assert outcomes["a plain mail after them"][1] == "help sent"


def test_an_address_too_long_for_a_mailbox_is_refused_politely(database: str,
                                                              tmp_path: Path) -> None:
    server = server_on(database, tmp_path)
    server.referee.admin(["NEWGAME", "g1"])
    too_long = f"{junk(300)}@example.org"
    with pytest.raises(Refusal, match="is not a mail address"):
        server.referee.admin(["ADD", "g1", too_long, "Zed"])
    with Session(server.engine) as session:
        assert session.exec(select(Player)).all() == []


# --------------------------------------------------------------------------- outage or not


def test_a_locked_database_is_an_outage(database: str, tmp_path: Path) -> None:
    engine = db.open_database(database)
    with engine.connect() as locker:
        if engine.dialect.name == "sqlite":
            other = sqlite3.connect(engines.sqlite_path(database), isolation_level=None, timeout=0)
            other.execute("BEGIN IMMEDIATE")
            wait = "PRAGMA busy_timeout=100"
        else:
            locker.execute(sa.text("LOCK TABLE server_state IN EXCLUSIVE MODE"))
            wait = "SET lock_timeout = 100"
        with engine.connect() as conn:
            if engine.dialect.name == "sqlite":   # before the transaction: it waits at BEGIN
                conn.connection.dbapi_connection.execute(wait)
            else:
                conn.execute(sa.text(wait))
            with pytest.raises(OperationalError) as locked:
                conn.execute(sa.text("INSERT INTO server_state (key, value) VALUES ('a', 'b')"))
        assert engines.transient_error(locked.value)
        if engine.dialect.name == "sqlite":
            other.execute("ROLLBACK")
            other.close()
        locker.rollback()


def test_a_postgresql_restart_is_an_outage_and_an_index_limit_is_not(
        pgcluster: PgCluster) -> None:
    engine = db.open_database(pgcluster.new_database())
    with engine.connect() as conn:
        with pytest.raises(OperationalError) as too_big:
            conn.execute(sa.text(
                "INSERT INTO sender_event (address, kind, at) VALUES (:a, 'x', now())"),
                {"a": junk(6000)})
        conn.rollback()
        assert not engines.transient_error(too_big.value)
        pgcluster.restart()
        with pytest.raises(OperationalError) as cut:
            conn.execute(sa.text("SELECT 1"))
        assert engines.transient_error(cut.value)
    with engine.connect() as conn:   # the pool's connections were replaced
        assert conn.execute(sa.text("SELECT 1")).scalar() == 1


def test_a_mail_that_hits_an_index_limit_fails_alone_and_the_queue_goes_on(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    """An error the same mail would hit again is no outage: the mail is set aside as failed
    (the referee is told), the mails after it are handled. (An extra index on SAY's text
    stands in for any column a long value cannot be indexed in.)"""
    server = server_on(pgcluster.new_database(), tmp_path)
    started_game(server)
    with server.engine.begin() as conn:
        # SAY keeps at most 2,000 characters: the entry doubles them, past the limit
        conn.execute(sa.text("CREATE INDEX talk_text ON talk_message ((text || text))"))
    key = key_of(server, PLAYERS[0])
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = PLAYERS[0], SERVER, "talk"
    msg["Message-ID"] = "<talk@example.org>"
    msg.set_content(f"GAME g1\nKEY {key}\nSAY {junk(3000)}\n")
    assert server.referee.store_inbound(msg.as_bytes(policy=policy.SMTP), source="smtp")
    assert server.referee.store_inbound(mail(PLAYERS[1], "HELP\n"), source="smtp")
    report = server.tick()
    assert report.processed == 2 and report.problems == []
    with Session(server.engine) as session:
        rows = session.exec(select(InboundMail).order_by(col(InboundMail.id))).all()
        assert [r.status for r in rows] == ["failed", "done"]
