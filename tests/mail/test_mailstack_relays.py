"""The test mail stack's SMTP front end in processes of its own (MailStack(relay_processes),
what bench/mail_throughput.py runs by default) takes a mail and delivers it to Dovecot."""

from __future__ import annotations

import os
import smtplib
from email.message import EmailMessage

import pytest

from testkit.dovecot import dovecot_available
from testkit.mailstack import MailStack


def test_a_front_end_process_delivers_a_mail_to_the_mailbox() -> None:
    if not dovecot_available():
        if os.environ.get("CI"):
            pytest.fail("Dovecot is not installed", pytrace=False)
        pytest.skip("Dovecot is not installed")
    stack = MailStack(relay_processes=1).start()
    try:
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = "a@elsewhere.test", stack.users[0], "hello"
        msg.set_content("one mail through a front end process")
        with smtplib.SMTP(stack.smtp_host, stack.smtp_port, timeout=10) as smtp:
            refused = smtp.send_message(msg)
        assert refused == {}
        delivered = stack.wait_for(stack.users[0], 1)
        assert b"one mail through a front end process" in delivered[0]
    finally:
        stack.stop()
