"""What the send budget costs a drain: reading the due mail in urgency order (table.due,
a chunk of DUE_CHUNK rows) and counting what the budget has left (table.budget_left),
against an outbox of many sent mails and a backlog of pending ones.

    python bench/outbox_budget.py [sent] [pending]

Prints the outbox size and the time of each (the median of 50), on SQLite.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from pbem.outbox import table
from pbem.store.db import open_database
from pbem.store.models import OutboundMail

KINDS = ("confirm", "report", "reminder", "talk", "notice")


def median_ms(call: Callable[[], object], runs: int = 50) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(sent: int = 200_000, pending: int = 20_000) -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as folder:
        engine = open_database(f"sqlite:///{Path(folder) / 'pbem.db'}")
        rows = [{"message_id": f"<{n}@x>", "kind": KINDS[n % 5], "mail_from": "b@x.test",
                 "rcpts_json": '["p@x.test"]', "status": "sent" if n < sent
                 else "pending", "next_attempt_at": now, "created_at": now,
                 "sent_at": now - timedelta(seconds=(sent - n) * 2) if n < sent else None}
                for n in range(sent + pending)]
        with engine.begin() as conn:
            conn.execute(insert(OutboundMail), rows)
        budget = table.Budget(per_minute=30, per_day=10_000)
        due = median_ms(lambda: table.due(engine, now, table.CLAIM_LEASE, table.START,
                                          table.DUE_CHUNK))
        left = median_ms(lambda: table.budget_left(engine, budget, now))
        short = median_ms(lambda: table.shortfall(engine, budget, now))
        print(f"outbox: {sent} sent, {pending} pending")
        print(f"due chunk of {table.DUE_CHUNK} (urgency, id): {due:.1f} ms")
        print(f"budget_left: {left:.1f} ms")
        print(f"shortfall (due count, day's sent): {short:.1f} ms")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
