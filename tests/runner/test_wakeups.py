"""Stored mail wakes the workers (pbem.store.wakeups): `pbem serve` handles mail its listener
took in, or another process stored (PostgreSQL: NOTIFY), at once, not at its next tick
(10 s apart here: a listener without a mailbox)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from pbem.runner import storing
from pbem.store import db
from pbem.store.models import OutboundMail
from pbem.store.wakeups import CHANNEL, MailWatch
from testkit.net import free_ports
from testkit.pgstack import PgCluster
from testkit.serve import listen_config, serving

ANSWERED_WITHIN = 5.0   # seconds; the next tick would come 10 s after the first


def help_mail(n: int) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "ann@example.org", "bluff@example.org", "help"
    msg["Message-ID"] = f"<wake-{n}-{time.time_ns()}@example.org>"
    msg.set_content("HELP\n")
    return msg.as_bytes(policy=policy.SMTP)


def first_tick_done(proc: object) -> None:
    """Read the worker's output until its first tick is over (its next is 10 s away)."""
    stdout = proc.stdout   # type: ignore[attr-defined]
    while True:
        line = stdout.readline()
        assert line, "the worker ended before its first tick"
        if "the first tick is done" in line:
            return


def wait_for(done: object, seconds: float) -> float:
    started = time.monotonic()
    while not done():   # type: ignore[operator]
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def test_serve_handles_mail_its_listener_took_at_once(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port, outbox_dir="out")
    with serving(config, port) as (proc, smtp):
        first_tick_done(proc)
        with smtp:
            smtp.sendmail("ann@example.org", ["bluff@example.org"], help_mail(1))
        took = wait_for(lambda: list((tmp_path / "out").glob("*.eml")), ANSWERED_WITHIN)
        proc.terminate()
        proc.wait(60)
    print(f"answered {took:.2f} s after the listener took it")


@pytest.mark.postgresql
def test_a_watch_is_woken_once_a_store_commits_and_not_by_a_mail_seen_before(
        pgcluster: PgCluster) -> None:
    database = pgcluster.new_database()
    engine = db.open_database(database)
    stop, woken = threading.Event(), []
    watch = MailWatch(engine, lambda: woken.append(time.monotonic()), stop)
    assert watch.wanted
    watch.start()
    try:
        assert watch.until_listening(30)   # a NOTIFY before its LISTEN is lost
        assert pgcluster.listening(database, CHANNEL)   # and it does LISTEN
        raw = help_mail(2)
        assert storing.store_inbound(engine, raw, now=datetime.now(UTC), max_bytes=10**6,
                                   source="smtp")
        wait_for(lambda: woken, 3.0)
        assert not storing.store_inbound(engine, raw, now=datetime.now(UTC), max_bytes=10**6,
                                       source="smtp")   # seen before: nothing stored
        time.sleep(1.5)
        assert len(woken) == 1
    finally:
        stop.set()
        watch.join()
        engine.dispose()


@pytest.mark.postgresql
def test_a_worker_handles_mail_another_process_stored_at_once(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    """Mail another worker stored (here: this test, as a listener of another worker
    would) is handled by a worker waiting for its next tick, woken by NOTIFY."""
    database = pgcluster.new_database()
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port, database=database, outbox_dir="out")
    engine = db.open_database(database)
    try:
        with serving(config, port) as (proc, smtp):
            smtp.close()
            first_tick_done(proc)
            # serve LISTENs before its first tick: mail stored from now on wakes it
            assert pgcluster.listening(database, CHANNEL)
            storing.store_inbound(engine, help_mail(3), now=datetime.now(UTC), max_bytes=10**6,
                                source="smtp")

            def answered() -> bool:
                with Session(engine) as session:
                    return session.exec(select(func.count()).select_from(OutboundMail)).one() > 0
            took = wait_for(answered, ANSWERED_WITHIN)
            proc.terminate()
            proc.wait(60)
        print(f"answered {took:.2f} s after another process stored it")
    finally:
        engine.dispose()
