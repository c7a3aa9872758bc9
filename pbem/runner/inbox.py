"""The inbox: raw mail kept before anything else happens to it, once, and claimed for handling.

``store_inbound`` keeps a mail's bytes (a mail seen before, by Message-ID or
IMAP key, is not stored twice). A process that handles stored mail first
claims it, a page of mails at a time (``claim_page``: pbem.store.claims.claim, a lease in
each row, one commit for the page), then begins the handling transaction of each
with ``hold_claim``: a write that re-checks the claim, so two processes never
handle the same mail.

Each handling attempt is counted in the row, committed before the attempt
begins: the first mail's of a page in the page's claim commit, each next one's in
the commit that ends the mail before it (``count_attempt``), so a mail of the page
that was never begun (its process died before) has no attempt held against it. An attempt that ends (the mail
done or failed) leaves the mail new no more, so the attempts of a new mail that
were begun before this one were cut short: the process crashed or was killed
while handling it. Such a mail is handled again in a bounded child process
(pbem.runner.referee.suspect): a kill from outside is not the mail's fault, only a child
that dies while the server goes on is; after two of those the mail is set aside
(quarantined), so no mail can stop the server. An attempt that ends because the database is unavailable is given back (an
outage is not held against a mail).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parseaddr
from typing import Any

from sqlalchemy import Connection, Engine, LargeBinary, and_, bindparam, case, func, insert, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from pbem.commands.referee_cmds import RELEASE_ASKED
from pbem.mail.headers import MAIL_HEADER_BYTES, as_text, read_mail_header
from pbem.store.advisory_locks import game_writer, lane_claim, lane_claim_reading, one_writer
from pbem.store.bodies import HeldMail
from pbem.store.claims import claim_many, claim_stale, me
from pbem.store.driver import Hot
from pbem.store.engines import reading
from pbem.store.faults import fail_point
from pbem.store.models import InboundMail, InboundRaw, ServerState
from pbem.store.wakeups import tell_stored
from pbem.store.work import Work

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


# the reads every tick makes before its mail (a fetch, a claim): Core statements built once,
# on a connection of the reading engine (no ORM session, no writer's turn)
_ASKED = select(col(ServerState.value)).where(col(ServerState.key) == RELEASE_ASKED)
_NEWEST = select(func.max(col(InboundMail.id)))


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


PAGE = 50   # new mails claimed in one commit


def newest_id(engine: Engine) -> int:
    """The id of the newest stored mail (0: none)."""
    with reading(engine).connect() as conn:
        return int(conn.execute(_NEWEST).scalar_one() or 0)


# a page of new mail after :after, up to :upto, oldest first (the status index, then the ids)
_NEW_PAGE = (select(col(InboundMail.id), col(InboundMail.claimed_by),
                    col(InboundMail.claimed_at))
             .where(col(InboundMail.status) == "new", col(InboundMail.id) > bindparam("after"),
                    col(InboundMail.id) <= bindparam("upto"))
             .order_by(col(InboundMail.id)).limit(bindparam("size")))
_NO_BOUND = 2**31 - 1   # upto None: every stored mail (the largest id an INTEGER holds)


def claim_page(engine: Engine, now: datetime, lease: timedelta, *, after: int = 0,
               upto: int | None = None, size: int = PAGE) -> tuple[list[int], int]:
    """Claim up to ``size`` new mails with ids after ``after`` (up to ``upto``), oldest
    first, in one commit, and count the first one's attempt; returns (the mails claimed,
    the last id looked at: 0 when no new mail is left). A mail another live process
    holds is left to it."""
    with Session(engine) as session:
        found = [(int(row_id or 0), owner, at) for row_id, owner, at in session.connection()
                 .execute(_NEW_PAGE, {"after": after, "size": size,
                                      "upto": _NO_BOUND if upto is None else upto})]
        claimed = claim_many(session, InboundMail,
                             [(row_id, owner) for row_id, owner, at in found
                              if owner == me() or claim_stale(owner, at, now, lease)],
                             now, status="new")
        if claimed:   # the first attempt begins: counted in the claim's own commit
            count_attempt(session, claimed[0])
        session.commit()
    return claimed, (found[-1][0] if found else 0)


# The statements of every mail's handling, built once: run on the session's connection
# (Core), they cost a tenth of an ORM-enabled update each. Neither touches a row the
# session has loaded: the handled mail is read after hold_claim, the following one not.
_OURS_AND_NEW = (col(InboundMail.id) == bindparam("row"), col(InboundMail.status) == "new",
                 col(InboundMail.claimed_by) == bindparam("me"))
_COUNT_ATTEMPT = update(InboundMail).where(*_OURS_AND_NEW).values(
    attempts=col(InboundMail.attempts) + 1)
# a held mail is read with its bytes (inbound_raw, joined: the row written at a claim or a
# finish is the small one)
_COLUMNS = (*InboundMail.__table__.columns, InboundRaw.__table__.c.raw)  # type: ignore[attr-defined]
_ITS_RAW = col(InboundRaw.mail_id) == col(InboundMail.id)
_HOLD_CLAIM = update(InboundMail).where(*_OURS_AND_NEW, _ITS_RAW).values(
    claimed_at=bindparam("now")).returning(*_COLUMNS)  # typed as the column by values()


# SQLite: the transaction's BEGIN IMMEDIATE already holds the one write lock, so the
# claim is re-checked by a read (no write of its row)
_READ_CLAIMED = select(*_COLUMNS).where(*_OURS_AND_NEW, _ITS_RAW)


_THESE_OURS_AND_NEW = (col(InboundMail.id).in_(bindparam("rows", expanding=True)),
                       col(InboundMail.status) == "new",
                       col(InboundMail.claimed_by) == bindparam("me"))
_COUNT_ATTEMPTS = update(InboundMail).where(*_THESE_OURS_AND_NEW).values(
    attempts=col(InboundMail.attempts) + 1)
_HOLD_CLAIMS = update(InboundMail).where(*_THESE_OURS_AND_NEW, _ITS_RAW).values(
    claimed_at=bindparam("now")).returning(*_COLUMNS)  # typed as the column by values()


def count_attempt(session: Session, inbound_id: int) -> None:
    """Count a handling attempt of a mail this process holds, in the caller's transaction
    (which commits before the attempt begins)."""
    session.connection().execute(_COUNT_ATTEMPT, {"row": inbound_id, "me": me()})


def count_attempts(session: Session, inbound_ids: list[int]) -> None:
    """count_attempt for several mails (a group, handled in one transaction), in one
    statement."""
    if inbound_ids:
        session.connection().execute(_COUNT_ATTEMPTS, {"rows": inbound_ids, "me": me()})


def cut_short(row: HeldMail) -> int:
    """How many handling attempts of this claimed, new mail were begun before the present
    one and never ended (a crash or a kill while handling it)."""
    return max(0, row.attempts - 1)


def give_back_attempt(engine: Engine, inbound_id: int) -> bool:
    """The present attempt ended without handling the mail because the database failed:
    it is not counted. Best effort (the database may still be unavailable)."""
    try:
        with Session(engine) as session:
            done = session.execute(update(InboundMail).where(
                col(InboundMail.id) == inbound_id, col(InboundMail.status) == "new",
                col(InboundMail.claimed_by) == me(), col(InboundMail.attempts) > 0)
                .values(attempts=col(InboundMail.attempts) - 1))
            session.commit()
            return bool(done.rowcount == 1)  # type: ignore[attr-defined]
    except OperationalError:
        return False


def hold_claim(session: Session, inbound_id: int, now: datetime,
               lane: int | None = None) -> HeldMail | None:
    """Begin the handling transaction with a write: still ours, still new? The mail, read
    by that same write (RETURNING: no read of its own), or None; on SQLite, whose
    transaction began with the one write lock (BEGIN IMMEDIATE), by a read. A mail of a game's
    ``lane`` (PostgreSQL) takes that game's writer lock, beside other games'; others (no
    lane, NO_GAME) the one writer's lock, alone. The row is as read_held reads it."""
    if lane:
        game_writer(session, lane)
    else:
        one_writer(session)   # PostgreSQL: one referee transaction at a time, as on SQLite
    conn = session.connection()
    # PostgreSQL: the write takes the row's lock; SQLite's transaction holds the database's
    statement = _READ_CLAIMED if conn.dialect.name == "sqlite" else _HOLD_CLAIM
    found = conn.execute(statement, {"row": inbound_id, "me": me(),
                                     "now": now}).mappings().one_or_none()
    return HeldMail.read(found) if found is not None else None


def hold_claims(session: Session, inbound_ids: list[int], now: datetime,
                lane: int) -> list[HeldMail]:
    """hold_claim for a group of mails of one game's ``lane``, handled in one transaction:
    the game's writer lock, then one write that re-checks all their claims and reads
    them (RETURNING); the mails still ours and new, oldest first."""
    game_writer(session, lane)
    found = session.connection().execute(_HOLD_CLAIMS, {"rows": inbound_ids, "me": me(),
                                                         "now": now}).mappings().all()
    return sorted((HeldMail.read(row) for row in found), key=lambda row: row.id)


_READ_HELD = select(*_COLUMNS).where(col(InboundMail.id) == bindparam("row"), _ITS_RAW)
# how a mail's handling ended, and (in the same statement: one round trip, not two) the
# attempt of the mail that begins next counted, as count_attempt does (:next, 0: none)
_FINISH = Hot(update(InboundMail).where(
    col(InboundMail.id).in_([bindparam("row"), bindparam("next")])).values(
    status=case((col(InboundMail.id) == bindparam("row"), bindparam("status")),
                else_=col(InboundMail.status)),
    outcome=case((col(InboundMail.id) == bindparam("row"), bindparam("outcome")),
                 else_=col(InboundMail.outcome)),
    processed_at=case((col(InboundMail.id) == bindparam("row"), bindparam(
        "processed_at", type_=InboundMail.__table__.c.processed_at.type)),  # type: ignore[attr-defined]
                      else_=col(InboundMail.processed_at)),
    attempts=case((and_(col(InboundMail.id) == bindparam("next"),
                        col(InboundMail.status) == "new",
                        col(InboundMail.claimed_by) == bindparam("me")),
                   col(InboundMail.attempts) + 1), else_=col(InboundMail.attempts))))


def read_held(session: Session, inbound_id: int) -> HeldMail:
    """The mail whose claim ``hold_claim`` holds, read as Core into an object the session
    does not track (no ORM load, no flush of what changes, no bookkeeping at the commit):
    what its handling ends with is written by ``finish``."""
    found = session.connection().execute(_READ_HELD, {"row": inbound_id}).mappings().one()
    return HeldMail.read(found)


def finish(session: Session, row: HeldMail, following: int | None = None) -> None:
    """Write how the handling of ``row`` (read by ``read_held``) ended, and count the
    attempt of the ``following`` mail, as count_attempt would, in the same statement."""
    finish_all(session, [row], [following] if following else [])


def finish_all(session: Session, rows: list[HeldMail], following: list[int]) -> None:
    """finish for several mails handled in one transaction (a group), and the attempts of
    the ``following`` mails (the next group) counted: one statement run for each, sent
    together (psycopg pipelines an executemany: one round trip)."""
    params = []
    for n in range(max(len(rows), len(following))):
        row = rows[n] if n < len(rows) else None   # None: no mail ended here (row 0)
        params.append({"row": row.id if row else 0, "status": row.status if row else None,
                       "outcome": row.outcome if row else None,
                       "processed_at": row.processed_at if row else None,
                       "next": following[n] if n < len(following) else 0, "me": me()})
    if len(params) > 1:
        _FINISH.many(session.connection(), params)
    else:
        _FINISH(session.connection(), params[0])


# --------------------------------------------------------------------------- lanes
# PostgreSQL (pbem.store.advisory_locks.lanes_apart): each stored mail is given its lane once, before it is
# claimed (the game it speaks to, NO_GAME for the rest), and a worker claims a lane's new
# mail all together, oldest first, only when no other live worker holds any of it: one
# game's mail is handled by one worker at a time, in arrival order, while other workers
# handle other games'.

NO_GAME = 0          # the lane of mail that names no game (yet): sign-ups, LIST, strangers
LANE_GIVING = -1     # the try-lock key of giving lanes (not a game's id: those are > 0)
LANES_READ = 200     # lanes with new mail looked at in one read


def give_lanes(engine: Engine, upto: int,
               lanes_of: Callable[[Work, list[LaneRead]], list[int]],
               size: int = PAGE, *, wait: bool = False) -> int | None:
    """Give the oldest ``size`` new mails (up to id ``upto``) without a lane their lanes
    (``lanes_of``: the page's read together, in this transaction), in one commit; returns
    how many. One process gives lanes at a time, so a lane's mail gets it in arrival order and each mail is read
    once: None when another is at it, or with ``wait`` after it."""
    with Work(engine) as session:
        if not lane_claim(session, LANE_GIVING, wait=wait):
            return None
        rows = [LaneRead(*row) for row in session.execute(
            select(InboundMail.id, InboundRaw.raw, InboundMail.envelope_from,
                   InboundMail.truncated)
            .where(InboundMail.status == "new", col(InboundMail.lane).is_(None),
                   col(InboundMail.id) <= upto, _ITS_RAW)
            .order_by(col(InboundMail.id)).limit(size))]
        if rows:
            lanes = lanes_of(session, rows)
            session.connection().execute(_SET_LANE, [
                {"row": row.id, "lane": lane} for row, lane in zip(rows, lanes, strict=True)])
        session.commit()
    return len(rows)


@dataclass(frozen=True)
class LaneRead:
    """What a mail's lane is read from (pbem.runner.triage.lane_of)."""

    id: int
    raw: bytes
    envelope_from: str | None
    truncated: bool


_SET_LANE = update(InboundMail).where(col(InboundMail.id) == bindparam("row"),
                                      col(InboundMail.lane).is_(None)).values(
    lane=bindparam("lane"))


def waiting_lanes(engine: Engine, upto: int) -> list[int]:
    """The lanes with new mail (up to id ``upto``), the one whose oldest mail came first
    first; at most LANES_READ."""
    with Session(reading(engine)) as session:
        return list(session.execute(
            select(InboundMail.lane)
            .where(InboundMail.status == "new", col(InboundMail.lane).is_not(None),
                   col(InboundMail.id) <= upto)
            .group_by(col(InboundMail.lane)).order_by(func.min(InboundMail.id))
            .limit(LANES_READ)).scalars())


def claim_lane(bind: Engine | Connection, now: datetime, lease: timedelta, lane: int, *,
               upto: int, size: int = PAGE, begun: int = 1) -> tuple[list[int], str | None]:
    """Claim the oldest ``size`` new mails of ``lane`` (up to id ``upto``) in one commit,
    and count the attempts of the first ``begun`` (those handled first, together), as
    claim_page does the first one's; returns (the mails claimed, oldest first, and when
    none: who holds the lane, or None when it has no new mail left). A lane of which
    another live process holds a mail is left to it, whole; so is one another process
    is claiming at this moment ("a claim under way"). ``bind``: the engine, or a
    connection not in a transaction (the one a worker handles the lane on)."""
    with Session(bind) as session:
        found = lane_claim_reading(session, lane, (   # the lane's lock and mail: one trip
            select(InboundMail.id, InboundMail.claimed_by, InboundMail.claimed_at)
            .where(InboundMail.status == "new", InboundMail.lane == lane,
                   col(InboundMail.id) <= upto)
            .order_by(col(InboundMail.id)).limit(size)))
        if found is None:
            return [], "a claim under way"
        held = next((owner for _, owner, at in found
                     if owner != me() and not claim_stale(owner, at, now, lease)), None)
        if held is not None or not found:
            return [], held
        wanted = [(row_id, owner) for row_id, owner, _ in found]
        # the attempts of the first ``begun`` counted by the claim's own statement
        claimed = claim_many(session, InboundMail, wanted, now, status="new",
                             counted={row_id for row_id, _ in wanted[:max(1, begun)]})
        if claimed != [row_id for row_id, _ in wanted]:   # one taken meanwhile: not ours
            session.rollback()
            return [], "another process"
        session.commit()
    return claimed, None


def sender_of(row: HeldMail) -> str | None:
    """The address a stored mail comes from, as its header (or envelope) says, lower case:
    the key of its sender's lock (pbem.store.advisory_locks.sender_writer), not a proven sender."""
    found = parseaddr(read_mail_header(row.raw).text("From") or "")[1] or row.envelope_from
    return found.lower() if found else None
