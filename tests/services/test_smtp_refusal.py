"""A player's mail server that refuses our mail as we send it (550 at RCPT, a 5xx after
DATA) is heard as a bounce, over real SMTP (the test stack's front end refuses the
address): the same BounceState, game, seat, STATUS flag, REPLACE line and report note as
a DSN of the mail. A 4xx there is a retry, no bounce."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from pbem.outbox import MAX_ATTEMPTS
from pbem.store.models import BounceState, OutboundMail
from testkit.bounce import PLAYERS, Desk
from testkit.desk import seat_of

pytestmark = pytest.mark.mailstack

GHOST = "ghost@bluff.test"   # no user of the stack: its front end refuses it at RCPT


@pytest.fixture
def desk(mailstack: Any, tmp_path: Path) -> Iterator[Desk]:
    yield Desk(mailstack, tmp_path)


def start(desk: Desk, players: list[str]) -> None:
    desk.referee("NEWGAME g1 SEED 3",
                 *(f"ADD g1 {address} Player-{address.partition('@')[0]}"
                   for address in players), "START g1")
    tick(desk)


def tick(desk: Desk) -> int:
    """A tick; the mails it failed for good (an address refused)."""
    report = desk.server.tick()
    assert not report.problems, report
    return report.failed


def state(desk: Desk, address: str) -> BounceState | None:
    with Session(desk.server.engine) as session:
        found = session.exec(select(BounceState).where(BounceState.address == address)).first()
        if found is not None:
            session.expunge(found)
        return found


def referee_mails(desk: Desk, words: str) -> list[bytes]:
    return [m.replace(b"=\r\n", b"") for m in desk.stack.fetch_all("referee")
            if words.encode() in m.replace(b"=\r\n", b"")]


def status(desk: Desk) -> str:
    return "\n".join(desk.server.referee.admin(["STATUS", "g1"]))


def mails_to(desk: Desk, address: str) -> list[OutboundMail]:
    with Session(desk.server.engine) as session:
        rows = [r for r in session.exec(select(OutboundMail)).all()
                if address in r.rcpts_json]
        for row in rows:
            session.expunge(row)
        return rows


def assert_heard_as_a_bounce(desk: Desk, address: str) -> None:
    seat = seat_of(desk.server, address)
    found = state(desk, address)
    assert found is not None and found.failing and found.hard_bounces == 1
    assert found.seat == seat and found.game_id is not None
    assert found.last_reason.startswith("55"), found.last_reason
    told = referee_mails(desk, f"mail to player {seat} bounced")
    assert len(told) == 1, [m[:300] for m in desk.stack.fetch_all("referee")]
    assert b"REPLACE g1 " + str(seat).encode() in told[0]
    assert f"mail bouncing: player {seat}" in status(desk)
    # told as a bounce, not as the bare "could not be delivered" with a Message-ID
    assert referee_mails(desk, "A mail could not be delivered") == []


def test_a_refusal_at_rcpt_is_a_bounce(desk: Desk) -> None:
    start(desk, [desk.stack.address(u) for u in PLAYERS[:4]] + [GHOST])
    assert_heard_as_a_bounce(desk, GHOST)
    # the next report tells the players, once
    desk.referee("PROCESS g1")
    tick(desk)
    note = f"Mail to player {seat_of(desk.server, GHOST)} bounced".encode()
    assert note in desk.stack.fetch_all("p1")[-1].replace(b"=\r\n", b"")


def test_a_refusal_after_data_is_a_bounce(desk: Desk) -> None:
    p3 = desk.stack.address("p3")
    with desk.stack.refusing(p3, "554 5.7.1 <p3@bluff.test>: mail refused", at="DATA"):
        start(desk, [desk.stack.address(u) for u in PLAYERS])
    assert_heard_as_a_bounce(desk, p3)


def test_a_refusal_for_now_is_retried_and_no_bounce(desk: Desk) -> None:
    p3 = desk.stack.address("p3")
    with desk.stack.refusing(p3, "450 4.2.1 <p3@bluff.test>: try again later"):
        start(desk, [desk.stack.address(u) for u in PLAYERS])
        assert state(desk, p3) is None
        [report] = mails_to(desk, p3)
        assert report.status == "pending" and ": 450 4.2.1" in report.last_error
    assert referee_mails(desk, "bounced") == []
    desk.clock.advance(minutes=2)
    assert tick(desk) == 0
    [report] = mails_to(desk, p3)
    assert report.status == "sent"
    assert state(desk, p3) is None


def test_refused_for_now_until_we_give_up_is_a_bounce(desk: Desk) -> None:
    """A server that says 4xx for days: when the outbox gives up on the mail (as an MTA's
    final DSN would say), the address is bouncing."""
    p3 = desk.stack.address("p3")
    with desk.stack.refusing(p3, "452 4.2.2 <p3@bluff.test>: mailbox full"):
        start(desk, [desk.stack.address(u) for u in PLAYERS])
        for _ in range(MAX_ATTEMPTS):
            [report] = mails_to(desk, p3)
            if report.status != "pending":
                break
            assert state(desk, p3) is None   # each try that is put off: no bounce
            desk.clock.advance(hours=5)
            tick(desk)
    [report] = mails_to(desk, p3)
    assert report.attempts == MAX_ATTEMPTS
    assert report.status == "failed" and report.last_error.endswith("mailbox full")
    found = state(desk, p3)
    assert found is not None and found.failing and "gave up after" not in found.last_reason
    assert found.last_reason.startswith("452 4.2.2")
    assert len(referee_mails(desk, f"mail to player {seat_of(desk.server, p3)} bounced")) == 1
