"""What writing a mail and its status costs SQLite: the statements one at a time.

On a fresh SQLite file: N mails of some 40 KB queued (enqueue, each committed alone),
claimed and marked sent one by one (the outbox's mark), N replies of the same size
stored (store_inbound), claimed and each held and finished (the inbox's handling
transaction, without the handling). Prints for each step the wall and CPU µs a mail
and the bytes this process handed to write calls a mail (/proc/self/io: the database,
its WAL, the step's checkpoint): what a status write that rewrote the mail with it cost
(docs/performance.md, "Mail bodies out of the hot rows").

    python bench/mail_bodies.py            # 400 mails
    python bench/mail_bodies.py 2000
"""

from __future__ import annotations

import random
import sqlite3
import string
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import Session  # noqa: E402

from pbem.outbox import Origin, enqueue, table  # noqa: E402
from pbem.runner import inbox, storing  # noqa: E402
from pbem.store.db import open_database  # noqa: E402
from pbem.store.work import Work  # noqa: E402

NOW = datetime(2026, 12, 6, tzinfo=UTC)
LEASE = timedelta(minutes=5)


def written() -> int:
    """The bytes this process has handed to write calls (/proc/self/io's wchar)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))


def checkpoint(path: Path) -> None:
    """Copy the WAL into the database file and empty it (a connection of its own: pbem's
    begin a transaction, in which no checkpoint runs)."""
    plain = sqlite3.connect(path, isolation_level=None)
    try:
        plain.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        plain.close()


def timed(label: str, work: Callable[[], None], n: int, path: Path) -> None:
    """A step's cost a mail, its checkpoint included: each byte it wrote to the WAL is
    written once more into the database file, when that happens to run."""
    checkpoint(path)
    wall, cpu, wrote = time.perf_counter(), time.process_time(), written()
    work()
    checkpoint(path)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    wrote = written() - wrote
    print(f"{label}: {1e6 * wall / n:,.0f} µs wall, {1e6 * cpu / n:,.0f} µs CPU, "
          f"{wrote / n / 1024:.1f} KiB written a mail", flush=True)


def main(n: int) -> None:
    rng = random.Random(1)
    text = "".join(rng.choice(string.ascii_letters + " \n") for _ in range(40_000))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bodies.db"
        engine = open_database(f"sqlite:///{path}")
        origin = Origin("bluff@x.test")

        def queue() -> None:
            for i in range(n):
                with Work(engine) as session:
                    enqueue(session, origin, kind="report", to=f"p{i}@x.test", subject="r",
                            text=text, html=None, now=NOW)
                    session.commit()
        timed("enqueue + commit", queue, n, path)
        claimed: list[int] = []
        while due := table.due(engine, NOW, LEASE, table.START, 50)[0]:
            claimed += [mail.id for mail in table.claim_page(engine, due, NOW, verp=False)]
        conn = table.marking(engine)

        def mark() -> None:
            for row_id in claimed:
                table.mark_sent(conn, [row_id], NOW)
        timed("mark sent + commit", mark, len(claimed), path)
        conn.close()
        replies = [(f"From: p{i}@x.test\r\nTo: bluff@x.test\r\nMessage-ID: <m{i}@x.test>\r\n"
                    f"Subject: Re: r\r\n\r\n{text}").encode() for i in range(n)]

        def store() -> None:
            for raw in replies:
                storing.store_inbound(engine, raw, now=NOW, max_bytes=10**7, source="smtp")
        timed("store a reply", store, n, path)
        held: list[int] = []
        after = 0
        while True:
            page, after = inbox.claim_page(engine, NOW, LEASE, after=after)
            held += page
            if not after:
                break

        def finish() -> None:
            for row_id in held:
                with Session(engine) as session:
                    row = inbox.hold_claim(session, row_id, NOW)
                    assert row is not None
                    row.status, row.outcome, row.processed_at = "done", "measured", NOW
                    inbox.finish(session, row)
                    session.commit()
        timed("hold claim + finish + commit", finish, len(held), path)
        engine.dispose()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
