"""The drain: every pending mail that is due, claimed a page at a time and sent over
the connections (pbem.outbox.connections)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timedelta

from sqlalchemy import Engine

from pbem.outbox import table
from pbem.outbox.connections import Connections, Sender
from pbem.outbox.table import (
    CLAIM_LEASE,
    DUE_CHUNK,
    NO_BUDGET,
    START,
    Budget,
    DrainReport,
    OnFailure,
    OnShort,
)
from pbem.store.work import Work

PAGE = 50                             # outbox rows claimed in one transaction


def drain(engine: Engine, open_sender: Callable[[], AbstractContextManager[Sender]],
          now: Callable[[], datetime], *,
          on_failure: OnFailure | None = None,
          limit: int | None = None, lease: timedelta = CLAIM_LEASE,
          rounds: int = 3, verp: bool = False, connections: int = 1,
          page: int = PAGE, budget: Budget = NO_BUDGET, on_short: OnShort | None = None,
          unreleased: Callable[[list[int]], object] | None = None) -> DrainReport:
    """Send every pending mail that is due; return what happened.

    Due mail is claimed ``page`` rows in one transaction and sent over up to
    ``connections`` senders at once (one thread and one ``open_sender()`` each);
    each mail is marked sent right after its hand-off, before its sender takes
    the next one (marks that meet are committed together), so a crash repeats at
    most the mail each sender has in flight. Claimed mail left unsent (the server
    became unavailable, an error) is released at once; what the database did not take
    back (it is gone) is told to ``unreleased``.

    Mail queued while draining (the referee's notice of an undeliverable mail)
    goes out in the same drain, in up to ``rounds`` passes; a pass that failed no
    mail queued nothing, so none follows it (mail queued meanwhile by another
    process waits for the next drain). With ``verp`` each
    mail's envelope sender is its own VERP address (``envelope_sender``).

    The most urgent mail goes first, then the oldest (table.due), and no more than the
    send ``budget`` has left (table.budget_left: counted from the outbox table, shared
    by all workers); what it holds back is counted in ``report.held``, and when the
    budget will take too long for the due mail ``on_short`` is told (once a day).
    """
    if connections < 1 or page < 1:
        raise ValueError("connections and page must be >= 1")
    with Connections(engine, open_sender, now, on_failure, connections, unreleased) as run:
        for _ in range(rounds):
            found_any, after, left = False, START, limit
            allowed = table.budget_left(engine, budget, now(), lease)
            if allowed is not None:
                left = allowed if left is None else min(left, allowed)
            failed_before = run.report.failed
            while left is None or left > 0:   # the due mail read a chunk at a time
                chunk = DUE_CHUNK if left is None else min(DUE_CHUNK, left)
                due, looked, after = table.due(engine, now(), lease, after, chunk)
                if not looked:
                    break
                left = None if left is None else left - looked
                found_any = found_any or bool(due)
                for start in range(0, len(due), page):
                    run.send(table.claim_page(engine, due[start:start + page], now(), verp))
                    if run.report.unavailable:
                        return run.report
                if looked < chunk:   # that was the last of it: no read to learn so
                    break
            # another pass only for what this one queued: the notices of failed mail
            if not found_any or run.report.failed == failed_before:
                break
    if budget.limited:
        _held(engine, budget, now(), run.report, on_short)
    return run.report


def _held(engine: Engine, budget: Budget, when: datetime, report: DrainReport,
          on_short: OnShort | None) -> None:
    """Count the due mail the budget held back; tell ``on_short`` when it is short."""
    short = table.shortfall(engine, budget, when)
    report.held = table.due_count(engine, when)
    if short is not None and on_short is not None:
        with Work(engine) as session:
            on_short(session, short)
            session.commit()
