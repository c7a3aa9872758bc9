"""Throughput of 1, 2 and 3 `pbem serve` workers on one PostgreSQL database and one
IMAP mailbox (the real Dovecot + SMTP stack of testkit/mailstack.py, a private
cluster of testkit/pgstack.py).

For each worker count: the workers start on an empty folder and tick; then a
burst of HELP mails from known players (delivered beforehand) is moved into that
folder at once, and the clock runs until the last answer is sent. Prints mails a
second, the mails each worker handled, the CPU seconds each worker, PostgreSQL
and Dovecot used, and how busy the machine's cores were meanwhile (anything else
running on the machine counts there too).

    python bench/workers.py [--mails 200] [--workers 1,2,3] [--poll 0.5] [--lock-wait 1]

Needs Dovecot and PostgreSQL (see .ci/run); run from the repository root.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import func  # noqa: E402
from sqlmodel import Session, select  # noqa: E402

from pbem import db  # noqa: E402
from pbem.config import load_settings  # noqa: E402
from pbem.models import InboundMail, OutboundMail  # noqa: E402
from pbem.server import Server  # noqa: E402
from testkit.mailstack import MailStack  # noqa: E402
from testkit.pgstack import PgCluster  # noqa: E402
from testkit.workers import Workers, burst, counts, wait_until, write_config  # noqa: E402

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = False) -> float:
    """utime + stime of a running process (and of its children that ended, with children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    used = int(fields[11]) + int(fields[12])
    if children:
        used += int(fields[13]) + int(fields[14])
    return used / TICKS


def tree_seconds(root: int) -> float:
    """CPU seconds of a process, its children that ended, and its children still running."""
    total = cpu_seconds(root, children=True)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == root:
                total += cpu_seconds(int(stat.parent.name), children=True)
        except (OSError, ValueError, IndexError):
            continue
    return total


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def start_game(stack: MailStack, config: Path) -> None:
    """A started game, so the HELP mails come from known players (answered every time)."""
    server = Server(load_settings(config))
    for line in ["NEWGAME g1", *(f"ADD g1 {stack.address(u)} P-{u}" for u in PLAYERS),
                 "START g1"]:
        server.referee.admin(line.split())
    server.send()
    server.engine.dispose()


def make_folder(stack: MailStack, name: str) -> None:
    client = stack.imap("bluff")
    try:
        if not client.folder_exists(name):
            client.create_folder(name)
    finally:
        client.logout()


def release(stack: MailStack, into: str) -> None:
    """Move everything in bluff's INBOX into the workers' folder, at once."""
    client = stack.imap("bluff")
    try:
        client.select_folder("INBOX")
        client.move(client.search(["ALL"]), into)
    finally:
        client.logout()


def run(stack: MailStack, cluster: PgCluster, workers_n: int, mails: int, poll: float,
        lock_wait: float) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"pbem-bench-workers-{workers_n}-"))
    for user in ["bluff", "referee", *PLAYERS]:
        stack.clear(user)
    database = cluster.new_database()
    config = write_config(folder / "pbem.toml", stack, database, poll_seconds=poll,
                          lock_wait_seconds=lock_wait, folder="burst")
    engine = db.open_database(database)
    start_game(stack, config)
    with Session(engine) as session:
        before = session.exec(select(func.count()).select_from(OutboundMail)).one()
    burst(stack, PLAYERS, mails)
    stack.wait_for("bluff", mails, timeout=120)
    make_folder(stack, "burst")   # before the workers look at it
    postgres, dovecot = cluster.server_pid(), stack.master_pid()
    with Workers(config, folder) as workers:
        pids = workers.start(workers_n)
        wait_until(workers.all_ticking, 60, "the workers' first ticks")
        cpu0 = {"workers": {pid: cpu_seconds(pid) for pid in pids},
                "postgres": tree_seconds(postgres), "dovecot": tree_seconds(dovecot),
                "bench": sum(os.times()[:2])}
        busy0, start = machine_busy(), datetime.now(UTC)
        release(stack, "burst")
        wait_until(lambda: counts(engine).get("in:done", 0) == mails and
                   counts(engine).get("out:sent", 0) == before + mails, 600, "the burst",
                   poll=0.05)
        busy1 = machine_busy()
        workers_cpu = {pid: cpu_seconds(pid) - cpu0["workers"][pid] for pid in pids}
        time.sleep(0.5)   # let the worker's database sessions end before adding them up
        postgres_cpu = tree_seconds(postgres) - cpu0["postgres"]
        dovecot_cpu = tree_seconds(dovecot) - cpu0["dovecot"]
        bench_cpu = sum(os.times()[:2]) - cpu0["bench"]
        statuses = workers.stop()
    assert set(statuses.values()) == {0}, workers.logs()
    with Session(engine) as session:
        last = session.exec(select(func.max(OutboundMail.sent_at))).one()
        handled_by = Counter(int(m.claimed_by.split(":")[1]) for m in
                             session.exec(select(InboundMail)) if m.claimed_by)
    engine.dispose()
    seconds = (last - start).total_seconds()
    cores = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]) * (os.cpu_count() or 1)
    return {"workers": workers_n, "seconds": seconds, "rate": mails / seconds,
            "handled": [handled_by.get(pid, 0) for pid in pids],
            "cpu": [round(workers_cpu[pid], 1) for pid in pids], "cores": cores,
            "postgres": postgres_cpu, "dovecot": dovecot_cpu, "bench": bench_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mails", type=int, default=200)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--poll", type=float, default=0.5, help="each worker's poll_seconds")
    parser.add_argument("--lock-wait", type=float, default=1.0,
                        help="lock_wait_seconds: how long a tick waits for the referee lease")
    args = parser.parse_args()
    print(f"{args.mails} HELP mails, workers polling every {args.poll} s, waiting "
          f"{args.lock_wait} s for the referee lease, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'workers':>7} {'seconds':>8} {'mails/s':>8} {'cores busy':>10} "
          f"{'CPU s: postgres':>15} {'dovecot':>7} {'relay':>6}  "
          "workers (mails handled / CPU s each)")
    with MailStack() as stack, PgCluster() as cluster:
        for n in [int(w) for w in args.workers.split(",")]:
            r = run(stack, cluster, n, args.mails, args.poll, args.lock_wait)
            each = ", ".join(f"{h} / {c}" for h, c in zip(r["handled"], r["cpu"], strict=True))
            print(f"{r['workers']:>7} {r['seconds']:>8.1f} {r['rate']:>8.1f} "
                  f"{r['cores']:>10.2f} {r['postgres']:>15.1f} {r['dovecot']:>7.1f} "
                  f"{r['bench']:>6.1f}  {each}", flush=True)


if __name__ == "__main__":
    main()
