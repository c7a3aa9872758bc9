"""The outbox drain: pages of claimed mail sent over several connections at once, each
mail once; what is left unsent (an outage, an error) is released at once."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from pbem import outbox
from pbem.config import ConfigError, Settings, SmtpSettings, load_settings
from pbem.db import open_database
from pbem.mail.smtp_out import SendResult, SmtpSender
from pbem.models import OutboundMail
from pbem.outbox import Origin, drain, enqueue
from pbem.robot_client import parse_mail
from pbem.server import Server
from tests.mailstack import start_controller

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def queue(engine, origin: Origin, rcpts: list[str]) -> None:
    with Session(engine) as session:
        for n, rcpt in enumerate(rcpts):
            enqueue(session, origin, kind="notice", to=rcpt, subject=f"mail {n}",
                    text=f"mail {n}\n", html=None, now=NOW)
        session.commit()


def rows(engine) -> list[OutboundMail]:
    with Session(engine) as session:
        return list(session.exec(select(OutboundMail).order_by(OutboundMail.id)))


@pytest.mark.mailstack
def test_three_connections_to_a_real_relay_send_every_mail_once(mailstack, tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    users = ["p1", "p2", "p3", "p4", "p5"]
    for user in users:
        mailstack.clear(user)
    queue(engine, Origin(mailstack.address("bluff")),
          [mailstack.address(users[n % 5]) for n in range(60)])
    opened: list[str] = []

    def open_sender() -> SmtpSender:
        opened.append(threading.current_thread().name)
        return SmtpSender(mailstack.smtp_host, mailstack.smtp_port, timeout=10)

    report = drain(engine, open_sender, lambda: NOW, connections=3, page=25)
    assert (report.sent, report.deferred, report.failed, report.unavailable) == (60, 0, 0, False)
    assert len(opened) == 3 and len(set(opened)) == 3      # three threads, a sender each
    assert {(r.status, r.attempts, r.claimed_by) for r in rows(engine)} == {("sent", 1, None)}
    got = Counter(str(parse_mail(raw)["Message-ID"])
                  for user in users for raw in mailstack.wait_for(user, 12))
    assert set(got.values()) == {1}
    assert set(got) == {r.message_id for r in rows(engine)}
    assert drain(engine, open_sender, lambda: NOW, connections=3).sent == 0


class Flaky:
    """A sender that takes mail until its ``n``-th, which it answers with ``answer``."""

    def __init__(self, n: int, answer: SendResult | Exception) -> None:
        self.n, self.answer = n, answer
        self.sent: list[bytes] = []
        self.calls = 0
        self.lock = threading.Lock()

    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
        with self.lock:
            self.calls += 1
            if self.calls == self.n:
                if isinstance(self.answer, Exception):
                    raise self.answer
                return self.answer
            self.sent.append(raw)
        return SendResult(accepted=list(rcpts))

    @contextmanager
    def opened(self) -> Iterator[Flaky]:
        yield self


def test_an_outage_mid_page_sends_no_more_and_releases_the_rest(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    queue(engine, Origin("bluff@x.test"), [f"p{n}@x.test" for n in range(20)])
    down = SendResult(temporary={"p4@x.test": "421 shutting down"}, unavailable=True)
    sender = Flaky(5, down)
    report = drain(engine, sender.opened, lambda: NOW, connections=1)
    assert (report.sent, report.deferred, report.unavailable) == (4, 1, True)
    assert sender.calls == 5
    after = rows(engine)
    assert [r.status for r in after] == ["sent"] * 4 + ["pending"] * 16
    assert {r.claimed_by for r in after} == {None}            # all free for the next drain
    assert {r.attempts for r in after[4:]} == {0}             # the outage is nobody's fault


def test_an_error_in_one_connection_stops_the_drain_and_releases_the_rest(
        tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    queue(engine, Origin("bluff@x.test"), [f"p{n}@x.test" for n in range(30)])
    sender = Flaky(7, RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        drain(engine, sender.opened, lambda: NOW, connections=3)
    after = rows(engine)
    assert {r.claimed_by for r in after} == {None}
    sent = [r for r in after if r.status == "sent"]
    assert len(sent) == len(sender.sent) and 6 <= len(sent) < 30
    assert {r.status for r in after} == {"sent", "pending"}
    assert drain(engine, Flaky(0, RuntimeError()).opened, lambda: NOW, connections=3).sent == \
        30 - len(sent)


def test_smtp_connections_is_a_setting(tmp_path: Path) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text('[smtp]\nhost = "smtp.x.test"\n')
    settings = load_settings(config, env={})
    assert settings.smtp is not None and settings.smtp.connections == 4
    config.write_text('[smtp]\nhost = "smtp.x.test"\nconnections = 0\n')
    with pytest.raises(ConfigError, match="connections"):
        load_settings(config, env={})


def test_a_claim_taken_over_while_sending_is_still_recorded(tmp_path: Path, caplog) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    queue(engine, Origin("bluff@x.test"), [f"p{n}@x.test" for n in range(8)])

    class Robbed(Flaky):
        def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
            if rcpts == ["p3@x.test"]:   # another process took this one over meanwhile
                with Session(engine) as session:
                    row = session.exec(select(OutboundMail).where(
                        OutboundMail.rcpts_json == '["p3@x.test"]')).one()
                    row.claimed_by = "elsewhere:1:x"
                    session.add(row)
                    session.commit()
            return super().send(mail_from, rcpts, raw)

    report = drain(engine, Robbed(0, RuntimeError()).opened, lambda: NOW, connections=2)
    assert report.sent == 8
    assert {(r.status, r.claimed_by) for r in rows(engine)} == {("sent", None)}
    assert "taken over while sending" in caplog.text


def test_a_mark_that_fails_releases_the_page_and_repeats_at_most_a_mail_a_connection(
        tmp_path: Path, monkeypatch) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    queue(engine, Origin("bluff@x.test"), [f"p{n}@x.test" for n in range(12)])
    real = outbox._mark_sent
    calls: list[int] = []

    def failing_once(engine, row_ids, when):
        calls.append(1)
        if len(calls) == 3:
            raise OperationalError("UPDATE", {}, Exception("database is locked"))
        return real(engine, row_ids, when)
    monkeypatch.setattr(outbox, "_mark_sent", failing_once)
    sender = Flaky(0, RuntimeError())
    with pytest.raises(OperationalError):
        drain(engine, sender.opened, lambda: NOW, connections=2)
    assert {r.claimed_by for r in rows(engine)} == {None}      # nothing stuck in a claim
    drain(engine, sender.opened, lambda: NOW, connections=2)
    assert {r.status for r in rows(engine)} == {"sent"}
    assert 12 <= len(sender.sent) <= 12 + 2    # repeated: at most the mail a connection held


@pytest.mark.mailstack
def test_mail_to_one_address_leaves_in_queue_order_over_several_connections(
        mailstack, tmp_path: Path) -> None:
    """A player who sends two mails gets the two answers in that order, even when the
    page goes out over several connections at once: one connection takes all the mails
    of one address, in queue order."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    users = ["p1", "p2", "p3"]
    for user in users:
        mailstack.clear(user)
    queue(engine, Origin(mailstack.address("bluff")),
          [mailstack.address(users[n % 3]) for n in range(36)])
    carried_by: dict[str, set[str]] = {}

    class RecordingSender(SmtpSender):
        def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
            carried_by.setdefault(rcpts[0], set()).add(threading.current_thread().name)
            return super().send(mail_from, rcpts, raw)

    def open_sender() -> SmtpSender:
        return RecordingSender(mailstack.smtp_host, mailstack.smtp_port, timeout=10)

    report = drain(engine, open_sender, lambda: NOW, connections=3, page=36)
    assert report.sent == 36
    assert len({name for names in carried_by.values() for name in names}) == 3
    assert all(len(names) == 1 for names in carried_by.values()), carried_by
    for n, user in enumerate(users):
        subjects = [str(parse_mail(raw)["Subject"]) for raw in mailstack.wait_for(user, 12)]
        assert subjects == [f"mail {k}" for k in range(n, 36, 3)]


class Peers:
    """An SMTP server that notes the connection (the client's port) each mail came over."""

    def __init__(self) -> None:
        self.peers: list[object] = []
        self.controller = start_controller(self)

    async def handle_DATA(self, server, session, envelope):
        self.peers.append(session.peer)
        return "250 OK"


def test_the_next_drain_sends_over_the_connection_the_last_one_kept(tmp_path: Path) -> None:
    """Connecting, EHLO (and STARTTLS, AUTH) cost more than a mail: a server keeps its SMTP
    connections open between drains, for a while (pbem.mail.smtp_out.SmtpPool)."""
    sink = Peers()
    try:
        server = Server(Settings(
            database=f"sqlite:///{tmp_path}/pbem.db", address="bluff@x.test",
            referee="referee@x.test", referee_key="k",
            smtp=SmtpSettings(sink.controller.hostname, sink.controller.port, starttls=False)))
        origin = Origin("bluff@x.test")
        for drained in range(3):
            queue(server.engine, origin, [f"p{drained}@x.test"])
            assert server.send().sent == 1
        assert len(sink.peers) == 3 and len(set(sink.peers)) == 1   # one connection
        assert server._smtp is not None
        server._smtp.keep_open = 0          # idle too long: the next drain connects anew
        queue(server.engine, origin, ["p9@x.test"])
        assert server.send().sent == 1
        assert len(set(sink.peers)) == 2
        server.close()                       # QUIT: nothing kept
        assert server._smtp._idle == []
    finally:
        sink.controller.stop()
