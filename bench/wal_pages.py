"""Pages an order writes to SQLite's WAL in a turn tick, by table and index.

bench/scale.py's set-up (a real Dovecot, referee mail creating and starting N postal
games, every player's reply to its first report), then ONE tick handling the turn with
the WAL never checkpointed: the connections are opened again with wal_autocheckpoint 0
(here, in the bench, not in pbem) after the WAL was emptied. The WAL then holds every
page each commit of the turn wrote, a frame a page; each frame's page is named by the
table or index it belongs to (SQLite's dbstat). Prints, an order: the commits, the WAL
frames and their bytes, the distinct pages among them (what a checkpoint of the whole
turn would copy into the database), and the frames by table and index. Counts, not
times: the same on a loaded machine as on a quiet one.

    python3 bench/wal_pages.py                  # 200 games
    python3 bench/wal_pages.py --games 1000

The reports are made in the turn's transactions (no composer). Needs Dovecot; run
from the repository root.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import struct
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event  # noqa: E402

from bench.scale import answers, bench_settings, deliver, referee_mails  # noqa: E402
from pbem.runner.server import Server  # noqa: E402
from testkit.mailstack import MailStack  # noqa: E402

WAL_HEADER, FRAME_HEADER = 32, 24   # bytes (SQLite's file format, "WAL file format")


def frames_of(wal: Path) -> tuple[int, list[tuple[int, bool]]]:
    """The WAL's page size and its frames: each frame's page number and whether it ends
    a commit (its header's "size of the database after the commit" is not 0)."""
    data = wal.read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    frames = []
    for at in range(WAL_HEADER, len(data) - FRAME_HEADER + 1, page_size + FRAME_HEADER):
        page, size_after = struct.unpack(">II", data[at:at + 8])
        frames.append((page, size_after > 0))
    return page_size, frames


def run(games: int, seed: int) -> None:
    with MailStack(users=("bluff", "referee")) as stack, \
            tempfile.TemporaryDirectory(prefix="pbem-wal-") as tmp:
        database = Path(tmp) / "scale.db"
        server = Server(bench_settings(stack, f"sqlite:///{database}", Path(tmp)),
                        compose_apart=False)
        deliver(stack, referee_mails(stack, games), "referee mails")
        server.tick()
        deliver(stack, answers(server.engine, random.Random(seed), True), "orders")
        server.engine.dispose()   # its connections opened again, none checkpointing
        event.listen(server.engine, "connect",
                     lambda dbapi, _record: dbapi.execute("PRAGMA wal_autocheckpoint=0"))
        raw = sqlite3.connect(database, isolation_level=None)
        busy, _, _ = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0, "the WAL was not emptied before the turn"
        turn = server.tick()
        names = dict(raw.execute("SELECT pageno, name FROM dbstat"))
        names[1] = "page 1 (the file's header; sqlite_schema)"   # written by most commits
        page_size, frames = frames_of(database.with_name(database.name + "-wal"))
        raw.close()
        server.close()
        server.engine.dispose()
    orders = max(1, turn.processed)
    commits = sum(ends for _, ends in frames)
    by_name = Counter(names.get(page, "(free pages)") for page, _ in frames)
    distinct = len({page for page, _ in frames})
    print(f"\nthe turn tick of {games:,} games: {turn.processed:,} orders; an order: "
          f"{commits / orders:.2f} commits, {len(frames) / orders:.1f} WAL frames "
          f"({len(frames) * (page_size + FRAME_HEADER) / orders / 1024:.0f} KiB), "
          f"{distinct / orders:.1f} distinct pages\n")
    print("| table or index | WAL frames an order |")
    print("| --- | ---: |")
    for name, count in by_name.most_common():
        print(f"| {name} | {count / orders:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    run(args.games, args.seed)


if __name__ == "__main__":
    main()
