"""The inbox's door: a fetched or received mail's raw bytes kept before anything else
happens to it, once.

``store_inbound`` keeps one mail, ``store_many`` a fetched batch in one transaction; a mail
seen before, by Message-ID or IMAP key, is not stored twice, and of a mail over the size
limit only its header block is kept. What the fetcher notes beside its mail is here too
(server_state): the failed tries to store a fetched mail (``count_store_failure``) and the
referee's ask for the quarantined mail back (``release_asked``). The stored mail is claimed
and handled by pbem.runner.inbox.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, LargeBinary, bindparam, insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from pbem.commands.referee_cmds import RELEASE_ASKED
from pbem.mail.headers import MAIL_HEADER_BYTES, as_text, read_mail_header
from pbem.store.engines import reading
from pbem.store.faults import fail_point
from pbem.store.models import InboundMail, InboundRaw, ServerState
from pbem.store.wakeups import tell_stored

HEADER_CAP = MAIL_HEADER_BYTES   # of a mail too large to read, this much header is kept
STORE_TRIES = 2             # failed tries to store a fetched mail before it is set aside
_STORE_FAILURES = "store-failures"   # server_state: fetched mail (IMAP key) -> failed tries
_MAX_REMEMBERED = 1000      # of those, the newest kept


def dedupe_key(raw: bytes, message_id: str | None) -> str:
    if message_id and len(message_id) > 500:   # index entries are bounded (PostgreSQL)
        return "message-id-sha256:" + hashlib.sha256(message_id.encode(errors="replace")).hexdigest()
    return message_id or "sha256:" + hashlib.sha256(raw).hexdigest()


def header_block(raw: bytes) -> bytes:
    """The header block of a mail too large to read (at most HEADER_CAP bytes of it)."""
    ends = [i for i in (raw.find(b"\r\n\r\n", 0, HEADER_CAP), raw.find(b"\n\n", 0, HEADER_CAP))
            if i >= 0]
    head = raw[:min(ends)] if ends else raw[:HEADER_CAP]
    return head.rstrip(b"\r\n") + b"\r\n\r\n"


# the mails stored before, by either key (a Message-ID or a hash, an IMAP key): built once
_SEEN = select(col(InboundMail.dedupe_key), col(InboundMail.imap_key)).where(
    col(InboundMail.dedupe_key).in_(bindparam("keys", expanding=True))
    | col(InboundMail.imap_key).in_(bindparam("imap_keys", expanding=True)))


def store_inbound(engine: Engine, raw: bytes, *, now: datetime, max_bytes: int, source: str,
                  envelope_from: str | None = None, imap_key: str | None = None,
                  truncated: bool = False, size: int | None = None) -> bool:
    """Keep the raw mail before anything else happens to it; False if seen before.

    The size limit holds here, before anything parses the mail: of a mail larger
    than max_bytes only the header block is kept (and its sender is told).
    A database error propagates, so the caller keeps the mail: IMAP leaves it in
    the folder, the listener answers 451, and both try again later.
    """
    row = _new_row(raw, now=now, max_bytes=max_bytes, source=source,
                   envelope_from=envelope_from, imap_key=imap_key, truncated=truncated,
                   size=size)
    with Session(engine) as session:
        seen = session.connection().execute(_SEEN, {
            "keys": [row["dedupe_key"]], "imap_keys": [imap_key] if imap_key else []}).first()
        if seen is not None:
            return False
        try:
            _insert(session, [row])
            tell_stored(session)
            session.commit()
        except IntegrityError:   # a concurrent store of the same mail won the race
            session.rollback()
            return False
    return True


def store_many(engine: Engine, mails: list[tuple[bytes, str, bool, int]], *, now: datetime,
               max_bytes: int, source: str) -> int:
    """Keep a batch of fetched mails (raw, imap_key, truncated, size) in one transaction, as
    store_inbound does each (a mail seen before is skipped); returns how many were new.
    All or nothing: a mail that cannot be stored (a concurrent store won a race, the
    database failed) raises, nothing of the batch is kept, and the caller stores the
    mails one by one."""
    rows = [_new_row(raw, now=now, max_bytes=max_bytes, source=source, imap_key=imap_key,
                     truncated=truncated, size=size) for raw, imap_key, truncated, size in mails]
    keys = [r["dedupe_key"] for r in rows]
    imap_keys = [r["imap_key"] for r in rows if r["imap_key"]]
    with Session(engine) as session:
        seen = session.connection().execute(_SEEN, {"keys": keys, "imap_keys": imap_keys})
        known = {key for pair in seen for key in pair if key}
        fresh = []
        for row in rows:
            if row["dedupe_key"] in known or (row["imap_key"] and row["imap_key"] in known):
                continue
            known.update(k for k in (row["dedupe_key"], row["imap_key"]) if k)  # twice in a batch
            fresh.append(row)
        if fresh:
            _insert(session, fresh)
            tell_stored(session)
        session.commit()
    return len(fresh)


# rows inserted as Core: a batch is one statement run for each mail, no ORM object a mail;
# then each mail's bytes a row of inbound_raw, under the id its row was given (found by
# its dedupe key: one executemany, where RETURNING would cost SQLite a statement a row)
_INSERT = insert(InboundMail)
_INSERT_RAW = insert(InboundRaw).from_select(
    ["mail_id", "raw"], select(col(InboundMail.id), bindparam("raw", type_=LargeBinary))
    .where(col(InboundMail.dedupe_key) == bindparam("key")))


def _insert(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert the rows of ``rows`` (their columns and their "raw" bytes)."""
    conn = session.connection()
    conn.execute(_INSERT, [{k: v for k, v in row.items() if k != "raw"} for row in rows])
    conn.execute(_INSERT_RAW, [{"key": row["dedupe_key"], "raw": row["raw"]} for row in rows])


def _new_row(raw: bytes, *, now: datetime, max_bytes: int, source: str,
             envelope_from: str | None = None, imap_key: str | None = None,
             truncated: bool = False, size: int | None = None) -> dict[str, Any]:
    """The row that keeps a mail (its columns); the size limit holds here, before anything
    parses it."""
    fail_point("inbound-store")
    size = size if size is not None else len(raw)
    if len(raw) > max_bytes:
        raw, truncated = header_block(raw), True
    # the same bounded reading of the header as the referee's (pbem.mail.headers), its
    # raw bytes made text by the one rule (no surrogate reaches the database)
    message_id = " ".join((read_mail_header(raw).text("Message-ID") or "").split()) or None
    if envelope_from is not None:
        envelope_from = as_text(envelope_from)
    return {"dedupe_key": dedupe_key(raw, message_id), "imap_key": imap_key,
            "source": source, "envelope_from": envelope_from, "raw": raw, "size": size,
            "truncated": truncated, "received_at": now, "status": "new", "attempts": 0}


def count_store_failure(engine: Engine, imap_key: str) -> int:
    """One more failed try to store the fetched mail ``imap_key``; how many there were.
    Kept in the database, so the count outlives a tick and a restart; a mail that
    reaches STORE_TRIES is set aside by the caller and forgotten here."""
    with Session(engine) as session:
        row = session.get(ServerState, _STORE_FAILURES) or ServerState(key=_STORE_FAILURES,
                                                                       value="{}")
        tries: dict[str, int] = json.loads(row.value)
        count = tries.pop(imap_key, 0) + 1
        if count < STORE_TRIES:
            tries[imap_key] = count   # the newest last: the oldest are dropped first
        row.value = json.dumps(dict(list(tries.items())[-_MAX_REMEMBERED:]))
        session.add(row)
        session.commit()
    return count


# read at every fetch: a Core statement built once, on a connection of the reading engine
# (no ORM session, no writer's turn)
_ASKED = select(col(ServerState.value)).where(col(ServerState.key) == RELEASE_ASKED)


def release_asked(engine: Engine) -> bool:
    """Has the referee asked for the mails set aside in the IMAP quarantine folder back
    (RETRY QUARANTINE) since they were last moved back?"""
    with reading(engine).connect() as conn:
        return bool(conn.execute(_ASKED).scalar_one_or_none())


def release_done(engine: Engine) -> None:
    """The mails set aside were moved back: the referee's ask is done."""
    with Session(engine) as session:
        row = session.get(ServerState, RELEASE_ASKED)
        if row is not None:
            row.value = ""
            session.add(row)
            session.commit()
