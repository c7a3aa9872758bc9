"""The referee hears of mail the server could not handle, without being flooded.

A mail that failed with an internal error, or that was set aside because its handling
was cut short twice (pbem.inbox), is noted here. The first one after a quiet hour is
told at once; the ones that follow within the hour wait and are told together, in one
notice with their count, when the hour is over (``flush``, at every tick). So a stream
of failing mail, forged or not, costs the referee at most one notice an hour, and each
mail is in exactly one notice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlmodel import Session

from pbem.models import ServerState
from pbem.services.post import Post, tell_referee

__all__ = ["NOTICE_EVERY", "flush", "note"]

NOTICE_EVERY = timedelta(hours=1)
MAX_LISTED = 20          # mails named in one notice (the count covers the rest)
STATE_KEY = "failure-notices"


@dataclass
class _Waiting:
    told_at: datetime | None = None
    count: int = 0
    listed: list[str] = field(default_factory=list)


def _load(session: Session) -> _Waiting:
    row = session.get(ServerState, STATE_KEY)
    if row is None:
        return _Waiting()
    data = json.loads(row.value)
    told = data.get("told_at")
    return _Waiting(datetime.fromisoformat(told) if told else None, int(data.get("count", 0)),
                    [str(x) for x in data.get("listed", [])])


def _save(session: Session, waiting: _Waiting) -> None:
    value = json.dumps({"told_at": waiting.told_at.isoformat() if waiting.told_at else None,
                        "count": waiting.count, "listed": waiting.listed})
    row = session.get(ServerState, STATE_KEY)
    if row is None:
        session.add(ServerState(key=STATE_KEY, value=value))
    else:
        row.value = value
        session.add(row)


def note(session: Session, post: Post, inbound_id: int, what: str) -> None:
    """Note that stored mail #inbound_id could not be handled (``what`` says how); the
    referee is told now or with the next summary."""
    waiting = _load(session)
    waiting.count += 1
    if len(waiting.listed) < MAX_LISTED:
        waiting.listed.append(f"Inbound mail #{inbound_id}: {what}.")
    _save(session, waiting)
    flush(session, post)


def flush(session: Session, post: Post) -> bool:
    """Tell the referee of the mails waiting to be told, if the last notice is an hour old;
    True if a notice was queued."""
    waiting = _load(session)
    now = post.clock()
    if waiting.count == 0 or (waiting.told_at is not None and
                              now - waiting.told_at < NOTICE_EVERY):
        return False
    subject = ("A mail could not be handled" if waiting.count == 1 else
               f"{waiting.count} mails could not be handled")
    more = waiting.count - len(waiting.listed)
    paragraphs = [*waiting.listed] + ([f"And {more} more."] if more > 0 else [])
    paragraphs.append("Each is kept as it came. `pbem admin RETRY <number>` handles one "
                      "again (after a fix). Of mail that keeps failing you hear at most once "
                      "an hour.")
    tell_referee(session, post, subject, paragraphs)
    _save(session, _Waiting(told_at=now))
    return True
