"""N postal games through the real `pbem tick`: how one turn of every game scales.

For each size N (each in a fresh subprocess, so its peak RSS is its own): a real
Dovecot (testkit/mailstack.py), a SQLite file in a temp dir, the `.eml` outbox (no
SMTP). N games are created and started by referee mail (NEWGAME/ADD/START, split
over several mails by the referee's line cap) and one tick starts them all (the
start tick); then every player answers its first report with a legal order, a
reply mail as a player's client writes it (In-Reply-To, References, the report
quoted), put straight into the referee's Maildir; then ONE tick handles the whole
turn (the turn tick). Making and delivering the mails is not timed.

Prints per N: the start tick, the turn tick, orders handled, ms per order (wall
and the bench process's CPU: with --workers the workers' CPU is not in it; with
the composer's after a plus; and the wall less the time the tick's thread
waited for a core, ready to run, which other work on a shared machine makes), mails
written (and per second) by the turn tick, peak RSS of the process (and of the
composer's after a plus); then how the per-order cost and the peak RSS grow from the
smallest size to the largest.

    python bench/scale.py                          # 100 games
    python bench/scale.py --games 100 1000         # each size in its own process
    python bench/scale.py --games 1000 --profile turn.prof   # cProfile of the turn tick
    python bench/scale.py --games 1000 --profile turn.prof --profile-cpu   # on CPU time
    python bench/scale.py --games 2000 --postgresql --workers 2   # two workers' ticks
    python bench/scale.py --games 1000 --no-compose   # reports made by the tick's thread

On SQLite a turn's reports are made by the composer ([server] compose_apart, on by
default) unless --no-compose; --compose asks for it whatever the default.

With --postgresql the database is one of a private PostgreSQL cluster
(testkit/pgstack.py); with --workers N (PostgreSQL only) the turn is handled by N
processes ticking side by side, each game's mail a lane one of them claims
(pbem.runner.lanes.claim_lane): the turn tick is then the time from the first tick's
start until every order is handled and every report written, fetching included.

With --profile and several sizes, each size writes FILE with "-N" before its suffix.
The mails are streamed (the answers straight from the outbox table into the
Maildir), so the bench itself holds few in memory at once; on disk, a size takes
about 0.8 MB a game under the temp dir (TMPDIR): ~8 GB for 10,000 games.
Needs Dovecot (dovecot-imapd, dovecot-lmtpd); run from the repository root.
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import json
import multiprocessing
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import Engine, text  # noqa: E402

from pbem.config import ImapSettings, Settings  # noqa: E402
from pbem.demo.robot_client import client_order_lines, read_report, reply_to  # noqa: E402
from pbem.mail.read import MAX_TEXT_LINES  # noqa: E402
from pbem.runner.server import Server, TickReport  # noqa: E402
from testkit.mailstack import MailStack  # noqa: E402
from testkit.pgstack import PgCluster  # noqa: E402

KEY = "bench-referee-key"
SEATS = 5
PLAYER_DOMAIN = "players.test"


def say(text: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the mails


def referee_mails(stack: MailStack, games: int) -> Iterator[bytes]:
    """NEWGAME/ADD/START for every game, as few referee mails as the line cap allows."""
    per_mail = (MAX_TEXT_LINES - 1) // (SEATS + 2)   # KEY line, then 7 lines a game
    for first in range(0, games, per_mail):
        lines = [f"KEY {KEY}"]
        for g in range(first, min(games, first + per_mail)):
            lines.append(f"NEWGAME scale-{g} SEED {1000 + g}")
            lines += [f"ADD scale-{g} g{g}p{s}@{PLAYER_DOMAIN} P{s}" for s in range(1, SEATS + 1)]
            lines.append(f"START scale-{g}")
        msg = EmailMessage()
        msg["From"], msg["To"] = stack.address("referee"), stack.address("bluff")
        msg["Subject"] = f"games from {first}"
        msg.set_content("\n".join(lines) + "\n")
        yield msg.as_bytes(policy=policy.SMTP)


def answers(engine: Engine, rng: random.Random, quote: bool) -> Iterator[bytes]:
    """Every player's reply to its turn-1 report, streamed from the outbox table."""
    with engine.connect() as conn:
        rows = conn.execution_options(stream_results=True, yield_per=500).execute(text(
            "SELECT raw, rcpts_json FROM outbound_mail JOIN outbound_body ON mail_id = id "
            "WHERE kind = 'report' AND turn = 1 ORDER BY id"))
        for raw, rcpts in rows:
            report = read_report(raw)   # not a full MIME parse: 50,000 of those take minutes
            assert report.view is not None
            lines = client_order_lines(report.view, rng)
            assert lines, "every postal player moves in turn 1"
            yield reply_to(report.msg, json.loads(rcpts)[0], lines, quote=quote,
                           original=report.text)


# --------------------------------------------------------------------------- one size


def count(engine: Engine, sql: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(sql)).scalar_one())


def inbox_size(stack: MailStack) -> int:
    """Messages in the referee's INBOX (selecting it lets Dovecot index new mail)."""
    client = stack.imap("bluff")
    try:
        return len(client.search(["ALL"])) if client.select_folder("INBOX") else 0
    finally:
        client.logout()


def deliver(stack: MailStack, raws: Iterator[bytes], what: str) -> int:
    start = time.perf_counter()
    delivered = stack.deliver_many("bluff", raws)
    waiting = inbox_size(stack)
    assert waiting == delivered, f"{delivered} {what} delivered, {waiting} in the INBOX"
    say(f"{delivered} {what} delivered and indexed in {time.perf_counter() - start:.1f} s")
    return delivered


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB on Linux


def tick_on(server: Server, stop: Any, reports: Any) -> None:
    """A worker (a forked process, with the bench's server as warm as the one-worker run's:
    its templates compiled, its connections its own): ticks until ``stop`` is set, then
    puts what its ticks did (fetched, processed, sent) on ``reports``."""
    done = [0, 0, 0]
    while not stop.is_set():
        report = server.tick()
        if report.did_something and os.environ.get("SCALE_TICKS"):
            say(f"worker {os.getpid()}: {report}")
        done = [done[0] + report.fetched, done[1] + report.processed, done[2] + report.sent]
        if not report.did_something:
            time.sleep(0.05)
    server.close()
    server.engine.dispose()
    reports.put([*done, time.process_time()])


def turn_by_workers(server: Server, engine: Engine, workers: int, games: int,
                    stack: MailStack) -> TickReport:
    """The turn handled by ``workers`` processes ticking side by side (PostgreSQL), until
    every order is handled and every turn-2 report written; what they did, together."""
    context = multiprocessing.get_context("fork")
    stop, reports = context.Event(), context.Queue()
    procs = [context.Process(target=tick_on, args=(server, stop, reports))
             for _ in range(workers)]
    for proc in procs:
        proc.start()
    try:
        while count(engine, "SELECT count(*) FROM outbound_mail WHERE kind = 'report' "
                            "AND turn = 2") < SEATS * games or \
                count(engine, "SELECT count(*) FROM inbound_mail WHERE status = 'new'") or \
                inbox_size(stack):
            # each look counts every outbound row on the workers' server: at 10,000
            # games (110,000 rows) a look a second, not ten, to leave them the cores
            time.sleep(0.1 if games < 2000 else 1.0)
    finally:
        stop.set()
        done = [reports.get(timeout=600) for _ in procs]
        for proc in procs:
            proc.join(60)
    say(f"mails handled / CPU s by each worker: "
        f"{', '.join(f'{d[1]} / {d[3]:.1f}' for d in done)}")
    return TickReport(fetched=sum(d[0] for d in done), processed=sum(d[1] for d in done),
                      sent=sum(d[2] for d in done))


def bench_settings(stack: MailStack, url: str, folder: Path) -> Settings:
    """The server of a bench size: the stack's bluff mailbox, its referee, ``url``'s
    database and the .eml outbox in ``folder`` (round_trips.py sets up the same)."""
    return Settings(
        database=url, address=stack.address("bluff"),
        referee=stack.address("referee"), referee_key=KEY, outbox_dir=folder / "outbox",
        imap=ImapSettings(stack.imap_host, stack.imap_port, ssl=False,
                          username=stack.address("bluff"), password=stack.password))


def run_size(games: int, profile: str | None, quote: bool, seed: int, postgresql: bool = False,
             workers: int = 1, compose: bool | None = None, profile_cpu: bool = False) -> dict:
    with MailStack(users=("bluff", "referee")) as stack, \
            tempfile.TemporaryDirectory(prefix="pbem-scale-") as tmp, \
            (PgCluster() if postgresql else _Nothing()) as cluster:
        url = cluster.new_database() if postgresql else f"sqlite:///{Path(tmp) / 'scale.db'}"
        settings = bench_settings(stack, url, Path(tmp))
        # with or without the composer as asked (None: as the setting's default says; a
        # tree before the composer has none)
        knows = "compose_apart" in inspect.signature(Server).parameters
        server = Server(settings, compose_apart=compose) if compose is not None and (
            knows or compose) else Server(settings)
        database = server.engine
        setup = deliver(stack, referee_mails(stack, games), "referee mails")

        clock = time.perf_counter()
        started = server.tick()
        start_tick = time.perf_counter() - clock
        reports = count(database, "SELECT count(*) FROM outbound_mail "
                                  "WHERE kind = 'report' AND turn = 1")
        say(f"start tick: {start_tick:.1f} s ({started}); {reports} first reports")
        assert started.processed == setup and reports == SEATS * games, "games not all started"

        composer = getattr(server, "composer", None)   # (a tree before the composer)
        if composer is not None:   # its CPU is counted over the turn tick alone
            composer.stop()
        orders = deliver(stack, answers(database, random.Random(seed), quote), "orders")
        before = count(database, "SELECT count(*) FROM outbound_mail")
        # on a shared machine the wall clock charges a function the time its thread
        # waited for a core; the thread's CPU clock does not (each call costs more to time)
        profiler = (cProfile.Profile(time.thread_time) if profile_cpu else cProfile.Profile()
                    ) if profile else None
        if workers > 1:   # the server's connections are not the forked workers' to share
            server.close()
            database.dispose()
        clock, cpu, wrote = time.perf_counter(), time.process_time(), written_bytes()
        queued = runqueue_seconds()
        if profiler is not None:
            profiler.enable()
        at: dict[str, float] = {}   # when the tick began waiting for the composer, and ended
        turn = server.tick(lambda tag: at.__setitem__(tag, time.perf_counter())) \
            if workers == 1 else turn_by_workers(server, database, workers, games, stack)
        if profiler is not None:
            profiler.disable()
        turn_tick = time.perf_counter() - clock
        turn_cpu = time.process_time() - cpu   # the forked workers' not in it
        # how long the tick's thread was ready to run and waited for a core (other work on
        # the machine): the turn tick less this is what a machine of its own would take
        queued = runqueue_seconds() - queued
        say(f"the tick's thread waited {queued:.1f} s for a core ({queued / turn_tick:.0%} of "
            f"the turn tick): {1000 * (turn_tick - queued) / max(1, turn.processed):.1f} ms "
            f"an order without that wait")
        composer_cpu = composer_rss = 0.0
        if composer is not None:   # a child's CPU is counted once it has ended
            composer_rss = peak_rss_of(getattr(composer, "pid", None))
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            composer.stop()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            composer_cpu = (after.ru_utime + after.ru_stime
                            - children.ru_utime - children.ru_stime)
            say(f"the composer's CPU over the turn tick: {composer_cpu:.1f} s; the tick "
                f"waited {at.get('compose<', 0) - at.get('compose>', 0):.2f} s at its end for "
                f"what it had not made yet; its peak RSS {composer_rss:.0f} MiB")
        wrote = written_bytes() - wrote        # so are their writes
        written = count(database, "SELECT count(*) FROM outbound_mail") - before
        second = count(database, "SELECT count(*) FROM outbound_mail "
                                 "WHERE kind = 'report' AND turn = 2")
        say(f"turn tick: {turn_tick:.1f} s ({turn}); {second} second reports")
        database_file = Path(tmp) / "scale.db"
        say(f"turn tick wrote {wrote / 2**20:,.0f} MiB (the process's write calls: the "
            f"database, its WAL, the outbox); the database file "
            f"{file_mib(database_file):,.0f} MiB, its WAL {file_mib(database_file, '-wal'):,.0f} MiB"
            if not postgresql else f"turn tick wrote {wrote / 2**20:,.0f} MiB (write calls)")
        if turn.processed != orders or second != SEATS * games:
            say(f"WARNING: {orders} orders delivered, {turn.processed} handled, "
                f"{second} of {SEATS * games} turn-2 reports written")
        if profiler is not None and profile is not None:
            profiler.dump_stats(profile)
            for key in ("cumulative", "tottime"):
                print(f"\n--- turn tick at {games} games, top 15 by {key} ({profile})")
                pstats.Stats(profiler, stream=sys.stdout).sort_stats(key).print_stats(15)
        server.engine.dispose()
        return {"games": games, "start_tick": start_tick, "turn_tick": turn_tick,
                "orders": turn.processed, "ms_per_order": 1000 * turn_tick / max(1, turn.processed),
                "mails": written, "mails_per_s": written / turn_tick,
                "sent": turn.sent, "rss_mib": peak_rss_mib(),
                "cpu_ms_per_order": 1000 * turn_cpu / max(1, turn.processed),
                "unqueued_ms_per_order": 1000 * (turn_tick - queued) / max(1, turn.processed),
                "composer_cpu_ms_per_order": 1000 * composer_cpu / max(1, turn.processed),
                "composer_rss_mib": composer_rss}


def runqueue_seconds() -> float:
    """How long this thread has waited on a run queue, ready to run (/proc's schedstat)."""
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as stat:
        return int(stat.read().split()[1]) / 1e9


def peak_rss_of(pid: int | None) -> float:
    """The peak RSS of a child process still running (/proc's VmHWM), MiB; 0: none."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) / 1024 for line in status
                        if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0.0


def written_bytes() -> int:
    """The bytes this process has handed to write calls (/proc/self/io's wchar)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))


def file_mib(path: Path, suffix: str = "") -> float:
    found = path.with_name(path.name + suffix)
    return found.stat().st_size / 2**20 if found.exists() else 0.0


class _Nothing:
    """No PostgreSQL cluster (SQLite)."""

    def __enter__(self) -> Any:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# --------------------------------------------------------------------------- the driver


def profile_path(profile: str | None, games: int, several: bool) -> str | None:
    if profile is None or not several:
        return profile
    path = Path(profile)
    return str(path.with_name(f"{path.stem}-{games}{path.suffix}"))


def table(results: list[dict]) -> None:
    print("\n| games | start tick | turn tick | orders | ms/order | CPU ms/order | "
          "ms/order less core waits | mails written | mails/s | peak RSS |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        cpu = f"{r['cpu_ms_per_order']:.1f}" if r.get("cpu_ms_per_order") else "-"
        if r.get("composer_cpu_ms_per_order"):   # the composer's CPU after a plus
            cpu += f" + {r['composer_cpu_ms_per_order']:.1f}"
        composer_rss = f" + {r['composer_rss_mib']:.0f} MiB" if r.get("composer_rss_mib") else ""
        print(f"| {r['games']:,} | {r['start_tick']:.1f} s | {r['turn_tick']:.1f} s | "
              f"{r['orders']:,} | {r['ms_per_order']:.1f} | {cpu} | "
              f"{r['unqueued_ms_per_order']:.1f} | {r['mails']:,} | "
              f"{r['mails_per_s']:.0f} | {r['rss_mib']:.0f} MiB{composer_rss} |")
    if len(results) > 1:
        small, large = results[0], results[-1]
        print(f"\nfrom {small['games']:,} to {large['games']:,} games: per-order cost "
              f"x{large['ms_per_order'] / small['ms_per_order']:.2f}, peak RSS "
              f"x{large['rss_mib'] / small['rss_mib']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--games", type=int, nargs="+", default=[100],
                        help="one or more sizes; each runs in its own process")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the turn tick")
    parser.add_argument("--profile-cpu", action="store_true",
                        help="the profile timed by the tick's thread's CPU clock, not the wall")
    parser.add_argument("--no-quote", dest="quote", action="store_false",
                        help="players do not quote the report in their replies")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--postgresql", action="store_true",
                        help="a private PostgreSQL cluster's database instead of SQLite")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes ticking side by side for the turn (PostgreSQL)")
    parser.add_argument("--compose", action=argparse.BooleanOptionalAction, default=None,
                        help="a turn's reports composed by a process of its own (SQLite's "
                             "default, [server] compose_apart), or not (--no-compose)")
    parser.add_argument("--result", help=argparse.SUPPRESS)   # the child's answer file
    args = parser.parse_args()
    if args.workers > 1 and not args.postgresql:
        parser.error("--workers needs --postgresql (SQLite has one writer)")
    if args.result:   # a child: one size
        result = run_size(args.games[0], args.profile, args.quote, args.seed,
                          args.postgresql, args.workers, args.compose, args.profile_cpu)
        Path(args.result).write_text(json.dumps(result))
        return
    sizes = sorted(set(args.games))
    results = []
    with tempfile.TemporaryDirectory(prefix="pbem-scale-results-") as tmp:
        for games in sizes:
            print(f"{games:,} games ...", file=sys.stderr, flush=True)
            answer = Path(tmp) / f"{games}.json"
            cmd = [sys.executable, __file__, "--games", str(games), "--seed", str(args.seed),
                   "--result", str(answer)]
            prof = profile_path(args.profile, games, len(sizes) > 1)
            cmd += ["--profile", prof] if prof else []
            cmd += ["--profile-cpu"] if prof and args.profile_cpu else []
            cmd += [] if args.quote else ["--no-quote"]
            cmd += ["--postgresql"] if args.postgresql else []
            cmd += ["--workers", str(args.workers)] if args.workers > 1 else []
            cmd += [] if args.compose is None else ["--compose" if args.compose
                                                    else "--no-compose"]
            subprocess.run(cmd, check=True)
            results.append(json.loads(answer.read_text()))
    table(results)


if __name__ == "__main__":
    main()
