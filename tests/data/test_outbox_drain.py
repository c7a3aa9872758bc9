"""The outbox drain: pages of claimed mail sent over several connections at once, each
mail once; what is left unsent (an outage, an error) is released at once."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from pbem import outbox
from pbem.config import ConfigError, Settings, SmtpSettings, load_settings
from pbem.demo.robot_client import parse_mail
from pbem.mail.smtp_out import SendResult, SmtpSender
from pbem.outbox import Origin, drain, enqueue
from pbem.runner.mail_transaction import claim, hand_over
from pbem.runner.server import Server
from pbem.store.db import open_database
from pbem.store.models import OutboundMail
from pbem.store.work import Work
from testkit.smtp_relay import start_controller
from testkit.stored import outbound_rows

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def queue(engine, origin: Origin, rcpts: list[str]) -> None:
    with Work(engine) as session:
        for n, rcpt in enumerate(rcpts):
            enqueue(session, origin, kind="notice", to=rcpt, subject=f"mail {n}",
                    text=f"mail {n}\n", html=None, now=NOW)
        session.commit()


def rows(engine) -> list:
    return outbound_rows(engine)


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


def test_a_drain_reads_the_due_mail_once_and_passes_again_only_after_a_failure(
        tmp_path: Path, monkeypatch) -> None:
    """A read that comes back short was the last of the due mail, and a pass that failed
    no mail queued nothing: one read for a tick's mail. A refusal's notice (on_failure)
    still leaves in the same drain, in a second pass. Before: three reads, five."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    queue(engine, origin, [f"p{n}@x.test" for n in range(7)])
    reads: list[int] = []
    real_due = outbox.table.due
    monkeypatch.setattr(outbox.table, "due", lambda *a: reads.append(1) or real_due(*a))
    assert drain(engine, Flaky(0, RuntimeError()).opened, lambda: NOW, connections=2).sent == 7
    assert len(reads) == 1

    def tell_referee(session: Session, row: OutboundMail, why: str) -> None:
        enqueue(session, origin, kind="notice", to="referee@x.test", subject="undeliverable",
                text=f"{row.message_id}: {why}\n", html=None, now=NOW)
    queue(engine, origin, ["gone@x.test", "here@x.test"])
    reads.clear()
    refused = SendResult(permanent={"gone@x.test": "550 5.1.1 no such user"})
    report = drain(engine, Flaky(1, refused).opened, lambda: NOW, on_failure=tell_referee)
    assert (report.sent, report.failed) == (2, 1)
    assert len(reads) == 2
    assert [(r.rcpts_json, r.status) for r in rows(engine)[7:]] == [
        ('["gone@x.test"]', "failed"), ('["here@x.test"]', "sent"),
        ('["referee@x.test"]', "sent")]


def stream_queue(engine, stream: outbox.Stream, origin: Origin, rcpts: list[str],
                 undone: list[str] = ()) -> list[outbox.table.Claimed]:
    """Queue mail in a streaming transaction as the referee does (``undone``: also queued,
    in a savepoint rolled back); commit; what the stream is to be fed."""
    with Work(engine, keep_queued=True) as session:   # keeps what it queued for the stream
        for rcpt in rcpts:
            enqueue(session, origin, kind="notice", to=rcpt, subject=rcpt, text="hi\n",
                    html=None, now=NOW)
        if undone:
            savepoint = session.begin_nested()
            for rcpt in undone:
                enqueue(session, origin, kind="notice", to=rcpt, subject=rcpt,
                        text="hi\n", html=None, now=NOW)
            session.flush()
            savepoint.rollback()
        session.flush()
        fed = stream.claim(session)
        session.commit()
    return fed


def test_a_stream_claims_at_the_commit_not_at_a_savepoint_released(tmp_path: Path) -> None:
    """The referee claims a Work's mail for the stream just before its transaction commits
    (pbem.runner.mail_transaction.claim: explicitly, no listener): a savepoint released (a
    mail's commands, all or none) is no commit and claims nothing, so each mail is claimed
    and sent once, after the commit."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    sender = Flaky(0, RuntimeError())
    stream = outbox.Stream(engine, sender.opened, lambda: NOW, connections=2)
    with Work(engine, keep_queued=True) as session:
        with session.savepoint():
            enqueue(session, origin, kind="notice", to="a@x.test", subject="a", text="hi\n",
                    html=None, now=NOW)
        assert len(session.queued) == 1             # still the transaction's, unclaimed
        enqueue(session, origin, kind="notice", to="b@x.test", subject="b", text="hi\n",
                html=None, now=NOW)
        claimed = claim(session, stream)
        session.commit()
        assert session.queued == []
        assert {(r.rcpts_json, r.claimed_by is not None) for r in rows(engine)} == {
            ('["a@x.test"]', True), ('["b@x.test"]', True)}
        hand_over(claimed, stream)
    report = stream.close()
    assert (report.sent, len(sender.sent)) == (2, 2)
    assert [(r.status, r.claimed_by) for r in rows(engine)] == [("sent", None)] * 2


def test_a_works_queued_mail_ends_with_its_transaction(tmp_path: Path) -> None:
    """What a Work queued is its transaction's: rolled back, it is not kept for the next
    commit's claim (its id may be another row's by then); committed unclaimed, it waits
    for the tick's drain, not lost."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    stream = outbox.Stream(engine, Flaky(0, RuntimeError()).opened, lambda: NOW)
    with Work(engine, keep_queued=True) as session:
        enqueue(session, origin, kind="notice", to="gone@x.test", subject="g", text="hi\n",
                html=None, now=NOW)
        session.rollback()
        assert session.queued == []
        enqueue(session, origin, kind="notice", to="a@x.test", subject="a", text="hi\n",
                html=None, now=NOW)
        session.commit()   # nothing claimed for the stream: the drain's
        assert session.queued == []
    assert [(r.rcpts_json, r.claimed_by) for r in rows(engine)] == [('["a@x.test"]', None)]
    stream.close()
    assert drain(engine, Flaky(0, RuntimeError()).opened, lambda: NOW).sent == 1


def test_a_stream_sends_what_its_transactions_queued_and_kept_each_once(
        tmp_path: Path) -> None:
    """Queued claimed, fed after the commit, sent over the connections at once; mail of a
    savepoint rolled back is not fed (it is gone), nor is a drain's to send."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    sender = Flaky(0, RuntimeError())
    stream = outbox.Stream(engine, sender.opened, lambda: NOW, connections=3)
    fed = stream_queue(engine, stream, origin, ["a@x.test", "b@x.test"],
                       undone=["gone@x.test"])
    assert [row.rcpts for row in fed] == [["a@x.test"], ["b@x.test"]]
    # claimed in their own transaction: no drain takes them
    assert {(r.rcpts_json, r.claimed_by is not None) for r in rows(engine)} == {
        ('["a@x.test"]', True), ('["b@x.test"]', True)}
    assert drain(engine, Flaky(0, RuntimeError()).opened, lambda: NOW).sent == 0
    stream.feed(fed)
    stream.feed(stream_queue(engine, stream, origin, ["a@x.test", "c@x.test"]))
    report = stream.close()
    assert (report.sent, report.unavailable) == (4, False)
    assert len(sender.sent) == 4
    assert [(r.status, r.claimed_by) for r in rows(engine)] == [("sent", None)] * 4


def test_a_stream_claims_only_what_its_transaction_still_queues_at_its_end(
        tmp_path: Path) -> None:
    """Until its end a streaming transaction's mail is unclaimed, as any queued mail, so
    what looks for unsent mail in it finds it (START drops a welcome not sent yet, a
    ROLLBACK cancels a turn's reports); what it deleted or cancelled is not claimed.
    Before, the mail was claimed as queued: START kept the welcome, a stream sent it."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    stream = outbox.Stream(engine, Flaky(0, RuntimeError()).opened, lambda: NOW)
    with Work(engine, keep_queued=True) as session:   # keeps what it queued for the stream
        rows_queued = [enqueue(session, origin, kind="notice", to=f"p{n}@x.test",
                               subject=str(n), text="hi\n", html=None, now=NOW)
                       for n in range(3)]
        session.flush()
        unsent = session.exec(select(OutboundMail).where(
            OutboundMail.status == "pending", OutboundMail.claimed_by == None)).all()  # noqa: E711
        assert len(unsent) == 3
        session.delete(session.get(OutboundMail, rows_queued[0].id))
        cancelled = session.get(OutboundMail, rows_queued[1].id)
        assert cancelled is not None
        cancelled.status = "cancelled"
        session.flush()
        fed = stream.claim(session)
        session.commit()
    assert [row.rcpts for row in fed] == [["p2@x.test"]]
    assert [(r.rcpts_json, r.status, r.claimed_by is not None) for r in rows(engine)] == [
        ('["p1@x.test"]', "cancelled", False), ('["p2@x.test"]', "pending", True)]
    stream.feed(fed)
    assert stream.close().sent == 1


def test_a_stream_claims_no_mail_a_savepoint_took_back_even_when_its_id_comes_again(
        tmp_path: Path) -> None:
    """A mail queued in a savepoint that rolled back (a mail's commands, all or none) is
    not sent; SQLite gives its id to the next mail queued, and that one, the row now, is
    sent with its own content."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    stream = outbox.Stream(engine, Flaky(0, RuntimeError()).opened, lambda: NOW)
    with Work(engine, keep_queued=True) as session:   # keeps what it queued for the stream
        kept = enqueue(session, origin, kind="notice", to="p1@x.test", subject="kept",
                       text="hi\n", html=None, now=NOW)
        with session.begin_nested() as savepoint:
            gone = enqueue(session, origin, kind="notice", to="p2@x.test", subject="gone",
                           text="hi\n", html=None, now=NOW)
            savepoint.rollback()
        again = enqueue(session, origin, kind="notice", to="p3@x.test", subject="again",
                        text="hi\n", html=None, now=NOW)
        assert again.id == gone.id      # SQLite's rowid: the id comes again
        fed = stream.claim(session)
        session.commit()
    assert [(row.id, row.rcpts) for row in fed] == [(kept.id, ["p1@x.test"]),
                                                     (again.id, ["p3@x.test"])]
    assert b"Subject: again" in fed[1].raw
    assert [r.rcpts_json for r in rows(engine)] == ['["p1@x.test"]', '["p3@x.test"]']


def test_a_stream_behind_its_connections_leaves_the_rest_to_the_drain(
        tmp_path: Path) -> None:
    """Handling faster than the connections (a big turn) does not pile mail up in memory:
    beyond ``backlog`` mails waiting, a transaction's mail is not claimed for the stream
    and the tick's drain sends it, a page at a time. (Unbounded, a 1,000-game turn of
    bench/scale.py held thousands of mails: 276 MiB at its peak against 105.)"""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    go = threading.Event()

    class Slow(Flaky):
        def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
            go.wait(10)
            return super().send(mail_from, rcpts, raw)
    slow = Slow(0, RuntimeError())
    stream = outbox.Stream(engine, slow.opened, lambda: NOW, connections=1, backlog=2)
    fed = []
    for n in range(6):
        rows_fed = stream_queue(engine, stream, origin, [f"p{n % 2}@x.test"])
        stream.feed(rows_fed)
        fed += rows_fed
    assert 2 <= len(fed) <= 3       # two waiting, and maybe one taken meanwhile
    go.set()
    deadline = time.monotonic() + 10
    while stream._schedule.waiting and time.monotonic() < deadline:   # it catches up ...
        time.sleep(0.01)
    assert stream._schedule.waiting == 0
    # ... yet later mail is the drain's too: it must not leave before what was left
    assert stream_queue(engine, stream, origin, ["p0@x.test", "p1@x.test"]) == []
    left = [r for r in rows(engine) if r.status == "pending" and r.claimed_by is None]
    assert len(left) == 8 - len(fed)
    assert stream.close().sent == len(fed)
    assert drain(engine, slow.opened, lambda: NOW).sent == 8 - len(fed)
    assert {r.status for r in rows(engine)} == {"sent"}
    for address in ("p0@x.test", "p1@x.test"):   # each address's mail in queue order
        sent_to = [json.loads(r.rcpts_json)[0] == address for r in rows(engine)]
        order = [raw for raw in slow.sent if f"To: {address}".encode() in raw]
        assert len(order) == sum(sent_to)
        assert order == [r.raw for r in rows(engine) if json.loads(r.rcpts_json) == [address]]


def test_a_stream_left_open_does_not_keep_the_process_from_exiting(tmp_path: Path) -> None:
    """Its connections wait for more mail until close(); should close never come, the
    process still exits (they are daemons). Before, a failing test that left one open
    hung the whole test run at exit."""
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from contextlib import contextmanager
from datetime import UTC, datetime
from pbem import outbox
from pbem.store.db import open_database
from pbem.mail.smtp_out import SendResult
from tests.data.test_outbox_drain import stream_queue

class Sink:
    def send(self, mail_from, rcpts, raw):
        return SendResult(accepted=list(rcpts))

@contextmanager
def opened():
    yield Sink()

engine = open_database("sqlite:///{tmp_path}/pbem.db")
stream = outbox.Stream(engine, opened, lambda: datetime(2026, 12, 1, tzinfo=UTC))
stream.feed(stream_queue(engine, stream, outbox.Origin("bluff@x.test"), ["a@x.test"]))
print("fed")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "fed", done.stderr


def test_an_outage_while_streaming_releases_the_rest_for_the_next_drain(
        tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    down = SendResult(temporary={"p2@x.test": "421 shutting down"}, unavailable=True)
    stream = outbox.Stream(engine, Flaky(3, down).opened, lambda: NOW, connections=1)
    for n in range(6):
        stream.feed(stream_queue(engine, stream, origin, [f"p{n}@x.test"]))
    report = stream.close()
    assert (report.sent, report.deferred, report.unavailable) == (2, 1, True)
    after = rows(engine)
    assert [r.status for r in after] == ["sent"] * 2 + ["pending"] * 4
    assert {r.claimed_by for r in after} == {None}       # free for the next drain at once
    assert {r.attempts for r in after[2:]} == {0}        # the outage is nobody's fault
    sender = Flaky(0, RuntimeError())
    assert drain(engine, sender.opened, lambda: NOW).sent == 4
    assert len(sender.sent) == 4


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
    real = outbox.table.mark_sent
    calls: list[int] = []

    def failing_once(engine, row_ids, when):
        calls.append(1)
        if len(calls) == 3:
            raise OperationalError("UPDATE", {}, Exception("database is locked"))
        return real(engine, row_ids, when)
    monkeypatch.setattr(outbox.table, "mark_sent", failing_once)
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
    page goes out over several connections at once: the next mail to an address goes out
    only once the one before it is handed off, never two to one address at once."""
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    users = ["p1", "p2", "p3"]
    for user in users:
        mailstack.clear(user)
    queue(engine, Origin(mailstack.address("bluff")),
          [mailstack.address(users[n % 3]) for n in range(36)])
    carriers: set[str] = set()
    in_flight: set[str] = set()
    overlaps: list[str] = []
    lock = threading.Lock()

    class RecordingSender(SmtpSender):
        def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
            with lock:
                carriers.add(threading.current_thread().name)
                if rcpts[0] in in_flight:
                    overlaps.append(rcpts[0])
                in_flight.add(rcpts[0])
            try:
                return super().send(mail_from, rcpts, raw)
            finally:
                with lock:
                    in_flight.discard(rcpts[0])

    def open_sender() -> SmtpSender:
        return RecordingSender(mailstack.smtp_host, mailstack.smtp_port, timeout=10)

    report = drain(engine, open_sender, lambda: NOW, connections=3, page=36)
    assert report.sent == 36
    assert len(carriers) == 3 and overlaps == []
    for n, user in enumerate(users):
        subjects = [str(parse_mail(raw)["Subject"]) for raw in mailstack.wait_for(user, 12)]
        assert subjects == [f"mail {k}" for k in range(n, 36, 3)]


def claimed(addresses: list[str]) -> list[outbox.table.Claimed]:
    return [outbox.table.Claimed(n + 1, "bluff@x.test", [a], b"") for n, a in enumerate(addresses)]


def rounds_to_send(addresses: list[str], connections: int) -> list[list[int]]:
    """The ids each round of ``connections`` senders takes, each round handed off whole."""
    schedule, rounds = outbox.connections.ByAddress(claimed(addresses)), []
    while True:
        taken = []
        for _ in range(connections):
            row = schedule.take() if len(taken) < schedule.addresses else None
            if row is None:
                break
            taken.append(row)
        if not taken:
            return rounds
        rounds.append([row.id for row in taken])
        for row in taken:
            schedule.handed_off(row)


def test_a_turns_answers_and_reports_to_five_players_take_three_rounds_of_four() -> None:
    """An answer and a report to each of five players over four connections: the player
    whose chain is longest goes first, so three rounds, not the four of a connection
    that takes both mails of two players."""
    turn = [f"p{n}@x.test" for n in range(1, 6)] * 2       # the answers, then the reports
    rounds = rounds_to_send(turn, 4)
    assert rounds == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcde"), min_size=1, max_size=30),
       st.integers(1, 6), st.randoms(use_true_random=False), st.booleans())
def test_the_schedule_keeps_each_addresss_order_and_never_sends_two_at_once(
        letters: list[str], connections: int, rng, streamed: bool) -> None:
    """Connections taking and handing off mail in any order: each mail is taken once,
    an address's mails in queue order and one at a time, and a connection is told there
    is nothing left only when nothing is. Streamed (a Stream's schedule): the mail comes
    in batches at any moment, and nothing is left only once the schedule is closed."""
    rows = claimed([f"{letter}@x.test" for letter in letters])
    batches: list[list[outbox.table.Claimed]] = []
    if streamed:   # cut into batches, queued at random moments below
        cuts = sorted(rng.sample(range(1, len(rows)), rng.randrange(len(rows)))) \
            if len(rows) > 1 else []
        batches = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)])]
        schedule = outbox.connections.ByAddress([], more=True)
    else:
        schedule = outbox.connections.ByAddress(rows)
    added = [] if streamed else list(rows)
    in_flight: list[outbox.table.Claimed] = []
    taken: list[outbox.table.Claimed] = []
    idle = connections
    while True:
        busy_addresses = {row.rcpts[0] for row in in_flight}
        could_take = any(row.rcpts[0] not in busy_addresses for row in added
                         if row not in taken)
        if batches and (not could_take or rng.random() < 0.3):
            batch = batches.pop(0)
            schedule.add(batch)
            added += batch
            if not batches:
                schedule.close()
        elif idle and could_take and (not in_flight or rng.random() < 0.6):
            row = schedule.take()     # never blocks: an address is ready
            assert row is not None and row.rcpts[0] not in busy_addresses
            in_flight.append(row)
            taken.append(row)
            idle -= 1
        elif in_flight:
            schedule.handed_off(in_flight.pop(rng.randrange(len(in_flight))))
            idle += 1
        else:
            break
    assert len(taken) == len(rows) and {row.id for row in taken} == {row.id for row in rows}
    for address in set(letters):
        ids = [row.id for row in taken if row.rcpts[0] == f"{address}@x.test"]
        assert ids == sorted(ids)
    assert schedule.take() is None


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
        assert server.senders._pool is not None
        server.senders._pool.keep_open = 0          # idle too long: the next drain connects anew
        queue(server.engine, origin, ["p9@x.test"])
        assert server.send().sent == 1
        assert len(set(sink.peers)) == 2
        server.close()                       # QUIT: nothing kept
        assert server.senders._pool._idle == []
    finally:
        sink.controller.stop()


@pytest.mark.mailstack
def test_a_tick_whose_stream_sent_everything_skips_the_drain_and_one_with_more_drains(
        mailstack, tmp_path: Path, monkeypatch) -> None:
    """The tick asks whether any mail but its stream's is due while the stream's last
    mails leave; with none it makes no drain after them (a transaction and a read on the
    tick's last stretch). Mail that is due from elsewhere (queued by another process, a
    retry come due), and mail an error of the stream left unsent, still leave in that
    tick."""
    from testkit.e2e import stack_server
    from tests.e2e.test_outages import help_mail
    server = stack_server(mailstack, tmp_path, ["p1", "p2", "p3"])
    looked: list[int] = []
    real_due = outbox.table.due

    def due(*args, **kwargs):   # noqa: ANN002, ANN003, ANN202
        looked.append(1)
        return real_due(*args, **kwargs)
    monkeypatch.setattr(outbox.table, "due", due)

    def ask(user: str) -> None:
        mailstack.deliver("bluff", help_mail(mailstack, user), mail_from=mailstack.address(user))
    try:
        ask("p1")
        report = server.tick()
        assert (report.processed, report.sent) == (1, 1)
        assert looked == []            # the stream sent all there was: no drain
        assert {r.status for r in rows(server.engine)} == {"sent"}

        queue(server.engine, Origin(mailstack.address("bluff")), [mailstack.address("p2")])
        ask("p2")    # (a second HELP from p1 so soon would go unanswered)
        report = server.tick()
        assert (report.processed, report.sent) == (1, 2)
        assert looked                  # the other mail was due: the drain sent it
        assert [r.status for r in rows(server.engine)] == ["sent"] * 3
        assert len(mailstack.wait_for("p1", 1)) == 1
        assert len(mailstack.wait_for("p2", 2)) == 2

        # an error in the stream's connection leaves its mail to the drain, which sends it
        # in the same tick, though nothing else was due when the tick asked
        real_send, failed = SmtpSender.send, []

        def send_once_failing(self, *args):   # noqa: ANN001, ANN002, ANN202
            if not failed:
                failed.append(1)
                raise RuntimeError("a bug in the connection")
            return real_send(self, *args)
        monkeypatch.setattr(SmtpSender, "send", send_once_failing)
        mailstack.clear("p3")
        ask("p3")
        report = server.tick()
        assert failed and (report.processed, report.sent) == (1, 1)
        assert [r.status for r in rows(server.engine)] == ["sent"] * 4
        assert len(mailstack.wait_for("p3", 1)) == 1
    finally:
        server.close()
