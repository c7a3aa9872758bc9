"""[retention]: the mail itself is not kept for ever once it has done its work.

A handled mail's text is what a dispute over a game is settled with, so it is kept
while its game is on and ``inbound_days`` after the game ended (or was cancelled); then
it is cut to its header (From, Date, Message-ID, Subject stay) and marked ``pruned_at``;
the row stays, for de-duplication and the record. Mail that speaks to no game, or whose
sender plays in no game that is on, is cut ``inbound_days`` after it was handled. A
mail's game is the one its lane names (PostgreSQL), or the one of an answer or a
pending order made from it; its sender's games are those where the From address holds
a seat. Only mail handled without a failure (status done) is cut: a failed mail may be
RETRYed. The moves, the records (`pbem export`, `pbem verify`) and the audit are never
touched.

The .eml files of the outbox go ``outbox_days`` after they were written, on the same
terms: their mail's game ended that long ago, or they went to no game and to nobody who
plays in one that is on. A file whose mail the outbox table does not know is left alone.

``prune_when_due`` prunes once a day (the time kept in server_state, so all workers
share it): `pbem serve` asks in an hourly job of its own, beside the ticks (a first
pruning of years of mail may take minutes), a one-shot `pbem tick` (cron) after its
cycle.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parseaddr
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, bindparam, func, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from pbem.mail.headers import read_mail_header
from pbem.runner.junk import header_of
from pbem.store.models import (
    Game,
    InboundMail,
    InboundRaw,
    OutboundMail,
    PendingOrder,
    Player,
    ServerState,
)

__all__ = ["PRUNED_AT", "Pruned", "prune_inbound", "prune_outbox", "prune_when_due"]

PRUNED_AT = "retention-pruned-at"   # server_state: when the last pruning began
EVERY = timedelta(days=1)
_BATCH = 200
_HEAD_BYTES = 64 * 1024              # what is read of a mail to find its header


@dataclass
class Pruned:
    """What a pruning did: mails cut to their header, the bytes that freed, files deleted."""

    mails: int = 0
    freed: int = 0
    files: int = 0

    def __bool__(self) -> bool:
        return bool(self.mails or self.files)

    def __str__(self) -> str:
        return (f"{self.mails} mails cut to their header ({self.freed:,} bytes), "
                f"{self.files} .eml files deleted")


def _games_on(cutoff: datetime) -> Any:
    """The ids of the games still on at ``cutoff``: not ended, or ended after it."""
    return select(Game.id).where(or_(col(Game.ended_at).is_(None), col(Game.ended_at) > cutoff))


def _their_addresses(session: Session, cutoff: datetime) -> set[str]:
    return {email.lower() for email in session.exec(
        select(Player.email).where(col(Player.game_id).in_(_games_on(cutoff))))}


def _sender(head: bytes, envelope_from: str | None) -> str:
    found = parseaddr(read_mail_header(head).text("From") or "")[1] or envelope_from or ""
    return found.strip().lower()


_CUT = update(InboundMail).where(col(InboundMail.id) == bindparam("row")).values(
    truncated=True, pruned_at=bindparam("now"))
_CUT_RAW = update(InboundRaw).where(col(InboundRaw.mail_id) == bindparam("row")).values(
    raw=bindparam("header"))


def prune_inbound(engine: Engine, now: datetime, days: float) -> Pruned:
    """Cut the handled mails past their time to their header (see the module)."""
    cutoff = now - timedelta(days=days)
    pruned = Pruned()
    due = (col(InboundMail.status) == "done", col(InboundMail.pruned_at).is_(None),
           col(InboundMail.processed_at) < cutoff)
    with Session(engine) as session:
        games_on = set(session.exec(_games_on(cutoff)))
        addresses = _their_addresses(session, cutoff)
        # the mails due that a game still on answered or holds an order of (not every
        # mail ever answered: a big site's running games have answered millions)
        answered: set[int | None] = set()
        for table in (OutboundMail, PendingOrder):
            answered |= set(session.exec(
                select(table.inbound_id).join(InboundMail,
                                              col(InboundMail.id) == table.inbound_id)
                .where(col(table.game_id).in_(_games_on(cutoff)), *due)))
    after = 0
    while True:
        with Session(engine) as session:
            rows = session.execute(   # Core: five columns, the raw mail's head alone
                sa_select(col(InboundMail.id), col(InboundMail.lane),
                          col(InboundMail.envelope_from),
                       func.substr(InboundRaw.raw, 1, _HEAD_BYTES),
                       func.length(InboundRaw.raw))
                .where(*due, col(InboundMail.id) > after,
                       col(InboundRaw.mail_id) == col(InboundMail.id))
                .order_by(col(InboundMail.id)).limit(_BATCH)).all()
            if not rows:
                return pruned
            after = rows[-1][0]
            cut = []
            for row_id, lane, envelope_from, head, size in rows:
                if row_id in answered or lane in games_on or \
                        _sender(bytes(head), envelope_from) in addresses:
                    continue
                header = header_of(bytes(head))
                cut.append({"row": row_id, "header": header, "now": now})
                pruned.freed += max(int(size) - len(header), 0)
            if cut:   # one statement for the batch (executemany): a tenth of one a mail
                session.connection().execute(_CUT, cut)
                session.connection().execute(_CUT_RAW, cut)
                pruned.mails += len(cut)
            session.commit()


def _message_id(path: Path) -> str | None:
    try:
        with open(path, "rb") as file:
            head = file.read(_HEAD_BYTES)
    except OSError:   # gone meanwhile, or not ours to read
        return None
    return (read_mail_header(head).text("Message-ID") or "").strip() or None


def prune_outbox(engine: Engine, folder: Path, now: datetime, days: float) -> Pruned:
    """Delete the .eml files of the outbox past their time (see the module)."""
    pruned = Pruned()
    if not folder.is_dir():
        return pruned
    before = (now - timedelta(days=days)).timestamp()
    old: dict[str, list[Path]] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(".eml") and not entry.name.startswith(".") and \
                    entry.is_file() and entry.stat().st_mtime < before:
                found = _message_id(Path(entry.path))
                if found is not None:
                    old.setdefault(found, []).append(Path(entry.path))
    if not old:
        return pruned
    cutoff = now - timedelta(days=days)
    with Session(engine) as session:
        games_on = set(session.exec(_games_on(cutoff)))
        addresses = _their_addresses(session, cutoff)
        ids = sorted(old)
        for start in range(0, len(ids), 500):
            for message_id, game_id, rcpts_json in session.exec(
                    select(OutboundMail.message_id, OutboundMail.game_id, OutboundMail.rcpts_json)
                    .where(col(OutboundMail.message_id).in_(ids[start:start + 500]))):
                if game_id in games_on or \
                        {str(r).lower() for r in json.loads(rcpts_json)} & addresses:
                    continue
                for path in old[message_id]:
                    path.unlink(missing_ok=True)
                    pruned.files += 1
    return pruned


def prune_when_due(engine: Engine, now: datetime, *, inbound_days: float, outbox_days: float,
                   outbox: Path) -> Pruned | None:
    """Prune (days 0: that part never) when the last pruning began a day ago or more;
    None when it was not due. Of workers that ask at once one prunes: each takes the day's
    turn by writing the time it began only where it still reads as it did."""
    with Session(engine) as session:
        last = session.get(ServerState, PRUNED_AT)
        if last is not None and now - datetime.fromisoformat(last.value) < EVERY:
            return None
        try:
            if last is None:
                session.add(ServerState(key=PRUNED_AT, value=now.isoformat()))
                session.flush()
            elif session.execute(update(ServerState).where(
                    col(ServerState.key) == PRUNED_AT, col(ServerState.value) == last.value)
                    .values(value=now.isoformat())).rowcount != 1:   # type: ignore[attr-defined]
                return None
            session.commit()
        except IntegrityError:   # another worker wrote the first one just now
            return None
    pruned = prune_inbound(engine, now, inbound_days) if inbound_days > 0 else Pruned()
    if outbox_days > 0:
        pruned.files = prune_outbox(engine, outbox, now, outbox_days).files
    return pruned
