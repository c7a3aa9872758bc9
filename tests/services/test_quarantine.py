"""Issue 16: no mail can stop the server, and failing mail does not flood the referee.

- a mail whose handling is killed twice (a real server process SIGKILLed at a crash
  point while handling it, testkit/crash.py) is set aside unread on the next tick:
  the referee is told once, the other mails are handled, later ticks go on;
- mails that fail with an internal error (a failure point, pbem.faults) cost the
  referee at most one notice an hour: the first at once, the rest summed up with
  their count when the hour is over.

Both over the real mail stack (Dovecot's INBOX in, SMTP out).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from pbem import faults
from pbem.config import load_settings
from pbem.models import InboundMail
from pbem.robot_client import parse_mail
from pbem.server import Server
from testkit.crash import Zygote
from testkit.desk import Clock
from testkit.e2e import text_of
from testkit.stack import stack_config, stack_settings

pytestmark = pytest.mark.mailstack

KEY = "quarantine-referee-key"
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as z:
        yield z


def mail(stack: Any, user: str, body: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"] = stack.address(user), stack.address("bluff")
    msg["Subject"] = "a question"
    msg["Message-ID"] = f"<quarantine-{next(_ids)}@{user}.test>"
    msg.set_content(body + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def rows(engine: Any) -> list[InboundMail]:
    with Session(engine) as session:
        return list(session.exec(select(InboundMail).order_by(col(InboundMail.id))))


def write_config(tmp_path: Path, stack: Any) -> Path:
    return stack_config(tmp_path / "pbem.toml", stack, f"sqlite:///{tmp_path / 'pbem.db'}", KEY)


def test_a_mail_that_kills_its_handler_twice_is_set_aside(mailstack: Any, tmp_path: Path,
                                                          zygote: Zygote) -> None:
    for user in ["bluff", "referee", "p1", "observer"]:
        mailstack.clear(user)
    config = write_config(tmp_path, mailstack)
    server = Server(load_settings(config))           # the database, made once
    killer, other = mail(mailstack, "observer", "HELP"), mail(mailstack, "p1", "HELP")
    mailstack.append("bluff", killer, other)              # the killer is handled first
    for attempt in (1, 2):
        assert zygote.tick(config, crash="inbound-handled") == -9   # SIGKILLed in handling
        first, second = rows(server.engine)
        assert first.raw == killer and first.status == "new" and first.attempts == attempt
        assert second.status == "new"
    assert zygote.tick(config) == 0                   # the next tick goes on
    first, second = rows(server.engine)
    assert first.status == "quarantined", first.outcome
    assert first.outcome is not None and first.outcome.startswith("set aside")
    assert second.status == "done" and second.outcome == "help sent"
    (notice,) = [parse_mail(r) for r in mailstack.fetch_all("referee")]
    assert str(notice["Subject"]).endswith("A mail could not be handled")
    said = " ".join(text_of(notice).split())
    assert f"#{first.id}: set aside unread" in said and "killed 2 times" in said
    assert f"RETRY {first.id} in a referee mail" in said and "RETRY <number>" not in said
    assert mailstack.fetch_all("observer") == []      # the killer's sender: nothing
    assert len(mailstack.fetch_all("p1")) == 1
    assert zygote.tick(config) == 0                   # told once, nothing more to do
    assert len(mailstack.fetch_all("referee")) == 1
    assert [r.status for r in rows(server.engine)] == ["quarantined", "done"]
    # the referee may have it handled again (after a fix): RETRY
    assert server.referee.admin(["RETRY", str(first.id)]) == [
        f"mail #{first.id} will be handled again at the next tick"]
    assert zygote.tick(config) == 0
    assert [r.status for r in rows(server.engine)] == ["done", "done"]


def stack_server(stack: Any, tmp_path: Path, clock: Clock) -> Server:
    return Server(stack_settings(stack, f"sqlite:///{tmp_path / 'pbem.db'}", KEY), clock=clock)


def test_failing_mail_costs_the_referee_one_notice_an_hour(mailstack: Any,
                                                            tmp_path: Path) -> None:
    for user in ["bluff", "referee", "observer"]:
        mailstack.clear(user)
    clock = Clock()
    server = stack_server(mailstack, tmp_path, clock)

    def notices() -> list[str]:
        return [str(parse_mail(r)["Subject"]) + " | " + " ".join(text_of(parse_mail(r)).split())
                for r in mailstack.fetch_all("referee")]

    faults.arm_failures("inbound-read")
    try:
        mailstack.append("bluff", *(mail(mailstack, "observer", f"HELP {i}") for i in range(3)))
        server.tick()
        assert [r.status for r in rows(server.engine)] == ["failed"] * 3
        (first,) = notices()                          # the first at once, alone
        assert first.startswith("A mail could not be handled") and "#1: an internal" in first
        clock.advance(minutes=30)
        mailstack.append("bluff", *(mail(mailstack, "observer", f"HELP {i}") for i in range(3, 5)))
        server.tick()
        assert [r.status for r in rows(server.engine)] == ["failed"] * 5
        assert len(notices()) == 1                    # within the hour: held back
    finally:
        faults.arm_failures(None)
    clock.advance(minutes=31)
    server.tick()                                     # an hour since: the rest, together
    first, summary = notices()
    assert summary.startswith("4 mails could not be handled")
    assert all(f"#{n}: an internal error" in summary for n in (2, 3, 4, 5))
    clock.advance(hours=2)
    server.tick()
    assert len(notices()) == 2
