"""PostgreSQL's advisory locks that keep pbem's transactions apart: the one writer's, a
game's writer, a sender's, a lane's claim, and their keys (the migration's among them).

On SQLite there is one writer anyway (pbem.store.engines): one_writer takes nothing there,
and the others are only called where lanes_apart says the workers run side by side.
"""

from __future__ import annotations

import zlib
from typing import Any

from sqlalchemy import Engine, Integer, cast, func, select, text, true
from sqlmodel import Session

# pg_advisory_lock keys: any bigint, the same in every pbem process on the database
WRITER_LOCK_KEY = 52550      # one transaction that changes games at a time (one_writer)
MIGRATION_LOCK_KEY = 52551
# pg_advisory_xact_lock(space, key) pairs: a game's writer, a sender's, a lane's claim
GAME_LOCK_SPACE = 52552
SENDER_LOCK_SPACE = 52553
LANE_CLAIM_SPACE = 52554


_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


def one_writer(session: Session) -> None:
    """Begin a transaction that changes games alone: take the writer's lock first, so
    that what it reads next is current and no other such transaction interleaves.

    PostgreSQL (read committed) lets two transactions read the same game and both
    write: an advisory lock, held until the transaction ends. On SQLite the transaction
    began with BEGIN IMMEDIATE (pbem.store.engines.make_engine): it holds the write lock already, and here
    it is only begun if it was not yet.
    """
    conn = session.connection()   # Core: the ORM adds nothing to a plain statement
    if conn.dialect.name == "postgresql":
        conn.execute(_ADVISORY_LOCK, {"key": WRITER_LOCK_KEY})


def lanes_apart(engine: Engine) -> bool:
    """Do workers handle the mail of different games side by side (PostgreSQL: one game's
    writer at a time, game_writer), or all of it one transaction at a time (SQLite has one
    writer: one_writer, under the referee lease)?"""
    return engine.dialect.name == "postgresql"


_SHARED_WRITER_LOCK = text("SELECT pg_advisory_xact_lock_shared(:key)")
_PAIR_LOCK = text("SELECT pg_advisory_xact_lock(CAST(:space AS integer), "
                  "CAST(:key AS integer))")
_TRY_PAIR_LOCK = text("SELECT pg_try_advisory_xact_lock(CAST(:space AS integer), "
                      "CAST(:key AS integer))")
# game_writer's two locks in one round trip: a select list is evaluated left to right,
# so the writer's shared lock is still taken first
_GAME_WRITER_LOCKS = text("SELECT pg_advisory_xact_lock_shared(:writer), "
                          "pg_advisory_xact_lock(CAST(:space AS integer), "
                          "CAST(:key AS integer))")


def lock_key(text_: str) -> int:
    """A text (an address) as the int4 key of an advisory lock: the same in every process."""
    value = zlib.crc32(text_.encode(errors="replace"))
    return value - (1 << 32) if value >= (1 << 31) else value


def game_writer(session: Session, game_id: int, *, wait: bool = True) -> bool:
    """Begin a transaction that changes one game beside other games' transactions
    (PostgreSQL, lanes_apart): the writer's lock shared (one_writer, which changes what
    no one game owns, waits for it), then the game's alone. Without ``wait`` the game's
    lock is only tried: False if another transaction holds it (nothing taken then that
    outlives the caller's rollback)."""
    conn = session.connection()
    if wait:
        conn.execute(_GAME_WRITER_LOCKS, {"writer": WRITER_LOCK_KEY, "space": GAME_LOCK_SPACE,
                                          "key": game_id})
        return True
    conn.execute(_SHARED_WRITER_LOCK, {"key": WRITER_LOCK_KEY})
    return bool(conn.execute(_TRY_PAIR_LOCK, {"space": GAME_LOCK_SPACE,
                                              "key": game_id}).scalar())


def sender_writer(session: Session, address: str) -> None:
    """In a game_writer transaction, the sender's lock too (taken after the game's: one
    order everywhere, no deadlock): two mails of one address to two games do not write
    its rate limits, bounces and seats at once."""
    session.connection().execute(_PAIR_LOCK, {"space": SENDER_LOCK_SPACE,
                                              "key": lock_key(address.lower())})


# the senders' locks of a group of mails (senders_writer) in one statement: the keys in
# ascending order (unnest keeps the array's order), so two groups never wait in a circle
_SENDER_LOCKS = text("SELECT pg_advisory_xact_lock(CAST(:space AS integer), key) "
                     "FROM unnest(CAST(:keys AS integer[])) AS key")


def senders_writer(session: Session, addresses: list[str]) -> None:
    """In a game_writer transaction that handles several mails of the game (a group), the
    locks of all their senders, taken at its start in one round trip and always in the
    same order (ascending keys): a transaction that waits for a sender's lock holds
    only smaller ones and its game's, so no two wait for each other in a circle, and it
    never waits for one once it has written rows (each mail alone: sender_writer)."""
    keys = sorted({lock_key(address.lower()) for address in addresses})
    if keys:
        session.connection().execute(_SENDER_LOCKS, {"space": SENDER_LOCK_SPACE,
                                                     "keys": keys})


def lane_claim(session: Session, lane: int, *, wait: bool = False) -> bool:
    """One claim of a lane's mail at a time (pbem.runner.lanes.claim_lane), one giving of lanes
    (pbem.runner.lanes.give_lanes): without ``wait`` only tried, False if another process is at
    it right now; with it, waited for (True)."""
    conn = session.connection()
    if wait:
        conn.execute(_PAIR_LOCK, {"space": LANE_CLAIM_SPACE, "key": lane})
        return True
    return bool(conn.execute(_TRY_PAIR_LOCK, {"space": LANE_CLAIM_SPACE,
                                              "key": lane}).scalar())


def lane_claim_reading(session: Session, lane: int, rows: Any) -> list[Any] | None:
    """lane_claim tried, and when it is ours the ``rows`` (a SELECT, in the order of its
    first column) read, in one round trip: None if another process is at the lane right
    now. The lock is tried first (a
    one-row subquery), the rows read after it (a LATERAL subquery that reads none
    without it); the statement's snapshot may be a moment older than the lock, so a
    claim committed by the lock's last holder in that moment can look free here: the
    caller's claim (a compare-and-swap) then finds it taken."""
    tried = select(func.pg_try_advisory_xact_lock(
        cast(LANE_CLAIM_SPACE, Integer), cast(lane, Integer)).label("got")).subquery("tried")
    found = rows.where(tried.c.got).lateral("found")
    read = session.connection().execute(
        select(tried.c.got, *found.c).select_from(tried.outerjoin(found, true()))
        .order_by(found.c[0])).all()
    if not read[0][0]:
        return None
    return [row[1:] for row in read if row[1] is not None]
