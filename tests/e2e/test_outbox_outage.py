"""The database gone while a mail is handed off (PostgreSQL stopped between the SMTP
hand-off and its "sent" mark): the claim the worker could neither mark nor give back
is given back by its next send once the database is back, so the mail goes out again
then (at least once, with the same Message-ID), not once its lease has run out
(claim_lease_seconds: five minutes) while the worker that holds it lives on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from pbem.mail.smtp_out import SendResult
from pbem.store.models import OutboundMail
from testkit.pgstack import PgCluster
from testkit.workers import received
from tests.e2e.test_outages import help_mail, make_server
from tests.runner.test_referee import Clock

pytestmark = [pytest.mark.mailstack, pytest.mark.postgresql]


def test_a_claim_the_database_did_not_take_back_is_given_back_once_it_is_back(
        mailstack: Any, pgcluster: PgCluster, tmp_path: Path) -> None:
    server = make_server(mailstack, tmp_path, Clock(), pgcluster.new_database(),
                         smtp_port=mailstack.smtp_port, imap=False)
    server.referee.store_inbound(help_mail(mailstack, "p1"), source="smtp")
    assert server.referee.process_pending() == 1
    real_open = server.senders.open

    class CutAfterHandOff:   # the real SMTP sender; the database stops once it handed off
        def __init__(self, sender: Any) -> None:
            self.sender = sender

        def send(self, *args: Any) -> SendResult:
            result = self.sender.send(*args)
            pgcluster.stop_server()
            return result

    @contextmanager
    def cutting() -> Iterator[Any]:
        with real_open() as sender:
            yield CutAfterHandOff(sender)
    server.senders.open = cutting   # type: ignore[method-assign,assignment]
    try:
        with pytest.raises(OperationalError):
            server.send()
    finally:
        server.senders.open = real_open   # type: ignore[method-assign]
        pgcluster.start_server()
    assert server.send().sent == 1   # given back, then sent again at once
    with Session(server.engine) as session:
        (mail,) = session.exec(select(OutboundMail)).all()
        assert mail.status == "sent" and mail.claimed_by is None
    assert received(mailstack, "p1")[mail.message_id] == 2   # at least once: here twice
    server.close()
    server.engine.dispose()
