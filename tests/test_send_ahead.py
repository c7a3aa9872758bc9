"""Sending ahead (pbem.send_ahead): the mail a handled mail queued leaves while the tick
handles the next ones; each sender waits for its mail's mark before its next, so a crash
repeats at most one mail a connection; a deferral, a refusal and an outage are recorded
as the drain records them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import Session, select

from pbem.db import open_database
from pbem.faults import me
from pbem.mail.smtp_out import SendResult, SmtpSender
from pbem.models import OutboundMail
from pbem.outbox import ClaimedMail, Origin, enqueue
from pbem.robot_client import parse_mail
from pbem.send_ahead import SendAhead

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def handle(engine, ahead: SendAhead, origin: Origin, rcpts: list[str],
           first: int = 0) -> list[ClaimedMail]:
    """What a handled mail does: queue mail in its transaction, claimed as it is queued;
    returns what is handed to the senders after the commit."""
    with Session(engine) as session:
        stream = ahead.watch(session)
        for n, rcpt in enumerate(rcpts, start=first):
            enqueue(session, origin, kind="notice", to=rcpt, subject=f"mail {n}",
                    text=f"mail {n}\n", html=None, now=NOW)
        session.flush()
        ready = stream.ready(ahead.verp)
        session.commit()
    return ready


def rows(engine) -> list[OutboundMail]:
    with Session(engine) as session:
        return list(session.exec(select(OutboundMail).order_by(OutboundMail.id)))


def test_mail_is_claimed_in_the_transaction_that_queues_it(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    ahead = SendAhead(engine, lambda: Recorder().opened(), lambda: NOW)
    ready = handle(engine, ahead, Origin("bluff@bluff.test"), ["p1@bluff.test", "p2@bluff.test"])
    assert [m.rcpts for m in ready] == [["p1@bluff.test"], ["p2@bluff.test"]]
    assert {(r.status, r.claimed_by) for r in rows(engine)} == {("pending", me())}
    assert [r.id for r in rows(engine)] == [m.id for m in ready]


@pytest.mark.mailstack
def test_mail_leaves_before_the_handling_ends_and_in_queue_order(mailstack,
                                                                  tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    for user in ("p1", "p2"):
        mailstack.clear(user)
    p1, p2 = mailstack.address("p1"), mailstack.address("p2")

    def open_sender() -> SmtpSender:
        return SmtpSender(mailstack.smtp_host, mailstack.smtp_port, timeout=10)

    with SendAhead(engine, open_sender, lambda: NOW, connections=2) as ahead:
        ahead.submit(handle(engine, ahead, Origin(mailstack.address("bluff")),
                            [p1, p2, p1, p1, p2]))
        # delivered while the tick is still handling (finish not called yet)
        assert len(mailstack.wait_for("p1", 1, timeout=10)) >= 1
        deadline = time.monotonic() + 10
        while ahead.report.sent < 5 and time.monotonic() < deadline:
            ahead.write_marks()   # what the handling thread does after each mail
            time.sleep(0.01)
        assert ahead.report.sent == 5
    assert {(r.status, r.attempts, r.claimed_by) for r in rows(engine)} == {("sent", 1, None)}
    subjects = {user: [str(parse_mail(raw)["Subject"]) for raw in mailstack.wait_for(user, n)]
                for user, n in (("p1", 3), ("p2", 2))}
    assert subjects == {"p1": ["mail 0", "mail 2", "mail 3"], "p2": ["mail 1", "mail 4"]}


class Recorder:
    """A sender that checks, at each hand-off, that the mail it handed off before is marked
    sent already; it answers the mails whose subject is in ``answers`` as told."""

    def __init__(self, engine=None, answers: dict[str, SendResult] | None = None) -> None:
        self.engine = engine
        self.answers = answers or {}
        self.subjects: list[str] = []
        self.unmarked_at_hand_off: list[str] = []
        self.lock = threading.Lock()
        self.last: dict[str, int] = {}

    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
        thread = threading.current_thread().name
        if self.engine is not None and thread in self.last:
            with Session(self.engine) as session:
                before = session.get(OutboundMail, self.last[thread])
                assert before is not None
                if before.claimed_by is not None:
                    self.unmarked_at_hand_off.append(before.message_id)
        subject = str(parse_mail(raw)["Subject"])
        with self.lock:
            self.subjects.append(subject)
        if self.engine is not None:
            with Session(self.engine) as session:
                row = session.exec(select(OutboundMail).where(
                    OutboundMail.raw == raw)).one()
                self.last[thread] = row.id or 0
        return self.answers.get(subject, SendResult(accepted=list(rcpts)))

    @contextmanager
    def opened(self) -> Iterator[Recorder]:
        yield self


def test_a_sender_hands_off_its_next_mail_only_once_the_last_is_marked(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    recorder = Recorder(engine)
    with SendAhead(engine, recorder.opened, lambda: NOW, connections=2) as ahead:
        for n in range(4):   # four handled mails, each queuing three
            ahead.submit(handle(engine, ahead, Origin("bluff@bluff.test"),
                                [f"p{1 + (n + k) % 3}@bluff.test" for k in range(3)],
                                first=3 * n))
    assert len(recorder.subjects) == 12
    assert recorder.unmarked_at_hand_off == []
    assert ahead.report.sent == 12
    assert {(r.status, r.claimed_by) for r in rows(engine)} == {("sent", None)}


def test_a_deferral_and_a_refusal_are_recorded_and_the_rest_goes_on(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    told: list[str] = []
    recorder = Recorder(answers={
        "mail 1": SendResult(temporary={"p2@bluff.test": "451 try later"}),
        "mail 2": SendResult(permanent={"p3@bluff.test": "550 no such user"})})
    with SendAhead(engine, recorder.opened, lambda: NOW, connections=1,
                   on_failure=lambda session, row, why: told.append(why)) as ahead:
        ahead.submit(handle(engine, ahead, Origin("bluff@bluff.test"),
                            ["p1@bluff.test", "p2@bluff.test", "p3@bluff.test",
                             "p4@bluff.test"]))
    assert (ahead.report.sent, ahead.report.deferred, ahead.report.failed) == (2, 1, 1)
    states = [(r.status, r.attempts, r.claimed_by) for r in rows(engine)]
    assert states == [("sent", 1, None), ("pending", 1, None), ("failed", 1, None),
                      ("sent", 1, None)]
    assert told == ["p3@bluff.test: 550 no such user"]
    assert rows(engine)[1].next_attempt_at > NOW   # backed off, for the drain


def test_an_outage_stops_the_senders_and_releases_what_was_left(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    recorder = Recorder(answers={
        "mail 1": SendResult(temporary={"p2@bluff.test": "421 closing"}, unavailable=True)})
    with SendAhead(engine, recorder.opened, lambda: NOW, connections=1) as ahead:
        ahead.submit(handle(engine, ahead, Origin("bluff@bluff.test"),
                            [f"p{n}@bluff.test" for n in range(1, 6)]))
    assert ahead.report.unavailable and ahead.report.sent == 1
    assert recorder.subjects == ["mail 0", "mail 1"]
    states = [(r.status, r.attempts, r.claimed_by) for r in rows(engine)]
    assert states == [("sent", 1, None)] + [("pending", 0, None)] * 4


def test_an_error_while_handling_stops_after_the_mail_in_hand(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    recorder = Recorder()
    with pytest.raises(RuntimeError), SendAhead(engine, recorder.opened, lambda: NOW) as ahead:
        ahead.submit(handle(engine, ahead, Origin("bluff@bluff.test"),
                            [f"p{n}@bluff.test" for n in range(1, 6)]))
        raise RuntimeError("the handling failed")
    sent = [r for r in rows(engine) if r.status == "sent"]
    assert len(sent) == len(recorder.subjects) == ahead.report.sent   # each marked
    assert {(r.status, r.claimed_by) for r in rows(engine) if r.status != "sent"} <= {
        ("pending", None)}


def test_mail_of_a_rolled_back_savepoint_is_never_sent(tmp_path: Path) -> None:
    """A mail's commands run in a savepoint (all or none): what a refused one queued is
    gone, and must not be handed to a sender."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    recorder = Recorder()
    origin = Origin("bluff@bluff.test")
    with SendAhead(engine, recorder.opened, lambda: NOW) as ahead:
        with Session(engine) as session:
            stream = ahead.watch(session)
            enqueue(session, origin, kind="notice", to="p1@bluff.test", subject="kept",
                    text="kept\n", html=None, now=NOW)
            savepoint = session.begin_nested()
            enqueue(session, origin, kind="notice", to="p2@bluff.test", subject="taken back",
                    text="taken back\n", html=None, now=NOW)
            session.flush()
            savepoint.rollback()
            session.flush()
            ready = stream.ready(ahead.verp)
            session.commit()
        ahead.submit(ready)
    assert recorder.subjects == ["kept"]
    assert [(r.status, r.claimed_by) for r in rows(engine)] == [("sent", None)]
