"""What one look at the server's figures costs (pbem.services.health.read_status: `pbem status`,
each /healthz and each /metrics scrape) as the tables grow: a SQLite database with N
stored mails (of 4 kB, handled), N outgoing mails (sent) and N audit entries, plus a
queue of 100 mails waiting each way. Prints per N the milliseconds of a look (the
median of --repeat looks, each in a new transaction) and of one /metrics page made
from it.

    python3 bench/status_figures.py                         # N = 10,000 and 100,000
    python3 bench/status_figures.py --mails 1000000 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert
from sqlmodel import col

from pbem.services.health import read_status
from pbem.store.db import open_database
from pbem.store.models import AuditEntry, InboundMail, InboundRaw, OutboundBody, OutboundMail
from pbem.web.metrics import exposition

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
BODY = b"x" * 4096
CHUNK = 5000


def fill(url: str, n: int) -> None:
    engine = open_database(url)
    came = NOW - timedelta(days=30)
    for start in range(0, n + 100, CHUNK):
        rows = range(start, min(start + CHUNK, n + 100))
        with engine.begin() as conn:
            ins = conn.execute(insert(InboundMail).returning(
                col(InboundMail.id), sort_by_parameter_order=True), [
                {"dedupe_key": f"m{i}", "source": "smtp", "size": len(BODY),
                 "received_at": came + timedelta(seconds=i),
                 "status": "done" if i < n else "new",
                 "processed_at": came + timedelta(seconds=i + 1) if i < n else None}
                for i in rows]).scalars().all()
            conn.execute(insert(InboundRaw), [{"mail_id": i, "raw": BODY} for i in ins])
            outs = conn.execute(insert(OutboundMail).returning(
                col(OutboundMail.id), sort_by_parameter_order=True), [
                {"message_id": f"<o{i}@b>", "kind": "report", "mail_from": "b@x",
                 "rcpts_json": "[]", "next_attempt_at": came,
                 "created_at": came, "status": "sent" if i < n else "pending"}
                for i in rows]).scalars().all()
            conn.execute(insert(OutboundBody), [{"mail_id": i, "raw": BODY} for i in outs])
            audits = [{"at": came, "actor": "server", "action": "reminder", "detail": ""}
                      for i in rows if i < n]
            if audits:   # an empty list would insert one row of defaults
                conn.execute(insert(AuditEntry), audits)
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mails", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    for n in args.mails:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'pbem.db'}"
            fill(url, n)
            engine = open_database(url)
            looks, pages = [], []
            for _ in range(args.repeat):
                started = time.perf_counter()
                status = read_status(engine, NOW, late_after=300, stuck_after=1800)
                looked = time.perf_counter()
                exposition(status)
                looks.append(looked - started)
                pages.append(time.perf_counter() - looked)
            assert status.inbox == 100 and status.mails_out["sent"] == n
            print(f"N={n:>9,}: a look {statistics.median(looks) * 1000:8.1f} ms, "
                  f"the /metrics page from it {statistics.median(pages) * 1000:6.2f} ms "
                  f"(database {Path(url.removeprefix('sqlite:///')).stat().st_size / 1e6:,.0f} MB)")
            engine.dispose()


if __name__ == "__main__":
    main()
