"""Throughput of 1, 2 and 3 `pbem serve` workers on one PostgreSQL database and one
IMAP mailbox (the real Dovecot + SMTP stack of testkit/mailstack.py, a private
cluster of testkit/pgstack.py).

For each worker count: the workers start on an empty folder and tick; then a
burst of HELP mails from the players of many games (each a reply to the
player's report: on PostgreSQL each game's mail is a lane a worker claims,
pbem.runner.lanes), delivered beforehand, is moved into that folder at once, and the clock runs until the
last answer is sent. Then the yardstick: two independent servers, each with
its own database, mailbox and half of the games, one worker each, at once.
Prints mails a second, the share of the burst in which every worker handled
mail ("all busy", in BIN-second bins) and in which every worker used at least a
fifth of a core ("working": handling, giving lanes, fetching or sending), commits
a mail (pg_stat_database), the
mails each worker handled, the CPU seconds each worker, PostgreSQL and Dovecot
used, and how busy the machine's cores were meanwhile (anything else running on
the machine counts there too). Last, the statements and commits one mail's
handling costs, counted by SQLAlchemy events in this process. With --rounds N the
set-ups run in turn N times, so the machine's drift touches each alike, and the
medians and their ratios close the table.

    python bench/workers.py [--mails 400] [--games 24] [--workers 1,2,3] [--poll 0.5]
                            [--fetchers 0] [--rounds 1]

Needs Dovecot and PostgreSQL (see .ci/run); run from the repository root.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Engine, event, func, text  # noqa: E402
from sqlmodel import Session, select  # noqa: E402

from pbem.config import load_settings  # noqa: E402
from pbem.runner.server import Server  # noqa: E402
from pbem.store import db  # noqa: E402
from pbem.store.claims import aware  # noqa: E402
from pbem.store.models import InboundMail, OutboundMail  # noqa: E402
from testkit.mailstack import DEFAULT_USERS, MailStack  # noqa: E402
from testkit.pgstack import PgCluster  # noqa: E402
from testkit.workers import (  # noqa: E402
    Workers,
    burst_replies,
    counts,
    games_burst,
    reports_by_game,
    wait_until,
    write_config,
)

SEATS = 2        # players a game (each address plays in one game)
TICKS = os.sysconf("SC_CLK_TCK")
BIN = 0.25       # seconds: a worker handled mail in a bin of the burst = it was busy then
WORKING = 0.2    # of a core: a worker that used this much CPU in a bin was at work then


def game_names(games: int) -> list[str]:
    return [f"g{k:02d}" for k in range(1, games + 1)]


def seats_of(games: int) -> dict[str, list[str]]:
    """game -> the users seated in it: u1, u2 in g01, u3, u4 in g02 ..."""
    return {g: [f"u{k * SEATS + s + 1}" for s in range(SEATS)]
            for k, g in enumerate(game_names(games))}


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


def start_games(stack: MailStack, config: Path,
                seats: dict[str, list[str]]) -> dict[str, dict[str, EmailMessage]]:
    """Started games, so the HELP mails come from known players, replying to their reports
    (answered every time); the reports (game -> user -> report), once all arrived."""
    users = [u for us in seats.values() for u in us]
    for user in users:
        stack.clear(user)
    server = Server(load_settings(config))
    for game, seated in seats.items():
        for line in [f"NEWGAME {game} RULES classic", *(f"ADD {game} {stack.address(u)} P-{u}"
                                                        for u in seated), f"START {game}"]:
            server.referee.admin(line.split())
    reports: dict[str, dict[str, EmailMessage]] = {}

    def arrived() -> bool:
        server.send()   # again: a mail the relay deferred under load is due again
        reports.update(reports_by_game(stack, users))
        return all(sorted(reports.get(g, {})) == sorted(us) for g, us in seats.items())
    try:
        wait_until(arrived, 300, "the first reports", poll=1.0)
    finally:
        server.close()
        server.engine.dispose()
    return reports


def make_folder(stack: MailStack, name: str, user: str = "bluff") -> None:
    client = stack.imap(user)
    try:
        if not client.folder_exists(name):
            client.create_folder(name)
    finally:
        client.logout()


def release(stack: MailStack, into: str, user: str = "bluff") -> None:
    """Move everything in user's INBOX into the workers' folder, at once."""
    client = stack.imap(user)
    try:
        client.select_folder("INBOX")
        client.move(client.search(["ALL"]), into)
    finally:
        client.logout()


@dataclass
class Site:
    """One server: its database, its account, its config, its games, its workers."""

    account: str
    database: str
    config: Path
    folder: Path
    games: dict[str, list[str]]
    engine: Engine
    reports: dict[str, dict[str, EmailMessage]]
    sent_before: int = 0
    workers: Workers | None = None
    pids: list[int] = field(default_factory=list)


def make_site(stack: MailStack, cluster: PgCluster, account: str, seats: dict[str, list[str]],
              poll: float, lock_wait: float, tag: str, fetchers: int = 1) -> Site:
    folder = Path(tempfile.mkdtemp(prefix=f"pbem-bench-workers-{tag}-"))
    database = cluster.new_database()
    config = write_config(folder / "pbem.toml", stack, database, poll_seconds=poll,
                          lock_wait_seconds=lock_wait, folder="burst", user=account,
                          fetchers=fetchers)
    engine = db.open_database(database)
    reports = start_games(stack, config, seats)
    with Session(engine) as session:
        before = session.exec(select(func.count()).select_from(OutboundMail)).one()
    return Site(account, database, config, folder, seats, engine, reports, before)


def commits(engine: Engine) -> int:
    """Transactions committed in the engine's database so far (pg_stat_database)."""
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_stat_clear_snapshot()"))
        return int(conn.execute(text(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))
            .scalar_one())


class CpuSampler:
    """Each worker's CPU seconds, read every BIN seconds in a thread of its own while the
    burst runs: a worker that used at least WORKING of a core in a bin was at work then
    (handling, giving lanes, fetching, sending), whether or not a mail ended in it."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.samples: list[list[float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append([cpu_seconds(pid) for pid in self.pids])
            self._stop.wait(BIN)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def all_working(self) -> float:
        """The share of bins in which every worker was at work."""
        bins = list(zip(self.samples, self.samples[1:], strict=False))
        if len(self.pids) < 2 or not bins:
            return 1.0
        return sum(all(b - a >= WORKING * BIN for a, b in zip(before, after, strict=True))
                   for before, after in bins) / len(bins)


def busy_share(times_by_worker: dict[int, list[datetime]], workers: int) -> float:
    """Of the burst's BIN-second bins from the first mail handled to the last, the share
    in which every worker handled mail (with one worker: 1)."""
    every = [t for ts in times_by_worker.values() for t in ts]
    if workers < 2 or not every:
        return 1.0
    first = min(every)
    bins = int((max(every) - first).total_seconds() / BIN) + 1
    seen = [{int((t - first).total_seconds() / BIN) for t in ts}
            for ts in times_by_worker.values()]
    if len(seen) < workers:
        return 0.0
    return sum(all(b in s for s in seen) for b in range(bins)) / bins


def run(stack: MailStack, cluster: PgCluster, counts_of: list[int], mails: int, games: int,
        poll: float, lock_wait: float, tag: str, fetchers: int = 0) -> dict:
    """A burst of ``mails`` over ``games`` games: with one site whose workers number
    counts_of[0], or (the yardstick) one site a count, each with its own database,
    account and share of the games, all at once. Each site's folder is polled by up to
    ``fetchers`` workers at once (0: as many as it has workers)."""
    seats = seats_of(games)
    names = sorted(seats)
    accounts = ["bluff", "bluff2"][:len(counts_of)]
    share = {g: accounts[i * len(accounts) // len(names)] for i, g in enumerate(names)}
    for user in ["referee", *accounts]:
        stack.clear(user)
    sites = [make_site(stack, cluster, account,
                       {g: seats[g] for g in names if share[g] == account}, poll, lock_wait,
                       f"{tag}-{account}", fetchers or n)
             for account, n in zip(accounts, counts_of, strict=True)]
    games_burst(stack, {g: r for site in sites for g, r in site.reports.items()}, mails,
                server_of=lambda g: share[g])
    per_site = {a: sum(1 for i in range(mails) if share[names[i % len(names)]] == a)
                for a in accounts}
    for site in sites:
        stack.wait_for(site.account, per_site[site.account], timeout=120)
        make_folder(stack, "burst", site.account)
    postgres, dovecot = cluster.server_pid(), stack.master_pid()
    for site, n in zip(sites, counts_of, strict=True):
        site.workers = Workers(site.config, site.folder)
        site.pids = site.workers.start(n)
    try:
        for site in sites:
            assert site.workers is not None
            wait_until(site.workers.all_ticking, 60, "the workers' first ticks")
        pids = [pid for site in sites for pid in site.pids]
        cpu0 = {"workers": {pid: cpu_seconds(pid) for pid in pids},
                "postgres": tree_seconds(postgres), "dovecot": tree_seconds(dovecot),
                "bench": sum(os.times()[:2])}
        commits0 = {site.account: commits(site.engine) for site in sites}
        busy0, start = machine_busy(), datetime.now(UTC)
        with CpuSampler(pids) as sampler:
            for site in sites:
                release(stack, "burst", site.account)
            for site in sites:
                wait_until(lambda s=site: counts(s.engine).get("in:done", 0) ==
                           per_site[s.account] and counts(s.engine).get("out:sent", 0) ==
                           s.sent_before + per_site[s.account], 600, "the burst", poll=0.05)
        busy1 = machine_busy()
        workers_cpu = {pid: cpu_seconds(pid) - cpu0["workers"][pid] for pid in pids}
        time.sleep(0.5)   # let the worker's database sessions end before adding them up
        postgres_cpu = tree_seconds(postgres) - cpu0["postgres"]
        dovecot_cpu = tree_seconds(dovecot) - cpu0["dovecot"]
        bench_cpu = sum(os.times()[:2]) - cpu0["bench"]
    finally:
        statuses = {}
        for site in sites:
            if site.workers is not None:
                statuses.update(site.workers.stop())
    assert set(statuses.values()) == {0}, [s.workers.logs() for s in sites if s.workers]
    time.sleep(0.5)   # the stopped workers' backends report their commits as they end
    # (the idle ticks between the burst's end and the stop count too: a few)
    committed = sum(commits(site.engine) - commits0[site.account] for site in sites)
    last = start
    handled_by: Counter[int] = Counter()
    times: dict[int, list[datetime]] = {}
    for site in sites:
        with Session(site.engine) as session:
            sent = session.exec(select(func.max(OutboundMail.sent_at))).one()
            last = max(last, aware(sent)) if sent is not None else last
            for m in session.exec(select(InboundMail)):
                if m.claimed_by and m.processed_at is not None:
                    pid = int(m.claimed_by.split(":")[1])
                    handled_by[pid] += 1
                    times.setdefault(pid, []).append(aware(m.processed_at))
        site.engine.dispose()
    seconds = (last - start).total_seconds()
    cores = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]) * (os.cpu_count() or 1)
    pids = [pid for site in sites for pid in site.pids]
    return {"seconds": seconds, "rate": mails / seconds,
            "handled": [handled_by.get(pid, 0) for pid in pids],
            "cpu": [round(workers_cpu[pid], 1) for pid in pids], "cores": cores,
            "busy": busy_share(times, len(pids)), "working": sampler.all_working(),
            "commits": committed / mails,
            "postgres": postgres_cpu, "dovecot": dovecot_cpu, "bench": bench_cpu}


def statements_per_mail(stack: MailStack, cluster: PgCluster, mails: int, games: int) -> str:
    """Statements and commits a mail costs its handling, counted by SQLAlchemy events on
    the bench's own engine (in this process; no worker is changed for it): the burst
    stored straight into a fresh database, then one process_pending."""
    seats = seats_of(games)
    folder = Path(tempfile.mkdtemp(prefix="pbem-bench-workers-statements-"))
    out = []
    for label, database in (("PostgreSQL", cluster.new_database()),
                            ("SQLite", f"sqlite:///{folder / 'bench.db'}")):
        config = write_config(folder / f"pbem-{label}.toml", stack, database, user="bluff")
        reports = start_games(stack, config, seats)
        server = Server(load_settings(config))
        for _, raw in burst_replies(stack, reports, mails):
            server.referee.store_inbound(raw, source="smtp")
        counted = {"statements": 0, "commits": 0}

        def statement(*_: object, counted: dict[str, int] = counted) -> None:
            counted["statements"] += 1

        def commit(*_: object, counted: dict[str, int] = counted) -> None:
            counted["commits"] += 1
        event.listen(server.engine, "before_cursor_execute", statement)
        event.listen(server.engine, "commit", commit)
        handled = server.referee.process_pending()
        event.remove(server.engine, "before_cursor_execute", statement)
        event.remove(server.engine, "commit", commit)
        server.engine.dispose()
        out.append(f"{label}: {counted['statements'] / handled:.1f} statements and "
                   f"{counted['commits'] / handled:.2f} commits a mail handled "
                   f"({handled} HELP mails of {games} games, one process_pending)")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mails", type=int, default=400)
    parser.add_argument("--games", type=int, default=24)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--no-yardstick", action="store_true",
                        help="skip the two independent servers, half of the games each")
    parser.add_argument("--poll", type=float, default=0.5, help="each worker's poll_seconds")
    parser.add_argument("--fetchers", type=int, default=0,
                        help="[imap] fetchers: workers polling the folder at once "
                             "(0: as many as the site's workers)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the set-ups in turn this many times (medians at the end)")
    parser.add_argument("--lock-wait", type=float, default=1.0,
                        help="lock_wait_seconds: how long a tick waits for the referee lease")
    args = parser.parse_args()
    print(f"{args.mails} HELP mails over {args.games} games ({SEATS} players each), workers "
          f"polling every {args.poll} s, {args.fetchers or 'as many as the workers'} "
          f"at once, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the start")
    print(f"{'round':>5} {'set-up':>22} {'seconds':>8} {'mails/s':>8} {'all busy':>8} "
          f"{'working':>7} {'cores':>5} {'commits/mail':>12} {'CPU s: postgres':>15} "
          f"{'dovecot':>7} {'bench':>6}  workers (mails handled / CPU s each)")
    users = ("bluff2", *(u for us in seats_of(args.games).values() for u in us))
    runs: list[tuple[str, list[int]]] = [(f"{n} worker{'s' if n > 1 else ''}, one db", [n])
                                         for n in (int(w) for w in args.workers.split(","))]
    if not args.no_yardstick:
        runs.append(("2 servers, 2 dbs", [1, 1]))
    rates: dict[str, list[float]] = {label: [] for label, _ in runs}
    with MailStack(users=(*DEFAULT_USERS, *users)) as stack, PgCluster() as cluster:
        for round_ in range(1, args.rounds + 1):   # the set-ups in turn, round after round
            for label, counts_of in runs:
                r = run(stack, cluster, counts_of, args.mails, args.games, args.poll,
                        args.lock_wait, label.split()[0] + ("y" if len(counts_of) > 1 else ""),
                        args.fetchers)
                rates[label].append(r["rate"])
                each = ", ".join(f"{h} / {c}"
                                 for h, c in zip(r["handled"], r["cpu"], strict=True))
                print(f"{round_:>5} {label:>22} {r['seconds']:>8.1f} {r['rate']:>8.1f} "
                      f"{r['busy']:>8.0%} {r['working']:>7.0%} {r['cores']:>5.2f} "
                      f"{r['commits']:>12.2f} {r['postgres']:>15.1f} {r['dovecot']:>7.1f} "
                      f"{r['bench']:>6.1f}  {each}", flush=True)
        print(ratios(rates))
        print(statements_per_mail(stack, cluster, min(args.mails, 200), args.games))


def ratios(rates: dict[str, list[float]]) -> str:
    """Each set-up's median mails a second over the rounds, and the ratios the goals
    name, of those medians."""
    median = {label: statistics.median(values) for label, values in rates.items() if values}
    out = ["median mails/s: " + ", ".join(f"{label} {rate:.1f}" for label, rate in
                                           median.items())]
    pairs = [("2 workers, one db", "2 servers, 2 dbs"), ("3 workers, one db", "2 workers, one db"),
             ("2 workers, one db", "1 worker, one db")]
    out += [f"{a} / {b}: {median[a] / median[b]:.0%}" for a, b in pairs
            if a in median and b in median]
    return "\n".join(out)


if __name__ == "__main__":
    main()
