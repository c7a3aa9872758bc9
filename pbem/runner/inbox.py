"""The inbox: stored mail (pbem.runner.storing) claimed for handling, held, and finished.

A process that handles stored mail first
claims it, a page of mails at a time (``claim_page``: pbem.store.claims.claim, a lease in
each row, one commit for the page), then begins the handling transaction of each
with ``hold_claim``: a write that re-checks the claim, so two processes never
handle the same mail. On PostgreSQL a game's mail is claimed by its lane
(pbem.runner.lanes).

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

from datetime import datetime, timedelta
from email.utils import parseaddr

from sqlalchemy import Engine, and_, bindparam, case, func, update
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from pbem.mail.headers import read_mail_header
from pbem.store.advisory_locks import game_writer, one_writer
from pbem.store.bodies import HeldMail
from pbem.store.claims import claim_many, claim_stale, me
from pbem.store.driver import Hot
from pbem.store.engines import reading
from pbem.store.models import InboundMail, InboundRaw

# read at every claim: a Core statement built once, on a connection of the reading engine
# (no ORM session, no writer's turn)
_NEWEST = select(func.max(col(InboundMail.id)))


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


def sender_of(row: HeldMail) -> str | None:
    """The address a stored mail comes from, as its header (or envelope) says, lower case:
    the key of its sender's lock (pbem.store.advisory_locks.sender_writer), not a proven sender."""
    found = parseaddr(read_mail_header(row.raw).text("From") or "")[1] or row.envelope_from
    return found.lower() if found else None
