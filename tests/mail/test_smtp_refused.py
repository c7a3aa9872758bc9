"""Which refusals SmtpSender reports as the server's word on a recipient
(SendResult.refused: a bounce, pbem.services.bounces) and which not, over real SMTP
(an aiosmtpd server on loopback that answers as told)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pbem.mail.smtp_out import SmtpSender
from testkit.smtp_relay import start_controller

RAW = b"From: bluff@x.test\r\nTo: p@x.test\r\nSubject: hi\r\nMessage-ID: <1@x.test>\r\n\r\nhi\r\n"


class Answers:
    """Answers MAIL, RCPT and DATA with the reply set for them (else 250)."""

    def __init__(self) -> None:
        self.mail = self.data = ""
        self.rcpt: dict[str, str] = {}

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if self.mail:
            return self.mail
        envelope.mail_from = address
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.rcpt:
            return self.rcpt[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        return self.data or "250 OK"


@pytest.fixture
def server() -> Iterator[tuple[Answers, SmtpSender]]:
    answers = Answers()
    controller = start_controller(answers)
    try:
        yield answers, SmtpSender(controller.hostname, controller.port, timeout=5)
    finally:
        controller.stop()


def test_a_refusal_at_rcpt_is_the_recipients(server: tuple[Answers, SmtpSender]) -> None:
    answers, sender = server
    answers.rcpt = {"gone@x.test": "550 5.1.1 <gone@x.test>: user unknown",
                    "busy@x.test": "450 4.2.1 <busy@x.test>: try later"}
    result = sender.send("bluff@x.test", ["gone@x.test", "busy@x.test", "p@x.test"], RAW)
    assert result.accepted == ["p@x.test"]
    assert set(result.refused) == {"gone@x.test", "busy@x.test"}
    assert "gone@x.test" in result.permanent and "busy@x.test" in result.temporary
    result = sender.send("bluff@x.test", ["gone@x.test"], RAW)   # the only one: refused too
    assert result.refused == result.permanent == {
        "gone@x.test": "550 5.1.1 <gone@x.test>: user unknown"}


def test_a_refusal_after_data_is_the_recipients(server: tuple[Answers, SmtpSender]) -> None:
    answers, sender = server
    answers.data = "554 5.7.1 refused"
    result = sender.send("bluff@x.test", ["p@x.test"], RAW)
    assert result.refused == result.permanent == {"p@x.test": "554 5.7.1 refused"}


def test_a_refusal_of_our_sender_is_no_recipients(server: tuple[Answers, SmtpSender]) -> None:
    answers, sender = server
    answers.mail = "553 5.7.1 <bluff@x.test>: sender rejected"
    result = sender.send("bluff@x.test", ["p@x.test"], RAW)
    assert "p@x.test" in result.permanent and result.refused == {}
