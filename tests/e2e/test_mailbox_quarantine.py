"""Issue 32, item 2: nothing stays in the INBOX forever.

A fetched mail that cannot be stored (a failure point on purpose, pbem.store.faults: what the
8-bit Message-ID of the storm did before the one decoding rule) stays in the INBOX for
one more try; at the second it is moved to the IMAP quarantine folder, logged once with
why, and the referee hears of it (at most one notice an hour, as of failed mail).
RETRY QUARANTINE (a referee command: a referee mail or `pbem admin`) brings it back and
the next tick stores and handles it. Over the real mail stack (Dovecot, SMTP).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from pbem.demo.robot_client import parse_mail
from pbem.runner.server import Server
from pbem.store import faults
from pbem.store.models import InboundMail
from testkit.desk import Clock
from testkit.e2e import text_of
from testkit.stack import stack_settings
from tests.services.test_quarantine import mail

pytestmark = pytest.mark.mailstack

KEY = "mailbox-quarantine-key"


def statuses(server: Server) -> list[str]:
    with Session(server.engine) as session:
        return [r.status for r in session.exec(select(InboundMail).order_by(col(InboundMail.id)))]


def test_a_mail_that_cannot_be_stored_is_set_aside_and_brought_back(
        mailstack: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    for user in ["bluff", "referee", "observer"]:
        mailstack.clear(user)
    clock = Clock()
    server = Server(stack_settings(mailstack, f"sqlite:///{tmp_path / 'pbem.db'}", KEY),
                    clock=clock)

    def notices() -> list[str]:
        return [str(parse_mail(r)["Subject"]) + " | " + " ".join(text_of(parse_mail(r)).split())
                for r in mailstack.fetch_all("referee")]

    mailstack.append("bluff", *(mail(mailstack, "observer", f"HELP {i}") for i in range(3)))
    faults.arm_failures("inbound-store")
    try:
        with caplog.at_level(logging.INFO):
            server.tick()
            assert len(mailstack.fetch_all("bluff")) == 3          # one more try for each
            assert mailstack.fetch_all("bluff", "pbem-quarantine") == []
            assert notices() == []
            server.tick()
    finally:
        faults.arm_failures(None)
    assert mailstack.fetch_all("bluff") == []                      # nothing stays
    assert len(mailstack.fetch_all("bluff", "pbem-quarantine")) == 3
    assert statuses(server) == []
    aside = [r for r in caplog.records if "set aside in pbem-quarantine" in r.getMessage()]
    assert len(aside) == 3 and all("InjectedFailure" in r.exc_text for r in aside if r.exc_text)
    tries = [r for r in caplog.records if "for another try" in r.getMessage()]
    assert len(tries) == 3 and all("InjectedFailure" in r.getMessage() for r in tries)
    (first,) = notices()                                           # the first at once
    assert first.startswith("A mail could not be handled") and "pbem-quarantine" in first
    assert "RETRY QUARANTINE" in first
    server.tick()                                                  # nothing more for an hour
    assert len(notices()) == 1
    clock.advance(minutes=61)
    server.tick()                                                  # the other two, together
    assert notices()[-1].startswith("2 mails could not be handled")

    # the referee brings them back; the next tick stores and handles them
    assert "back to the mailbox" in server.referee.admin(["RETRY", "QUARANTINE"])[0]
    server.tick()
    assert mailstack.fetch_all("bluff", "pbem-quarantine") == []
    assert statuses(server) == ["done"] * 3
    assert len(mailstack.fetch_all("observer")) == 1   # HELP answered once (a stranger)
    server.tick()
    assert statuses(server) == ["done"] * 3
