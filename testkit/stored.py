"""The stored and queued mail with its bytes, for tests and benches that look at it.

A mail's bytes are a row of their own (inbound_raw, outbound_body: pbem.store.bodies); a
test that reads the mail as it was stored or queued reads both: each row's columns as
attributes, and ``raw``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import Engine, text
from sqlmodel import Session, col, select

from pbem.store.models import InboundMail, InboundRaw, OutboundBody, OutboundMail


def _read(bind: Engine | Session, statement: Any) -> list[Any]:
    if isinstance(bind, Session):
        return [SimpleNamespace(**row._asdict()) for row in bind.execute(statement)]
    with Session(bind) as session:
        return _read(session, statement)


def outbound_rows(bind: Engine | Session, *where: Any) -> list[Any]:
    """The queued mails matching ``where``, oldest first: outbound_mail's columns and raw."""
    table = OutboundMail.__table__  # type: ignore[attr-defined]
    return _read(bind, select(*table.columns, col(OutboundBody.raw)).where(
        col(OutboundBody.mail_id) == col(OutboundMail.id), *where).order_by(col(OutboundMail.id)))


def inbound_rows(bind: Engine | Session, *where: Any) -> list[Any]:
    """The stored mails matching ``where``, oldest first: inbound_mail's columns and raw."""
    table = InboundMail.__table__  # type: ignore[attr-defined]
    return _read(bind, select(*table.columns, col(InboundRaw.raw)).where(
        col(InboundRaw.mail_id) == col(InboundMail.id), *where).order_by(col(InboundMail.id)))


def count_drafts_written(engine: Engine) -> None:
    """From now on, each draft written to the database is counted (a trigger of the
    database file, so that a draft deleted in the transaction that wrote it counts too:
    drafts_written)."""
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE drafts_written (mail_id INTEGER)"))
        conn.execute(text("CREATE TRIGGER count_drafts AFTER INSERT ON outbound_mail "
                          "WHEN NEW.kind = 'draft' BEGIN "
                          "INSERT INTO drafts_written VALUES (NEW.id); END"))


def drafts_written(engine: Engine) -> int:
    """How many drafts were written since count_drafts_written."""
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM drafts_written")).scalar_one())
