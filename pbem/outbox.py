"""The outbox: mail is queued in the same transaction as the change that
caused it, and a sender drains the queue, retrying with back-off.

Each row is marked sent right after its SMTP hand-off, one commit a row, so
a crash in the middle of a drain can repeat at most the one mail in flight,
and that mail carries the same Message-ID both times.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from pbem.mail.compose import build_mail, make_message_id
from pbem.mail.smtp_out import SendResult
from pbem.models import OutboundMail

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 12
LOOP_HEADER = "X-Pbem-Loop"


class Sender(Protocol):
    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult: ...


@dataclass(frozen=True)
class Origin:
    """Identity of the server as a sender of mail."""

    address: str
    name: str = "Bluff referee"

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"


def enqueue(session: Session, origin: Origin, *, kind: str, to: str, subject: str,
            text: str, html: str | None, now: datetime,
            attachments: Sequence[tuple[str, str, bytes]] = (),
            in_reply_to: str | None = None, references: Sequence[str] = (),
            game_id: int | None = None, seat: int | None = None, turn: int | None = None,
            inbound_id: int | None = None, auto_submitted: str = "auto-generated") -> OutboundMail:
    message_id = make_message_id(origin.domain, kind)
    raw = build_mail(from_addr=origin.address, from_name=origin.name, to_addrs=[to],
                     subject=subject, text=text, html=html, attachments=attachments,
                     message_id=message_id, in_reply_to=in_reply_to, references=references,
                     auto_submitted=auto_submitted, loop_header=(LOOP_HEADER, origin.address),
                     date=now)
    row = OutboundMail(message_id=message_id, kind=kind, mail_from=origin.address,
                       rcpts_json=json.dumps([to]), raw=raw, game_id=game_id, seat=seat,
                       turn=turn, inbound_id=inbound_id, next_attempt_at=now, created_at=now)
    session.add(row)
    return row


def backoff(attempts: int) -> timedelta:
    """1, 2, 4 ... minutes, at most an hour between tries."""
    return timedelta(minutes=min(60, 2 ** max(0, attempts - 1)))


@dataclass
class DrainReport:
    sent: int = 0
    deferred: int = 0
    failed: int = 0


def drain(engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
          now: Callable[[], datetime], *,
          on_failure: Callable[[Session, OutboundMail, str], None] | None = None,
          limit: int | None = None) -> DrainReport:
    """Send every pending mail that is due; return what happened."""
    report = DrainReport()
    with Session(engine) as session:
        ids = list(session.exec(
            select(OutboundMail.id).where(OutboundMail.status == "pending",
                                          col(OutboundMail.next_attempt_at) <= now())
            .order_by(col(OutboundMail.id)).limit(limit)))
    if not ids:
        return report
    with open_sender() as sender:
        for row_id in ids:
            with Session(engine) as session:
                row = session.get(OutboundMail, row_id)
                if row is None or row.status != "pending":
                    continue   # another process sent it meanwhile
                result = sender.send(row.mail_from, json.loads(row.rcpts_json), row.raw)
                _record(session, row, result, now(), report, on_failure)
                session.commit()
    return report


def _record(session: Session, row: OutboundMail, result: SendResult, when: datetime,
            report: DrainReport, on_failure: Callable[[Session, OutboundMail, str], Any] | None) -> None:
    row.attempts += 1
    if result.permanent and not result.temporary:
        row.status = "failed"
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.permanent.items())
        report.failed += 1
        log.warning("mail %s refused for good: %s", row.message_id, row.last_error)
        if on_failure is not None:
            on_failure(session, row, row.last_error)
    elif result.temporary:
        row.last_error = "; ".join(f"{r}: {e}" for r, e in result.temporary.items())
        if row.attempts >= MAX_ATTEMPTS:
            row.status = "failed"
            report.failed += 1
            if on_failure is not None:
                on_failure(session, row, f"gave up after {row.attempts} tries: {row.last_error}")
        else:
            row.next_attempt_at = when + backoff(row.attempts)
            report.deferred += 1
            log.info("mail %s deferred: %s", row.message_id, row.last_error)
    else:
        row.status = "sent"
        row.sent_at = when
        report.sent += 1
    session.add(row)
