"""A turn's reports as a draft: what they are made of, committed by the transaction that
played the turn, and made into mails later (pbem.runner.composer: by a process of its own,
on the other core, while the next orders are handled).

A draft is a row of outbound_mail (kind and status "draft", never sent), its bytes what
the turn's reports are made of as data (pbem.services.draft_data: JSON with a format
version, the state as the game's moves), so that a draft a crash left is made by the next
version of pbem too; one it cannot read is made again from the stored game if the game
still stands at the draft's turn, else marked failed (pbem.services.reports.draft_reports).
Making a draft into mails
(``make``) only reads; queueing them (``queue_made``) deletes the draft and queues its
mails in one transaction, so a crash or a kill anywhere leaves either the draft (made
again later) or its mails (the outbox sends them), never both and never neither, and
a draft made twice is queued once. A draft that cannot be made into mails (a bug, a
template that fails) is marked failed with its error and the referee is told; it is not
tried again by itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

from sqlalchemy import Engine, bindparam, delete, select, update
from sqlmodel import Session, col

from pbem.mail.compose import make_message_id
from pbem.outbox import Composed, Origin, queue_all
from pbem.outbox.queue import insert_mail
from pbem.store.engines import reading
from pbem.store.faults import crash_point
from pbem.store.models import OutboundBody, OutboundMail
from pbem.store.work import Work

log = logging.getLogger(__name__)

DRAFT = "draft"   # a draft's kind and status

__all__ = ["DRAFT", "DraftTally", "Drafted", "Made", "Waiting", "failed_drafts", "make",
           "made_of", "make_waiting", "not_made", "queue_draft", "queue_made", "remake_failed",
           "waiting_drafts"]


class TurnDraft(Protocol):
    """What queue_draft needs to know of a turn's reports (a TurnReports)."""

    @property
    def now(self) -> datetime: ...
    @property
    def inbound_id(self) -> int | None: ...
    @property
    def game(self) -> Any: ...


def queue_draft(session: Work, origin: Origin, turn: TurnDraft, raw: bytes) -> int:
    """Queue a turn's reports as a draft (``raw``: pbem.services.draft_data's bytes of
    ``turn``) in the session's transaction; its id."""
    now = turn.now
    values = {"message_id": make_message_id(origin.domain, DRAFT), "kind": DRAFT,
              "mail_from": origin.address, "rcpts_json": "[]", "raw": raw,
              "game_id": turn.game.id, "seat": None, "turn": turn.game.turn,
              "inbound_id": turn.inbound_id, "status": DRAFT, "attempts": 0,
              "next_attempt_at": now, "created_at": now, "bounce_token": None}
    session.flush()
    draft_id = insert_mail(session, values)
    session.drafts.append(draft_id)   # the tick's composer starts (Composing.claim)
    return draft_id


# a draft's row as Waiting reads it: its bytes and what its row says of them
_DRAFT_ROWS = (select(col(OutboundMail.id), col(OutboundBody.raw), col(OutboundMail.game_id),
                      col(OutboundMail.turn), col(OutboundMail.inbound_id),
                      col(OutboundMail.created_at))
               .join(OutboundBody, col(OutboundBody.mail_id) == col(OutboundMail.id)))
_WAITING = (_DRAFT_ROWS
            .where(col(OutboundMail.status) == DRAFT, col(OutboundMail.kind) == DRAFT,
                   col(OutboundMail.id) > bindparam("after"))
            .order_by(col(OutboundMail.id)).limit(bindparam("limit")))
_FAILED = (_DRAFT_ROWS
           .where(col(OutboundMail.status) == "failed", col(OutboundMail.kind) == DRAFT,
                  col(OutboundMail.game_id) == bindparam("game"))
           .order_by(col(OutboundMail.id)))
_FAILED_AT = (select(col(OutboundMail.id))
              .where(col(OutboundMail.status) == "failed", col(OutboundMail.kind) == DRAFT,
                     col(OutboundMail.game_id) == bindparam("game"),
                     col(OutboundMail.turn) == bindparam("turn")))
_UNFAIL = (update(OutboundMail)
           .where(col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
                  col(OutboundMail.status) == "failed")
           .values(status=DRAFT, last_error=None))
_TAKE = (delete(OutboundMail)
         .where(col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
                col(OutboundMail.status) == DRAFT)
         .returning(col(OutboundMail.id)))
_FAIL = (update(OutboundMail)
         .where(col(OutboundMail.id) == bindparam("draft"), col(OutboundMail.status) == DRAFT)
         .values(status="failed", last_error=bindparam("error")))


class Waiting(NamedTuple):
    """A draft waiting to be made: its bytes, and what its row says of them (the game and
    the turn it reports, the mail that played it, when: the reports' time)."""

    id: int
    raw: bytes
    game_id: int | None
    turn: int | None
    inbound_id: int | None
    created_at: datetime


def _waiting(rows: Any) -> list[Waiting]:
    return [Waiting(int(draft_id or 0), bytes(raw), game_id, turn, inbound_id,
                    at if at.tzinfo is not None else at.replace(tzinfo=UTC))
            for draft_id, raw, game_id, turn, inbound_id, at in rows]


def waiting_drafts(session: Session, limit: int, after: int = 0) -> list[Waiting]:
    """The oldest drafts after id ``after``, at most ``limit``."""
    return _waiting(session.connection().execute(_WAITING, {"limit": limit, "after": after}))


Mails = list[Composed]


class Drafted(NamedTuple):
    """A draft's mails, and why they were made again from the stored game (None: made of
    the draft itself; else its turn's notes are not in them)."""

    mails: Mails
    remade: str | None = None


Compose = Callable[[Session, Waiting], Drafted]


@dataclass(frozen=True)
class Made:
    """A draft made into mails (``mails``), or not (``error``: why); ``remade``: why they
    were made from the stored game (pbem.services.reports.draft_reports), the turn's notes
    lost; the game and the turn the draft reports, for the referee."""

    draft_id: int
    mails: Mails | None
    error: str | None = None
    remade: str | None = None
    game_id: int | None = None
    turn: int | None = None


def make(session: Session, compose: Compose, draft: Waiting) -> Made:
    """A draft's mails (``compose``: pbem.services.reports.composing), built and not
    queued; ``session`` is only read. A draft that fails is told, not raised."""
    try:
        drafted = compose(session, draft)
    except Exception as exc:   # noqa: BLE001 - the draft's outcome, told to the referee
        return not_made(draft, exc)
    return made_of(draft, drafted)


def made_of(draft: Waiting, drafted: Drafted) -> Made:
    """A draft made into its mails."""
    return Made(draft.id, drafted.mails, remade=drafted.remade, game_id=draft.game_id,
                turn=draft.turn)


def not_made(draft: Waiting, exc: Exception) -> Made:
    """A draft whose mails could not be made: why, logged and kept for the referee."""
    log.error("the reports of draft %s could not be composed", draft.id, exc_info=exc)
    return Made(draft.id, None, f"{type(exc).__name__}: {exc}"[:500],
                game_id=draft.game_id, turn=draft.turn)


@dataclass
class DraftTally:
    """What queueing composed drafts did."""

    drafts: int = 0       # drafts whose mails were queued
    mails: int = 0        # those mails
    failed: int = 0       # drafts that could not be made (marked failed)

    def add(self, other: DraftTally) -> None:
        self.drafts += other.drafts
        self.mails += other.mails
        self.failed += other.failed


# tells of a draft marked failed, or made again without its notes
# (pbem.services.failures.tell_made)
Failed = Callable[[Work, Made], object]


def queue_made(work: Work, made: list[Made], failed: Failed | None = None) -> DraftTally:
    """In ``work``'s transaction: the drafts of ``made`` deleted (those still there: a
    draft already queued is not queued twice) and their mails queued in their place; a
    draft that could not be made marked failed with its error (``failed`` tells the
    referee, as it does of one made again from the stored game, its notes lost)."""
    done = DraftTally()
    if not made:
        return done
    conn = work.connection()
    ready = [m.draft_id for m in made if m.mails is not None]
    # its bytes' row goes with it (ON DELETE CASCADE)
    taken = set(conn.execute(_TAKE, {"ids": ready}).scalars()) if ready else set()
    for m in made:
        if m.mails is not None and m.draft_id in taken:
            queue_all(work, m.mails)
            done.drafts += 1
            done.mails += len(m.mails)
            if m.remade is not None and failed is not None:
                failed(work, m)
        elif m.mails is None and conn.execute(_FAIL, {"draft": m.draft_id,
                                                      "error": m.error}).rowcount:
            done.failed += 1
            if failed is not None:
                failed(work, m)
    crash_point("drafts-queued")
    return done


def make_waiting(engine: Engine, compose: Compose, *, limit: int,
                 after: int = 0) -> list[Made]:
    """The oldest ``limit`` drafts after id ``after`` made into mails, in a transaction
    that only reads (no writer's lock: the composer's, beside the tick's handling)."""
    with Session(reading(engine)) as session:
        return [make(session, compose, draft)
                for draft in waiting_drafts(session, limit, after)]


def remake_failed(work: Work, compose: Compose, game_id: int,
                  failed: Failed | None = None) -> list[Made]:
    """The referee mended what failed (RETRY <game>): the game's drafts marked failed made
    into mails again and, if every one was, queued in ``work``'s transaction; what came
    of each (one that failed again: its error, and nothing changed)."""
    made = [make(work, compose, draft)
            for draft in _waiting(work.connection().execute(_FAILED, {"game": game_id}))]
    if made and all(m.mails is not None for m in made):
        work.connection().execute(_UNFAIL, {"ids": [m.draft_id for m in made]})
        queue_made(work, made, failed)
    return made


def failed_drafts(session: Session, game_id: int, turn: int) -> list[int]:
    """The game's drafts of ``turn`` marked failed (their reports not written: the turn
    waits for RETRY <game>, pbem.services.failures.turn_held)."""
    rows = session.connection().execute(_FAILED_AT, {"game": game_id, "turn": turn})
    return [int(draft_id or 0) for draft_id in rows.scalars()]
