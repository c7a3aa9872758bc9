"""The send budget ([smtp] per_minute, per_day) against the real relay: a burst leaves
within it, the most urgent mail first, counted from the outbox table; a provider's
rate-limit answer pauses sending without a try counted against the mail; the referee
is told once when the budget is short."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from pbem.config import SmtpSettings, load_settings
from pbem.demo.robot_client import parse_mail
from pbem.mail.smtp_out import SmtpSender, rate_limit_answer
from pbem.outbox import Budget, Origin, drain, enqueue
from pbem.runner.server import Server
from pbem.store.models import OutboundMail
from pbem.store.work import Work
from testkit.e2e import REFEREE_KEY
from testkit.stack import stack_settings

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
USERS = ["p1", "p2", "p3", "p4", "p5"]


class Clock:
    """The outbox's clock (drain's ``now``, Server's ``clock``), moved by the test."""

    def __init__(self) -> None:
        self.at = NOW

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def queue(engine, mailstack, kinds: list[str]) -> None:   # noqa: ANN001
    """One mail of each kind, to p1 ... p5 in turn, queued in this order at NOW."""
    with Work(engine) as session:
        for n, kind in enumerate(kinds):
            enqueue(session, Origin(mailstack.address("bluff")), kind=kind,
                    to=mailstack.address(USERS[n % 5]), subject=f"{kind} {n}",
                    text=f"{kind} {n}\n", html=None, now=NOW)
        session.commit()


def rows(engine) -> list[OutboundMail]:   # noqa: ANN001
    with Session(engine) as session:
        return list(session.exec(select(OutboundMail).order_by(OutboundMail.id)))


def delivered(mailstack) -> list[str]:   # noqa: ANN001
    """The subjects of the mail the relay delivered to p1 ... p5."""
    return sorted(str(parse_mail(raw)["Subject"]) for user in USERS
                  for raw in mailstack.fetch_all(user))


def sender(mailstack):   # noqa: ANN001, ANN201
    return lambda: SmtpSender(mailstack.smtp_host, mailstack.smtp_port, timeout=10)


@pytest.fixture
def server_of(mailstack, tmp_path: Path):   # noqa: ANN001, ANN201
    made: list[Server] = []

    def make(clock: Clock, **smtp: int) -> Server:
        for user in ["bluff", "referee", *USERS]:
            mailstack.clear(user)
        settings = stack_settings(mailstack, f"sqlite:///{tmp_path}/pbem.db", REFEREE_KEY,
                                  send_while_handling=False)
        assert settings.smtp is not None
        server = Server(dataclasses.replace(settings, smtp=dataclasses.replace(
            settings.smtp, **smtp)), clock)
        made.append(server)
        return server
    yield make
    for server in made:
        server.close()


@pytest.mark.mailstack
def test_a_burst_leaves_within_the_budget_per_minute_the_most_urgent_first(
        mailstack, database: str) -> None:
    from pbem.store.db import open_database
    engine = open_database(database)
    for user in USERS:
        mailstack.clear(user)
    # reminders and table talk queued first, then a turn's confirmations and reports
    later = ["reminder", "talk"] * 5 + ["watch"] * 5
    urgent = ["confirm", "report", "error", "report", "notice"]
    queue(engine, mailstack, later + urgent)
    clock, budget = Clock(), Budget(per_minute=5)

    report = drain(engine, sender(mailstack), clock, budget=budget, connections=3)
    assert (report.sent, report.held) == (5, 15)
    sent = [r for r in rows(engine) if r.status == "sent"]
    assert sorted(r.kind for r in sent) == sorted(urgent)     # urgent mail first
    assert len(delivered(mailstack)) == 5
    # another worker's drain in the same minute: the budget is the table's, spent
    clock.advance(30)
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 0
    clock.advance(31)   # a minute after the first five: five more, the oldest first
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 5
    assert [r.kind for r in rows(engine) if r.status == "sent"][:5] == later[:5]
    for _ in range(2):
        clock.advance(61)
        drain(engine, sender(mailstack), clock, budget=budget)
    assert {r.status for r in rows(engine)} == {"sent"}
    times = sorted(r.sent_at for r in rows(engine) if r.sent_at is not None)
    assert all(sixth - first >= timedelta(minutes=1)            # no 6 in any minute
               for first, sixth in zip(times, times[5:], strict=False))
    assert len(delivered(mailstack)) == 20


@pytest.mark.mailstack
def test_a_day_budget_counts_what_was_sent_in_the_last_day(mailstack, database: str) -> None:
    from pbem.store.db import open_database
    engine = open_database(database)
    for user in USERS:
        mailstack.clear(user)
    queue(engine, mailstack, ["confirm"] * 7)
    clock, budget = Clock(), Budget(per_day=4)
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 4
    clock.advance(3600)
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 0
    clock.advance(86400 - 3600 + 1)
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 3


@pytest.mark.mailstack
@pytest.mark.parametrize(("reply", "at"), [
    ("451 4.7.0 Try again later, closing connection", "RCPT"),
    ("421 4.7.0 Temporary System Problem. Try again later", "DATA"),
    ("450 Too many messages sent, slow down", "RCPT"),
    ("550 5.4.5 Daily user sending limit exceeded", "DATA"),
])
def test_a_rate_limit_answer_pauses_sending_and_keeps_the_mail(
        mailstack, server_of, reply: str, at: str) -> None:
    clock = Clock()
    server = server_of(clock)
    queue(server.engine, mailstack, ["confirm", "report", "talk"])
    with mailstack.throttling(reply, at=at, mails=1):
        before = mailstack.throttled
        report = server.send()
        assert mailstack.throttled - before == 1        # the rest was not tried
        # kept: no try counted against it, no bounce, nothing failed
        assert {(r.status, r.attempts) for r in rows(server.engine)} == {("pending", 0)}
        assert report.rate_limited and report.unavailable and report.sent == 0
        assert delivered(mailstack) == []
        clock.advance(10)     # sending pauses (the SMTP back-off): nothing tried
        assert server.send().unavailable and mailstack.throttled - before == 1
    clock.advance(60)         # the relay takes mail again, and the back-off is over
    assert server.send().sent == 3
    assert {(r.status, r.attempts) for r in rows(server.engine)} == {("sent", 1)}
    assert len(delivered(mailstack)) == 3
    assert mailstack.fetch_all("referee") == []      # nothing to tell: no failure


def test_rate_limit_answers_are_told_from_other_refusals() -> None:
    for text in ("451 4.7.0 Try again later", "421 4.7.0 Temporary System Problem",
                 "450 4.7.1 Rate limit exceeded", "451 Too many connections",
                 "452 4.3.1 sending limit exceeded", "421-4.7.28 unusual rate",
                 "550 5.4.5 Daily user sending limit exceeded",
                 "554 5.7.0 Sending quota exceeded"):
        assert rate_limit_answer(text), text
    for text in ("450 4.2.1 Mailbox busy", "451 4.3.0 LMTP unavailable",
                 "452 4.5.3 Too many recipients", "550 5.7.1 rate limit",
                 "421 4.4.2 Connection timed out", "451 4.7.1 Greylisted, try again later",
                 "450 4.7.1 <p1@x.test>: Recipient address rejected: Greylisted",
                 "552 5.2.2 Mailbox quota exceeded", "550 5.1.1 user unknown"):
        assert not rate_limit_answer(text), text


@pytest.mark.mailstack
def test_the_referee_is_told_once_when_the_budget_is_short(mailstack, server_of) -> None:
    clock = Clock()
    server = server_of(clock, per_minute=5, per_day=10)
    queue(server.engine, mailstack, ["confirm"] * 20)
    report = server.send()
    assert report.sent == 5
    notices = [r for r in rows(server.engine) if r.kind == "budget"]
    assert len(notices) == 1 and notices[0].status == "pending"
    for _ in range(3):     # the next ticks: the notice leaves first, and no second one
        clock.advance(61)
        server.send()
    assert len([r for r in rows(server.engine) if r.kind == "budget"]) == 1
    told = mailstack.wait_for("referee", 1)
    assert len(told) == 1
    text = parse_mail(told[0]).get_body(("plain",)).get_content()
    assert "15 mails are waiting" in text and "per_day = 10" in text
    assert "Today's budget has 5 mails left" in text
    assert len([r for r in rows(server.engine) if r.status == "sent"]) == 10   # a day's
    clock.advance(86400)
    server.send()         # a day later, still short: told again, once
    assert len([r for r in rows(server.engine) if r.kind == "budget"]) == 2


def test_the_budget_is_a_setting_and_the_presets_fill_it(tmp_path: Path) -> None:
    def smtp(section: str) -> SmtpSettings:
        path = tmp_path / "pbem.toml"
        path.write_text(section)
        settings = load_settings(path, env={})
        assert settings.smtp is not None
        return settings.smtp
    assert (smtp('[smtp]\nhost = "h"\n').per_minute, smtp('[smtp]\nhost = "h"\n').per_day) \
        == (0, 0)
    gmail = smtp('[smtp]\nprovider = "fastmail"\nusername = "u"\npassword = "p"\n')
    assert (gmail.per_minute, gmail.per_day) == (20, 2000)
    given = smtp('[smtp]\nprovider = "fastmail"\nusername = "u"\npassword = "p"\n'
                 'per_day = 100\n')
    assert (given.per_minute, given.per_day) == (20, 100)


@pytest.mark.mailstack
def test_a_stream_sends_within_the_budget_and_leaves_the_rest_to_the_drain(
        mailstack, tmp_path: Path) -> None:
    from pbem import outbox
    from pbem.store.db import open_database
    from tests.data.test_outbox_drain import stream_queue
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    for user in USERS:
        mailstack.clear(user)
    clock, budget = Clock(), Budget(per_minute=3)
    queue(engine, mailstack, ["confirm"])
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 1
    stream = outbox.Stream(engine, sender(mailstack), clock, connections=2, budget=budget)
    origin = Origin(mailstack.address("bluff"))
    fed = [stream_queue(engine, stream, origin, [mailstack.address(user)]) for user in USERS]
    assert [len(f) for f in fed] == [1, 1, 0, 0, 0]     # two left in the minute's budget
    for rows_fed in fed:
        stream.feed(rows_fed)
    assert stream.close().sent == 2
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 0
    clock.advance(61)
    assert drain(engine, sender(mailstack), clock, budget=budget).sent == 3
    assert len(delivered(mailstack)) == 6
