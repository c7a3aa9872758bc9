"""Promise 2, outages: IMAP down, SMTP down, SMTP answering 4xx, a 5xx for one
recipient, the database locked. The server logs, backs off, retries, and
catches up when the service is back, losing nothing and sending nothing twice;
the referee is told of mail that could not be delivered.

The mailbox is the real Dovecot of the ``mailstack`` fixture. For SMTP trouble
a small relay stands in front of the stack's SMTP port and can go down or
answer 4xx at will; the stack itself refuses unknown recipients with 550.
"""

from __future__ import annotations

import json
import logging
import smtplib
import socket
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, make_url
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from pbem.config import ImapSettings, Settings, SmtpSettings
from pbem.demo.robot_client import parse_mail
from pbem.mail.imap import ImapInbox
from pbem.mail.listener import ListenPolicy, MailListener
from pbem.runner.server import Server
from pbem.store.models import Game, InboundMail, Move, OutboundMail
from testkit.smtp_relay import start_controller
from tests.e2e.test_crash import PLAYERS, Scene
from tests.runner.test_referee import Clock

pytestmark = pytest.mark.mailstack

KEY = "outage-key"


class Relay:
    """An SMTP server in front of the stack: forwards, or fails as told."""

    def __init__(self, stack) -> None:
        self.stack = stack
        self.data_reply: str | None = None    # e.g. "451 4.7.1 greylisted": refuse DATA
        self.connections = 0
        self.forwarded: list[tuple[list[str], bytes]] = []
        self.controller = start_controller(self, stack.smtp_host)
        self.port = self.controller.port

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self.connections += 1
        session.host_name = hostname
        return responses

    async def handle_DATA(self, server, session, envelope):
        if self.data_reply:
            return self.data_reply
        try:
            with smtplib.SMTP(self.stack.smtp_host, self.stack.smtp_port, timeout=10) as s:
                s.sendmail(envelope.mail_from, envelope.rcpt_tos, envelope.original_content)
        except smtplib.SMTPRecipientsRefused as e:
            code, text = next(iter(e.recipients.values()))
            return f"{code} {text.decode(errors='replace')}"
        self.forwarded.append((list(envelope.rcpt_tos), envelope.original_content))
        return "250 2.0.0 OK"

    def down(self) -> None:
        self.controller.stop()

    def up(self) -> None:
        self.controller = start_controller(self, self.stack.smtp_host, port=self.port)


@pytest.fixture
def relay(mailstack) -> Iterator[Relay]:
    r = Relay(mailstack)
    try:
        yield r
    finally:
        try:
            r.controller.stop()
        except Exception:
            pass


def make_server(stack, tmp_path: Path, clock: Clock, database: str, *,
                smtp_port: int | None = None, imap: bool = True) -> Server:
    for user in ("bluff", "referee", "p1", "p2", "p3"):
        stack.clear(user)
    settings = Settings(
        database=database, address=stack.address("bluff"),
        referee=stack.address("referee"), referee_key=KEY, outbox_dir=tmp_path / "out",
        imap=ImapSettings(stack.imap_host, stack.imap_port, ssl=False,
                          username=stack.address("bluff"), password=stack.password)
        if imap else None,
        smtp=SmtpSettings(stack.smtp_host, smtp_port, starttls=False)
        if smtp_port is not None else None)
    return Server(settings, clock=clock)


def help_mail(stack, user: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = stack.address(user)
    msg["To"] = stack.address("bluff")
    msg["Subject"] = "help please"
    msg["Message-ID"] = make_msgid(domain="bluff.test")
    msg.set_content("HELP\n")
    return msg.as_bytes(policy=policy.SMTP)


def answers_to(stack, user: str) -> list[str]:
    """In-Reply-To of every mail in the user's INBOX."""
    return [str(parse_mail(r)["In-Reply-To"]) for r in stack.fetch_all(user)]


def start_game(server: Server, stack, players: list[str]) -> None:
    lines = ["NEWGAME g1 SEED 5"] + [f"ADD g1 {p} N{i}" for i, p in enumerate(players)]
    for line in [*lines, "START g1"]:
        server.referee.admin(line.split())


# --------------------------------------------------------------------------- IMAP


def test_imap_down_is_logged_backed_off_and_caught_up(mailstack, tmp_path, database, caplog,
                                                     monkeypatch) -> None:
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database)
    mails = [help_mail(mailstack, u) for u in ("p1", "p2")]
    for raw in mails:
        mailstack.deliver("bluff", raw, mail_from=mailstack.address("p1"))
    mailstack.wait_for("bluff", 2)
    polls = []
    real_poll = ImapInbox.poll

    def counting_poll(self, store, **kw):
        polls.append(1)
        return real_poll(self, store, **kw)
    monkeypatch.setattr(ImapInbox, "poll", counting_poll)
    mailstack.stop_imap()
    try:
        caplog.set_level(logging.WARNING)
        report = server.tick()
        assert report.fetched == 0 and "IMAP" in report.problems
        assert "IMAP unavailable" in caplog.text
        tries = len(polls)
        clock.now += timedelta(seconds=10)
        server.tick()                             # backing off: not even tried
        assert len(polls) == tries
        clock.now += timedelta(seconds=30)
        server.tick()                             # tried again, still down: wait longer
        assert len(polls) == tries + 1
        assert "2 times in a row" in caplog.text
    finally:
        mailstack.start_imap()
    clock.now += timedelta(seconds=30)
    assert server.tick().fetched == 0            # back, but the back-off has not run out
    clock.now += timedelta(seconds=60)
    report = server.tick()
    assert report.fetched == 2 and report.processed == 2 and not report.problems
    assert server.tick().fetched == 0
    with Session(server.engine) as session:
        assert {m.status for m in session.exec(select(InboundMail))} == {"done"}
    assert len(list((tmp_path / "out").glob("*.eml"))) == 2   # one answer each
    assert mailstack.fetch_all("bluff") == []


def test_imap_lost_while_moving_the_stored_mail_backs_off_and_handles_it_once(
        mailstack, tmp_path, database, monkeypatch) -> None:
    """The tick's move of the mail it stored runs while it handles that mail; the IMAP
    server lost in that move is an IMAP problem of the tick (backed off), the mail is
    handled once, and the next poll finds it again, stores nothing twice and moves it."""
    from imapclient import IMAPClient
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database)
    mailstack.deliver("bluff", help_mail(mailstack, "p1"), mail_from=mailstack.address("p1"))
    mailstack.wait_for("bluff", 1)
    real_move = IMAPClient.move
    lost = [True]

    def move(client, *args, **kwargs):   # noqa: ANN001, ANN002, ANN003, ANN202
        if lost and lost.pop():
            client.socket().shutdown(socket.SHUT_RDWR)
        return real_move(client, *args, **kwargs)
    monkeypatch.setattr(IMAPClient, "move", move)
    try:
        report = server.tick()
        assert (report.fetched, report.processed) == (1, 1) and "IMAP" in report.problems
        assert len(mailstack.fetch_all("bluff")) == 1          # not moved
        clock.now += timedelta(seconds=60)                     # the back-off runs out
        report = server.tick()
        # handed again (stored before: kept once, not handled again), and moved now
        assert (report.fetched, report.processed) == (1, 0) and not report.problems
        assert mailstack.fetch_all("bluff") == []
        with Session(server.engine) as session:
            assert [m.status for m in session.exec(select(InboundMail))] == ["done"]
        assert len(list((tmp_path / "out").glob("*.eml"))) == 1   # answered once
    finally:
        server.close()


# --------------------------------------------------------------------------- SMTP


def test_smtp_down_is_backed_off_and_nothing_is_held_against_the_mail(
        mailstack, relay, tmp_path, database, caplog) -> None:
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database, smtp_port=relay.port, imap=False)
    players = [mailstack.address(u) for u in ("p1", "p2", "p3")] + [
        f"p{i}@bluff.test" for i in (4, 5)]
    start_game(server, mailstack, players)
    relay.down()
    caplog.set_level(logging.WARNING)
    report = server.tick()
    assert report.sent == 0 and "SMTP" in report.problems
    assert "SMTP unavailable" in caplog.text
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail)).all()
        assert {r.status for r in rows} == {"pending"}
        assert {r.attempts for r in rows} == {0}          # the outage is not the mail's fault
        assert {r.claimed_by for r in rows} == {None}
    opened = []
    real_open = server.senders.open

    def counting_open():
        opened.append(1)
        return real_open()
    server.senders.open = counting_open   # type: ignore[method-assign,assignment]
    clock.now += timedelta(seconds=20)
    assert server.tick().sent == 0 and opened == []      # backing off
    relay.up()
    clock.now += timedelta(seconds=20)
    report = server.tick()
    assert report.sent == 5 and report.problems == [] and opened   # counted: it is the one
    assert server.tick().sent == 0
    for user in ("p1", "p2", "p3"):
        assert len(mailstack.fetch_all(user)) == 1      # one first report each, no repeat
    assert len(relay.forwarded) == 5


def test_smtp_4xx_defers_the_mail_with_back_off_and_sends_it_once(
        mailstack, relay, tmp_path, database) -> None:
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database, smtp_port=relay.port, imap=False)
    for raw in (help_mail(mailstack, "p1"), help_mail(mailstack, "p2")):
        assert server.referee.store_inbound(raw, source="smtp")
    relay.data_reply = "451 4.7.1 Greylisted, try again later"
    report = server.tick()
    assert report.processed == 2 and report.sent == 0 and report.deferred == 2
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail)).all()
        assert [r.attempts for r in rows] == [1, 1]
        assert all(r.last_error and "451" in r.last_error for r in rows)
        assert all(r.next_attempt_at == clock.now + timedelta(minutes=1) for r in rows)
    relay.data_reply = None
    assert server.tick().sent == 0                     # not due yet
    clock.now += timedelta(minutes=1)
    assert server.tick().sent == 2
    assert server.tick().sent == 0
    assert len(answers_to(mailstack, "p1")) == 1 and len(answers_to(mailstack, "p2")) == 1


def test_a_4xx_for_days_gives_up_and_tells_the_referee(mailstack, relay, tmp_path,
                                                      database) -> None:
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database, smtp_port=relay.port, imap=False)
    assert server.referee.store_inbound(help_mail(mailstack, "p1"), source="smtp")
    relay.data_reply = "452 4.2.2 Mailbox full"
    server.tick()
    for _ in range(14):                 # a try every four hours, for more than two days
        clock.now += timedelta(hours=4)
        server.tick()
    with Session(server.engine) as session:
        answer = session.exec(select(OutboundMail).where(OutboundMail.kind == "help")).one()
        assert answer.status == "failed" and "452" in (answer.last_error or "")
        notice = session.exec(select(OutboundMail).where(OutboundMail.kind == "notice")).one()
        assert mailstack.address("referee") in notice.rcpts_json
    relay.data_reply = None
    clock.now += timedelta(hours=1)
    server.tick()
    (told,) = mailstack.fetch_all("referee")
    text = parse_mail(told).get_body(("plain",)).get_content()
    assert "could not be delivered" in text and "p1@bluff.test" in text


def test_a_5xx_for_one_recipient_does_not_block_the_rest_and_the_referee_is_told(
        mailstack, tmp_path, database) -> None:
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database, smtp_port=mailstack.smtp_port, imap=False)
    players = [mailstack.address(u) for u in ("p1", "p2")] + ["ghost@bluff.test"] + [
        mailstack.address(u) for u in ("p3", "p4")]
    start_game(server, mailstack, players)
    mailstack.clear("p4")
    report = server.tick()
    assert report.sent == 4 + 1 and report.failed == 1      # + the referee's notice
    for user in ("p1", "p2", "p3", "p4"):
        assert len(mailstack.fetch_all(user)) == 1
    (told,) = mailstack.fetch_all("referee")
    text = " ".join(parse_mail(told).get_body(("plain",)).get_content().split())
    assert "could not be delivered" in text and "ghost@bluff.test" in text and "550" in text
    assert '["ghost' not in text       # the address, not the JSON list it is kept in
    with Session(server.engine) as session:
        failed = session.exec(select(OutboundMail).where(OutboundMail.status == "failed")).one()
        assert json.loads(failed.rcpts_json) == ["ghost@bluff.test"] and failed.attempts == 1
    assert server.tick().sent == 0


# --------------------------------------------------------------------------- database


def short_lock_wait(server: Server) -> None:
    """Wait 0.2 s for a lock instead of 30 s (SQLite) or for ever (PostgreSQL): the test
    would be slow, not different."""
    def shorter(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        if server.engine.dialect.name == "sqlite":
            cursor.execute("PRAGMA busy_timeout=200")
        else:
            cursor.execute("SET lock_timeout = 200")
            dbapi_connection.commit()   # a SET in a transaction rolled back would be undone
        cursor.close()
    event.listen(server.engine, "connect", shorter)
    server.engine.dispose()


# what the log says when a lock was not had in time
LOCKED = {"sqlite": "database is locked", "postgresql": "lock timeout"}


class Locker:
    """Another process's long write transaction: on SQLite the write lock on the file; on
    PostgreSQL an exclusive lock on every table (others may read, none may write)."""

    def __init__(self, database: str) -> None:
        url = make_url(database)
        self.sqlite = url.get_backend_name() == "sqlite"
        if self.sqlite:
            self.conn: Any = sqlite3.connect(url.database or "", isolation_level=None, timeout=0)
        else:
            self.conn = psycopg.connect(url.set(drivername="postgresql")
                                        .render_as_string(hide_password=False))
        self.held = False

    def __enter__(self) -> Locker:
        if self.sqlite:
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            tables = [name for (name,) in self.conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            self.conn.execute(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE")
        self.held = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.held:
            if self.sqlite:
                self.conn.execute("ROLLBACK")
            else:
                self.conn.rollback()
            self.held = False


def test_database_locked_keeps_the_mail_in_the_mailbox_until_it_can_be_stored(
        mailstack, tmp_path, database, caplog) -> None:
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database)
    short_lock_wait(server)
    server.tick()
    mailstack.deliver("bluff", help_mail(mailstack, "p1"), mail_from=mailstack.address("p1"))
    mailstack.wait_for("bluff", 1)
    caplog.set_level(logging.WARNING)
    with Locker(database):
        report = server.tick()                  # must not raise
        assert report.fetched == 0 and "database" in report.problems
        assert LOCKED[server.engine.dialect.name] in caplog.text
        assert len(mailstack.fetch_all("bluff")) == 1          # still in the mailbox
    report = server.tick()
    assert report.fetched == 1 and report.processed == 1 and report.sent == 1
    assert server.tick().fetched == 0
    assert mailstack.fetch_all("bluff") == []
    assert len(list((tmp_path / "out").glob("*.eml"))) == 1


def test_database_locked_while_fetching_keeps_the_mail_in_the_mailbox(mailstack, tmp_path,
                                                                     database) -> None:
    """The lock comes after the tick began: the store itself fails, the mail is not moved."""
    clock = Clock()
    server = make_server(mailstack, tmp_path, clock, database)
    short_lock_wait(server)
    server.tick()
    for user in ("p1", "p2"):
        mailstack.deliver("bluff", help_mail(mailstack, user), mail_from=mailstack.address(user))
    mailstack.wait_for("bluff", 2)
    locker = Locker(database)
    real_store, real_store_batch = server.fetcher.store_fetched, server.fetcher.store_fetched_batch

    def store_under_lock(mail) -> None:
        if not locker.held:
            locker.__enter__()
        real_store(mail)

    def store_batch_under_lock(mails) -> None:   # fails too: then mail by mail, as above
        if not locker.held:
            locker.__enter__()
        real_store_batch(mails)
    server.fetcher.store_fetched = store_under_lock   # type: ignore[method-assign]
    server.fetcher.store_fetched_batch = store_batch_under_lock   # type: ignore[method-assign]
    try:
        report = server.tick()
        assert report.fetched == 0 and "database" in report.problems
        assert len(mailstack.fetch_all("bluff")) == 2       # both still in the mailbox
        with pytest.raises(OperationalError):    # what the IMAP poller saw for each mail
            server.referee.store_inbound(b"From: x@y\r\n\r\nhi", source="smtp")
    finally:
        locker.__exit__()
    server.fetcher.store_fetched = real_store   # type: ignore[method-assign]
    server.fetcher.store_fetched_batch = real_store_batch   # type: ignore[method-assign]
    report = server.tick()
    assert report.fetched == 2 and report.processed == 2 and report.sent == 2
    assert mailstack.fetch_all("bluff") == []


def outbox_server(tmp_path: Path, database: str) -> Server:
    """A server of bluff@x.org with the .eml outbox that waits little for a lock."""
    settings = Settings(database=database, address="bluff@x.org",
                        referee="referee@x.org", referee_key=KEY, outbox_dir=tmp_path / "out")
    server = Server(settings, clock=Clock())
    short_lock_wait(server)
    return server


def ann_asks_for_help(message_id: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "ann@x.org", "bluff@x.org", "help"
    msg["Message-ID"] = f"<{message_id}@x.org>"
    msg.set_content("HELP\n")
    return msg.as_bytes(policy=policy.SMTP)


def test_database_locked_while_processing_and_sending_loses_nothing(tmp_path, database,
                                                                   caplog) -> None:
    server = outbox_server(tmp_path, database)
    assert server.referee.store_inbound(ann_asks_for_help("locked-1"), source="smtp")
    caplog.set_level(logging.WARNING)
    with Locker(database):
        with pytest.raises(OperationalError):       # the referee itself lets it through
            server.referee.process_pending()
        report = server.tick()
        assert report.processed == 0 and "database" in report.problems
    with Session(server.engine) as session:
        assert session.exec(select(InboundMail)).one().status == "new"
    report = server.tick()
    assert report.processed == 1 and report.sent == 1
    assert server.tick().sent == 0
    assert len(list((tmp_path / "out").glob("*.eml"))) == 1


def test_database_locked_makes_the_listener_answer_451_and_the_resend_is_stored_once(
        tmp_path, database) -> None:
    server = outbox_server(tmp_path, database)
    raw = ann_asks_for_help("listener-1")
    with MailListener(server.store_received, port=0,
                      policy=ListenPolicy(addresses=["bluff@x.org"])) as listener:
        with Locker(database):
            with smtplib.SMTP("127.0.0.1", listener.port, timeout=10) as client:
                with pytest.raises(smtplib.SMTPDataError) as refused:
                    client.sendmail("ann@x.org", ["bluff@x.org"], raw)
            assert refused.value.smtp_code == 451
        for _ in range(2):   # the sending MTA tries again; a duplicate delivery is harmless
            with smtplib.SMTP("127.0.0.1", listener.port, timeout=10) as client:
                client.sendmail("ann@x.org", ["bluff@x.org"], raw)
    assert server.tick().processed == 1
    assert len(list((tmp_path / "out").glob("*.eml"))) == 1


# --------------------------------------------------------------------------- PostgreSQL restarts


@pytest.mark.postgresql
@pytest.mark.parametrize(("during", "outage"), [
    ("handling", "restart"),    # mid-transaction of the third order mail
    ("resolving", "restart"),   # mid-transaction of the turn's reports (the fifth mail's)
    ("handling", "down"),       # gone for the rest of the tick, back before the next
])
def test_a_postgresql_restart_in_the_middle_of_a_tick_loses_nothing(
        mailstack, tmp_path, pgcluster, during, outage) -> None:
    """The five players' orders of the crash tests' scene over IMAP and SMTP; PostgreSQL
    is restarted (or stopped) while a transaction is open. The tick reports the outage,
    the interrupted transaction leaves no trace, the next tick does the rest: every
    order applied once, every answer and report sent once."""
    scene = Scene(mailstack, tmp_path, pgcluster.new_database())
    scene.send_orders(PLAYERS)
    renderer = scene.server.referee.renderer
    real_render = renderer.render
    # renders 1-5: the five confirmations; 6-10: the reports of the turn the fifth resolves
    at = {"handling": 3, "resolving": 7}[during]
    # mails handled before the cut: none, the five orders of one game are one transaction
    # (a game's group, pbem.runner.referee.Referee.handle_group), cut as a whole
    done_before = 0
    renders = 0

    def render(*args, **kwargs):
        nonlocal renders
        renders += 1
        if renders == at:
            if outage == "restart":
                pgcluster.restart()
            else:
                pgcluster.stop_server()
        return real_render(*args, **kwargs)
    renderer.render = render   # type: ignore[method-assign]
    report = scene.server.tick()
    assert "database" in report.problems and report.fetched == 5
    renderer.render = real_render   # type: ignore[method-assign]
    if outage == "down":
        assert report.sent == 0
        pgcluster.start_server()
    else:
        assert report.sent == done_before   # their answers
    with Session(scene.server.engine) as session:
        statuses = [m.status for m in session.exec(select(InboundMail).order_by(InboundMail.id))]
        assert statuses == ["done"] * done_before + ["new"] * (5 - done_before)
        game = session.exec(select(Game)).one()
        assert game.turn == 1 and session.exec(select(Move)).all() == []
    scene.server.tick()
    assert scene.server.tick().sent == 0
    scene.check(may_repeat=0)
