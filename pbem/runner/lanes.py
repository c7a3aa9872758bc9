"""The lanes of stored mail (PostgreSQL: pbem.store.advisory_locks.lanes_apart).

Each stored mail is given its lane once, before it is claimed (the game it speaks to,
NO_GAME for the rest: ``give_lanes``), and a worker claims a lane's new mail all together,
oldest first, only when no other live worker holds any of it (``claim_lane``): one game's
mail is handled by one worker at a time, in arrival order, while other workers handle
other games'. The mail claimed is then held and finished as any (pbem.runner.inbox).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, bindparam, func, update
from sqlmodel import Session, col, select

from pbem.runner.inbox import PAGE
from pbem.store.advisory_locks import lane_claim, lane_claim_reading
from pbem.store.claims import claim_many, claim_stale, me
from pbem.store.engines import reading
from pbem.store.models import InboundMail, InboundRaw
from pbem.store.work import Work

NO_GAME = 0          # the lane of mail that names no game (yet): sign-ups, LIST, strangers
LANE_GIVING = -1     # the try-lock key of giving lanes (not a game's id: those are > 0)
LANES_READ = 200     # lanes with new mail looked at in one read

_ITS_RAW = col(InboundRaw.mail_id) == col(InboundMail.id)   # a mail's bytes, joined


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
