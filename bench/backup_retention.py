"""Backups and retention on a filled SQLite database: how long `pbem db backup` takes, what
a writer committing meanwhile waits, and how long a pruning ([retention]) takes.

The database: --games games (half ended 100 days ago, half running), --mails stored
mails each (--kib KiB of text apiece, handled 100 days ago), each answered by one
mail of its game. Then: a backup with nobody writing; one while a thread commits one
small row after another (its commits during the backup, its longest commit); and
prune_inbound with inbound_days 30 (cuts the ended games' mail).

    python3 bench/backup_retention.py                       # 200 games x 50 mails x 8 KiB
    python3 bench/backup_retention.py --games 1000 --mails 20 --kib 4
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from pbem.runner.retention import prune_inbound
from pbem.store import db
from pbem.store.backup import backup_sqlite
from pbem.store.models import Game, InboundMail, InboundRaw, OutboundMail, ServerState

NOW = datetime(2026, 12, 1, tzinfo=UTC)
LONG_AGO = NOW - timedelta(days=100)


def fill(url: str, games: int, mails: int, kib: int) -> None:
    engine = db.open_database(url)
    body = b"x" * (kib * 1024)
    with engine.begin() as conn:
        conn.execute(insert(Game), [
            {"id": g, "name": f"g{g}", "rules_json": "{}", "seed_hex": "00", "commitment": "c",
             "status": "over" if g % 2 else "running", "created_at": LONG_AGO,
             "ended_at": LONG_AGO if g % 2 else None} for g in range(1, games + 1)])
        for g in range(1, games + 1):
            first = (g - 1) * mails + 1
            conn.execute(insert(InboundMail), [
                {"id": i, "dedupe_key": f"<m{i}@x>", "source": "smtp",
                 "size": len(body), "received_at": LONG_AGO, "status": "done",
                 "processed_at": LONG_AGO, "attempts": 1} for i in range(first, first + mails)])
            conn.execute(insert(InboundRaw), [
                {"mail_id": i, "raw": b"From: p%d@x\r\nSubject: orders\r\n\r\n" % i + body}
                for i in range(first, first + mails)])
            conn.execute(insert(OutboundMail), [
                {"message_id": f"<a{i}@x>", "kind": "confirm", "mail_from": "b@x",
                 "rcpts_json": "[]", "game_id": g, "inbound_id": i,
                 "status": "sent", "attempts": 1, "next_attempt_at": LONG_AGO,
                 "created_at": LONG_AGO} for i in range(first, first + mails)])
    engine.dispose()


def backup_while_writing(source: Path, target: Path, url: str) -> tuple[float, int, float]:
    """(backup seconds, the writer's commits meanwhile, its longest commit in ms)."""
    engine = db.open_database(url, migrate=False)
    stop, commits, longest = threading.Event(), [0], [0.0]

    def writer() -> None:
        n = 0
        while not stop.is_set():
            began = time.perf_counter()
            with engine.begin() as conn:
                conn.execute(insert(ServerState), {"key": f"bench-{n}", "value": "x"})
            longest[0] = max(longest[0], time.perf_counter() - began)
            commits[0] += 1
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.2)
    commits[0], longest[0] = 0, 0.0
    began = time.perf_counter()
    backup_sqlite(source, target)
    took = time.perf_counter() - began
    during, worst = commits[0], longest[0]
    stop.set()
    thread.join()
    engine.dispose()
    return took, during, worst * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--mails", type=int, default=50)
    parser.add_argument("--kib", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pbem-bench-") as folder:
        source = Path(folder) / "pbem.db"
        url = f"sqlite:///{source}"
        began = time.perf_counter()
        fill(url, args.games, args.mails, args.kib)
        size = source.stat().st_size / 2**20
        print(f"database: {args.games} games x {args.mails} mails x {args.kib} KiB: "
              f"{size:.1f} MiB (filled in {time.perf_counter() - began:.1f} s)")
        began = time.perf_counter()
        backup_sqlite(source, Path(folder) / "quiet.db")
        took = time.perf_counter() - began
        print(f"backup, nobody writing:   {took:.2f} s ({size / took:.0f} MiB/s)")
        took, commits, worst = backup_while_writing(source, Path(folder) / "busy.db", url)
        print(f"backup, a writer running: {took:.2f} s; the writer committed {commits} times "
              f"meanwhile, its longest commit {worst:.1f} ms")
        engine = db.open_database(url, migrate=False)
        began = time.perf_counter()
        pruned = prune_inbound(engine, NOW, 30)
        took = time.perf_counter() - began
        print(f"prune_inbound (30 days): {pruned.mails} mails cut, {pruned.freed / 2**20:.1f} "
              f"MiB freed in {took:.2f} s ({pruned.mails / took:.0f} mails/s)")
        began = time.perf_counter()
        again = prune_inbound(engine, NOW + timedelta(days=1), 30)
        print(f"prune_inbound the next day: {again.mails} mails cut in "
              f"{time.perf_counter() - began:.2f} s (the running games' mail read, kept)")
        engine.dispose()


if __name__ == "__main__":
    main()
