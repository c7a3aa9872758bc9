"""Queueing a mail: composed and inserted in the caller's transaction, as one row of
outbound_mail and its bytes' row of outbound_body (pbem.store.bodies; pbem.outbox.draining
and pbem.outbox.stream send it)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import cast

from sqlalchemy import bindparam, insert
from sqlmodel import col, select

from pbem.mail.bounces import new_bounce_token
from pbem.mail.compose import build_mail, make_message_id
from pbem.mail.remote_content import without_remote_content
from pbem.store.driver import Hot
from pbem.store.faults import crash_point
from pbem.store.models import OutboundBody, OutboundMail
from pbem.store.work import Queued, Work
from pbem.text.usertext import shown

LOOP_HEADER = "X-Pbem-Loop"


@dataclass(frozen=True)
class Origin:
    """Identity of the server as a sender of mail."""

    address: str
    name: str = "Bluff referee"
    # its mails are sent with VERP return paths ([smtp] verp): each gets a bounce token;
    # without, none is drawn, and no index entry written (the index holds tokens alone)
    verp: bool = False

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"


_COLUMNS = ("message_id", "kind", "mail_from", "rcpts_json", "game_id", "seat", "turn",
            "inbound_id", "status", "attempts", "next_attempt_at", "created_at", "bounce_token")
_TABLE = OutboundMail.__table__  # type: ignore[attr-defined]
_MAIL = insert(OutboundMail).values(
    {name: bindparam(name, type_=_TABLE.c[name].type) for name in _COLUMNS})
_BYTES = bindparam("raw", type_=OutboundBody.__table__.c.raw.type)  # type: ignore[attr-defined]
# SQLite: the row, then its bytes' row under the id it was given (two statements, no
# round trip); PostgreSQL: both in one statement (the row's INSERT a CTE), one round trip
_INSERT = Hot(_MAIL.returning(col(OutboundMail.id)))
_INSERT_BODY = Hot(insert(OutboundBody).values(mail_id=bindparam("id"), raw=_BYTES))
_QUEUED = _MAIL.returning(col(OutboundMail.id)).cte("queued")
_INSERT_BOTH = Hot(insert(OutboundBody).from_select(
    ["mail_id", "raw"], select(_QUEUED.c.id, _BYTES)).returning(col(OutboundBody.mail_id)))


# SQLite: the rows of several mails (a turn's reports) in one INSERT, ``_BATCH`` at most,
# each row's parameters named "<column>_<n>"; their bytes then in one executemany
_BATCH = 8
_INSERT_ROWS = {n: Hot(insert(OutboundMail).values([
    {name: bindparam(f"{name}_{row}", type_=_TABLE.c[name].type) for name in _COLUMNS}
    for row in range(n)]).returning(col(OutboundMail.id), col(OutboundMail.message_id)))
    for n in range(2, _BATCH + 1)}


@dataclass(frozen=True)
class Composed:
    """A mail built and not queued yet (``compose``): its row's columns, its bytes."""

    values: dict[str, object]   # outbound_mail's columns (_COLUMNS) and "raw"

    @property
    def message_id(self) -> str:
        return str(self.values["message_id"])


def insert_mail(session: Work, values: Mapping[str, object]) -> int:
    """Insert a queued mail's row and its bytes' row (``values``: its columns and "raw");
    its id."""
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        return int(_INSERT_BOTH(conn, values).scalar_one())
    row_id = int(_INSERT(conn, {k: v for k, v in values.items() if k != "raw"}).scalar_one())
    _INSERT_BODY(conn, {"id": row_id, "raw": values["raw"]})
    return row_id


def insert_mails(session: Work, mails: Sequence[Composed]) -> list[int]:
    """Insert the rows and bytes of ``mails``, in their order (their ids ascend in it, as
    when inserted one by one); their ids. On SQLite a batch of them (_BATCH) is two
    statements, its rows in one INSERT and its bytes in one executemany, where one by one
    it is two a mail; on PostgreSQL each is one (insert_mail: a round trip each already)."""
    conn = session.connection()
    if len(mails) < 2 or conn.dialect.name == "postgresql":
        return [insert_mail(session, mail.values) for mail in mails]
    ids: list[int] = []
    for start in range(0, len(mails), _BATCH):
        batch = mails[start:start + _BATCH]
        if len(batch) == 1:
            ids.append(insert_mail(session, batch[0].values))
            continue
        params = {f"{name}_{row}": mail.values[name]
                  for row, mail in enumerate(batch) for name in _COLUMNS}
        # RETURNING's rows come in no promised order: matched by the unique Message-ID
        by_message = {row["message_id"]: row["id"]
                      for row in _INSERT_ROWS[len(batch)](conn, params).mappings()}
        batch_ids = [int(by_message[mail.message_id]) for mail in batch]
        _INSERT_BODY.many(conn, [{"id": row_id, "raw": mail.values["raw"]}
                                 for row_id, mail in zip(batch_ids, batch, strict=True)])
        ids += batch_ids
    return ids


def ordered_token(now: datetime) -> str:
    """The token of a new mail's Message-ID: the time it is queued (microseconds since the
    epoch, 14 hex digits) before 128 random bits. The Message-ID is outbound_mail's unique
    key: with the random bits first each mail's entry went to a leaf page of its own, written
    to the WAL with the mail's commit (2.8 frames an order, bench/wal_pages.py); in time
    order the entries of a tick's mails share the index's last pages. The random bits are
    as many as before, so a Message-ID is no easier to guess."""
    at = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    micros = max(0, (at - _EPOCH) // _MICROSECOND)   # whole numbers: a float loses them
    return f"{micros:014x}{secrets.token_hex(16)}"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def compose(origin: Origin, *, kind: str, to: str, subject: str,
            text: str, html: str | None, now: datetime,
            attachments: Sequence[tuple[str, str, bytes]] = (),
            in_reply_to: str | None = None, references: Sequence[str] = (),
            game_id: int | None = None, seat: int | None = None, turn: int | None = None,
            inbound_id: int | None = None, auto_submitted: str | None = None,
            shipped_html: bool = False) -> Composed:
    """Build one mail to queue (``enqueue`` says how), not queued yet: ``queue_all`` queues
    several at once."""
    message_id = make_message_id(origin.domain, kind, ordered_token(now))
    auto_submitted = auto_submitted or ("auto-replied" if in_reply_to else "auto-generated")
    if html is not None and not shipped_html:
        html = without_remote_content(html)
    raw = build_mail(from_addr=origin.address, from_name=origin.name, to_addrs=[to],
                     subject=shown(subject), text=text, html=html, attachments=attachments,
                     message_id=message_id, in_reply_to=in_reply_to, references=references,
                     auto_submitted=auto_submitted, loop_header=(LOOP_HEADER, origin.address),
                     date=now)
    return Composed({"message_id": message_id, "kind": kind, "mail_from": origin.address,
                     "rcpts_json": json.dumps([to]), "raw": raw, "game_id": game_id,
                     "seat": seat, "turn": turn, "inbound_id": inbound_id, "status": "pending",
                     "attempts": 0, "next_attempt_at": now, "created_at": now,
                     "bounce_token": new_bounce_token() if origin.verp else None})


def queue_all(session: Work, mails: Sequence[Composed]) -> list[Queued]:
    """Queue ``mails`` (composed) in the session's transaction, in their order (a unit of
    work with a hand-off keeps each in its ``queued``: a Stream claims it there)."""
    # Core, not an ORM object: a turn queues a mail a player, and an object in the session
    # costs its flush and the commit's bookkeeping (about a tenth of `pbem demo`'s ticks)
    session.flush()   # what is pending first (none: a no-op), in the order the code made it
    rows = []
    for row_id, mail in zip(insert_mails(session, mails), mails, strict=True):
        values = mail.values
        token = values["bounce_token"]
        row = Queued(row_id, mail.message_id, str(values["mail_from"]),
                     None if token is None else str(token), str(values["rcpts_json"]),
                     cast(bytes, values["raw"]))
        if session.keep_queued:
            session.queued.append(row)   # what its caller's Stream claims before the commit
        crash_point("outbox-enqueued")
        rows.append(row)
    return rows


def enqueue(session: Work, origin: Origin, *, kind: str, to: str, subject: str,
            text: str, html: str | None, now: datetime,
            attachments: Sequence[tuple[str, str, bytes]] = (),
            in_reply_to: str | None = None, references: Sequence[str] = (),
            game_id: int | None = None, seat: int | None = None, turn: int | None = None,
            inbound_id: int | None = None, auto_submitted: str | None = None,
            shipped_html: bool = False) -> Queued:
    """Queue one mail: a row inserted in the session's transaction (a unit of work with a
    hand-off keeps it in its ``queued``: a Stream claims it there). Auto-Submitted (RFC
    3834) is "auto-replied" for a mail that answers one (``in_reply_to``), else
    "auto-generated", unless ``auto_submitted`` says. The HTML loses any remote content
    (a referee's own templates may add some) unless ``shipped_html`` says it comes from
    the shipped templates, which have none. The subject loses bidi and control characters
    (pbem.text.usertext): a player's name or subject in it cannot turn the rest around."""
    return queue_all(session, [compose(
        origin, kind=kind, to=to, subject=subject, text=text, html=html, now=now,
        attachments=attachments, in_reply_to=in_reply_to, references=references,
        game_id=game_id, seat=seat, turn=turn, inbound_id=inbound_id,
        auto_submitted=auto_submitted, shipped_html=shipped_html)])[0]
