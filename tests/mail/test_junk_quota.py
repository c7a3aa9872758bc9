"""The junk quota's total (pbem.mail.junk): the oldest handled junk is cut to its header
first, mail not yet handled is never touched, and a mail that does not fit is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import Session, col, select

from pbem.runner.junk import JUNK_SOURCE, JunkOverQuota, admit_junk, junk_bytes
from pbem.store.models import InboundMail
from testkit.desk import T0


def junk(server, n: int, size: int = 100_000) -> None:
    for i in range(n):
        raw = f"From: x{i}@evil.test\r\nMessage-ID: <j{i}@t>\r\n\r\n".encode() + b"j" * size
        server.referee.store_inbound(raw, source=JUNK_SOURCE)


def test_the_oldest_handled_junk_makes_room_first(server) -> None:
    junk(server, 5)
    with Session(server.engine) as session:   # the first three handled, the rest waiting
        ids = session.exec(select(InboundMail.id).order_by(col(InboundMail.id))).all()
        session.execute(update(InboundMail).where(col(InboundMail.id).in_(ids[:3]))
                        .values(status="done"))
        session.commit()
    now = T0 + timedelta(days=2)               # yesterday's quota is spent no more
    admit_junk(server.engine, 100_000, now, per_day=10**9, total=450_000)
    with Session(server.engine) as session:
        cut = session.exec(select(InboundMail.truncated).order_by(col(InboundMail.id))).all()
    assert cut == [True, True, False, False, False]
    assert junk_bytes(server.engine) <= 350_000
    with pytest.raises(JunkOverQuota):          # what waits is not cut: no room
        admit_junk(server.engine, 300_000, now, per_day=10**9, total=450_000)
