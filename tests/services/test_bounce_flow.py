"""Bounces heard, over the real mail stack: each shape of the corpus is delivered into
the server's Dovecot mailbox (with a null envelope sender, as MTAs send them), fetched
over IMAP like any mail, and matched to the right player; the address is marked, the
referee told once a day, STATUS and the next report say so, the player's next mail
clears it. Unknown and forged bounces mark nobody; bounces are never answered. And the
sender checks: with require_aligned, a player's mail our mail server did not find
aligned is refused and counted."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from pbem.config import SecuritySettings
from pbem.mail.bounces import verp_address
from pbem.store.models import BounceState, InboundMail, OutboundMail, SenderEvent
from pbem.store.security import AUTH_FAILED
from testkit.bounce import PLAYERS, SHAPES, Desk, bounce_bytes
from testkit.desk import seat_of

pytestmark = pytest.mark.mailstack


@pytest.fixture
def desk(mailstack: Any, tmp_path: Path) -> Iterator[Desk]:
    made = Desk(mailstack, tmp_path)
    start(made)
    yield made


def start(desk: Desk, options: str = "") -> None:
    desk.referee(f"NEWGAME g1 SEED 3 {options}".strip(),
                 *(f"ADD g1 {desk.stack.address(u)} Player-{u}" for u in PLAYERS), "START g1")
    desk.tick()
    desk.stack.wait_for("p3", 1)


def report_to(desk: Desk, user: str) -> OutboundMail:
    with Session(desk.server.engine) as session:
        rows = session.exec(select(OutboundMail).where(OutboundMail.kind == "report")
                            .order_by(col(OutboundMail.id).desc())).all()
        row = next(r for r in rows if json.loads(r.rcpts_json) == [desk.stack.address(user)])
        session.expunge(row)
        return row


def bounce(desk: Desk, shape: str, user: str = "p3", message_id: str | None = None,
           to: str | None = None) -> str:
    """Deliver a bounce of shape for user's latest report; tick; the mail's outcome."""
    stack = desk.stack
    desk.n += 1   # each bounce its own Message-ID, as MTAs write them (else it is a resend)
    raw = bounce_bytes(shape, message_id=message_id or report_to(desk, user).message_id,
                       rcpt=stack.address(user), server=to or stack.address("bluff"),
                       from_addr=stack.address("bluff"))
    head, _, body = raw.partition(b"\r\n\r\n")
    head = re.sub(rb"(?im)^(message-id: <)", rb"\g<1>%d." % desk.n, head, count=1)
    raw = head + b"\r\n\r\n" + body
    stack.deliver(to or "bluff", raw, mail_from="")
    desk.tick()
    with Session(desk.server.engine) as session:
        row = session.exec(select(InboundMail).order_by(col(InboundMail.id).desc())).first()
        assert row is not None and row.status == "done"
        return str(row.outcome)


def state(desk: Desk, user: str) -> BounceState | None:
    with Session(desk.server.engine) as session:
        found = session.exec(select(BounceState).where(
            BounceState.address == desk.stack.address(user))).first()
        if found is not None:
            session.expunge(found)
        return found


def referee_mails(desk: Desk, words: str) -> list[bytes]:
    return [m for m in desk.stack.fetch_all("referee") if words.encode() in m]


def status(desk: Desk) -> str:
    return "\n".join(desk.server.referee.admin(["STATUS", "g1"]))


@pytest.mark.parametrize("shape", sorted(s for s in SHAPES if SHAPES[s][1] and s != "verp_only"))
def test_each_hard_bounce_is_matched_to_the_right_player(desk: Desk, shape: str) -> None:
    seat = seat_of(desk.server, desk.stack.address("p3"))
    before = {u: len(desk.stack.fetch_all(u)) for u in PLAYERS}
    outcome = bounce(desk, shape)
    assert outcome.startswith("bounce (hard) of report mail")
    assert f"game g1 seat {seat}, matched by message-id" in outcome
    found = state(desk, "p3")
    assert found is not None and found.failing and found.seat == seat
    assert found.hard_bounces == 1 and found.last_reason
    told = referee_mails(desk, f"mail to player {seat} bounced")
    assert len(told) == 1 and b"REPLACE g1" in told[0]
    assert f"mail bouncing: player {seat} Player-p3" in status(desk)
    # never answered: nobody got mail from the bounce
    assert {u: len(desk.stack.fetch_all(u)) for u in PLAYERS} == before
    assert state(desk, "p2") is None


def test_a_verp_bounce_is_matched_by_its_return_path(mailstack: Any, tmp_path: Path) -> None:
    desk = Desk(mailstack, tmp_path, verp=True)
    start(desk)
    sent = report_to(desk, "p2")
    assert sent.bounce_token
    to = verp_address(mailstack.address("bluff"), sent.bounce_token)
    outcome = bounce(desk, "verp_only", user="p2", to=to)
    assert "matched by verp" in outcome
    found = state(desk, "p2")
    assert found is not None and found.failing and found.message_id == sent.message_id
    assert found.seat == seat_of(desk.server, mailstack.address("p2"))


def test_soft_bounces_are_counted_and_told_after_the_limit(desk: Desk) -> None:
    seat = seat_of(desk.server, desk.stack.address("p3"))
    for n in (1, 2):
        assert f"bounce (soft, {n} in a row)" in bounce(desk, "postfix_delayed")
    found = state(desk, "p3")
    assert found is not None and not found.failing and found.soft_bounces == 2
    assert referee_mails(desk, "bounced") == []
    assert "the referee was told" in bounce(desk, "postfix_delayed")
    told = referee_mails(desk, f"mail to player {seat} bounced")
    assert len(told) == 1 and b"3 mails in a row" in told[0].replace(b"=\r\n", b"")
    assert "mail bouncing" not in status(desk)   # soft: not failing


def test_unknown_and_forged_bounces_mark_nobody(desk: Desk) -> None:
    outcome = bounce(desk, "postfix_dsn", message_id="<never-sent@bluff.test>")
    assert outcome.startswith("ignored: a bounce for p3@bluff.test, naming no mail we sent")
    assert "ignored" in bounce(desk, "forged")
    of_p2 = report_to(desk, "p2").message_id   # p3's bounce naming p2's report
    assert "ignored" in bounce(desk, "exim_dsn", message_id=of_p2)
    assert all(state(desk, u) is None for u in PLAYERS)
    assert referee_mails(desk, "bounced") == []


def test_next_report_says_it_once_and_the_players_mail_clears_it(desk: Desk) -> None:
    seat = seat_of(desk.server, desk.stack.address("p3"))
    bounce(desk, "gmail")
    desk.referee("PROCESS g1")
    desk.tick()
    note = f"Mail to player {seat} bounced".encode()
    assert note in desk.stack.fetch_all("p1")[-1].replace(b"=\r\n", b"")
    desk.referee("PROCESS g1")
    desk.tick()
    assert note not in desk.stack.fetch_all("p1")[-1].replace(b"=\r\n", b"")
    assert "mail bouncing" in status(desk)
    desk.player("p3", "ORDERS")
    desk.tick()
    found = state(desk, "p3")
    assert found is not None and not found.failing and not found.soft_bounces
    assert "mail bouncing" not in status(desk)


def test_the_referee_is_told_once_per_address_and_day(desk: Desk) -> None:
    seat = seat_of(desk.server, desk.stack.address("p3"))
    bounce(desk, "postfix_dsn")
    assert "referee was told" not in bounce(desk, "qmail")
    assert len(referee_mails(desk, f"mail to player {seat} bounced")) == 1
    desk.clock.advance(days=1)
    assert "the referee was told" in bounce(desk, "exchange_ndr")
    assert len(referee_mails(desk, f"mail to player {seat} bounced")) == 2


def test_the_replace_prompt_says_the_address_bounces(mailstack: Any, tmp_path: Path) -> None:
    desk = Desk(mailstack, tmp_path)
    start(desk, "MISSED 1")
    seat = seat_of(desk.server, mailstack.address("p3"))
    bounce(desk, "postfix_dsn")
    desk.referee("PROCESS g1")
    desk.tick()
    prompts = [m.replace(b"=\r\n", b"") for m in referee_mails(desk, "has missed")]
    mine = [m for m in prompts if f"player {seat} has missed".encode() in m]
    assert len(mine) == 1 and b"has been bouncing since" in mine[0]
    assert all(b"bouncing" not in m for m in prompts if m not in mine)


# --------------------------------------------------------------------------- sender checks


ALIGNED = "Authentication-Results: mx.bluff.test; dmarc=pass header.from=bluff.test"
NOT_ALIGNED = ("Authentication-Results: mx.bluff.test; spf=softfail "
               "smtp.mailfrom=p1@bluff.test; dmarc=fail header.from=bluff.test")


@pytest.fixture
def strict(mailstack: Any, tmp_path: Path) -> Desk:
    made = Desk(mailstack, tmp_path, security=SecuritySettings(True, "mx.bluff.test"))
    start(made)
    return made


def test_an_unaligned_order_is_refused_and_counted(strict: Desk) -> None:
    stack = strict.stack
    forged_pass_below = "Authentication-Results: mx.bluff.test; dmarc=pass header.from=bluff.test"
    strict.player("p1", "ORDERS", top=(NOT_ALIGNED, "Received: from somewhere",
                                      forged_pass_below))
    strict.tick()
    answer = stack.fetch_all("p1")[-1].replace(b"=\r\n", b"")
    assert b"could not be verified as sent by bluff.test" in answer
    assert b"DMARC fail" in answer
    with Session(strict.server.engine) as session:
        assert session.exec(select(SenderEvent).where(
            SenderEvent.address == stack.address("p1"),
            SenderEvent.kind == AUTH_FAILED)).first() is not None
    strict.player("p1", "ORDERS", top=(ALIGNED,))
    strict.tick()
    assert b"could not be verified" not in stack.fetch_all("p1")[-1].replace(b"=\r\n", b"")


def test_without_our_servers_verdict_a_players_mail_is_refused(strict: Desk) -> None:
    strict.player("p2", "ORDERS")
    strict.tick()
    answer = strict.stack.fetch_all("p2")[-1].replace(b"=\r\n", b"")
    assert b"no Authentication-Results from mx.bluff.test" in answer


def test_the_referee_and_strangers_are_not_checked(strict: Desk) -> None:
    strict.send("observer", "HELP")
    strict.referee("STATUS g1")
    strict.tick()
    assert b"could not be verified" not in strict.stack.fetch_all("observer")[-1]
    assert b"could not be verified" not in strict.stack.fetch_all("referee")[-1]
