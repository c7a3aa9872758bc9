"""Round trips a handled order costs the database: statements and commits by kind.

N postal games (bench/scale.py's set-up: a real Dovecot, referee mail creating and
starting the games, every player's reply to its first report) and ONE tick handling
the turn, on SQLite and on a private PostgreSQL cluster (testkit/pgstack.py). During
the turn tick a listener on the server's engine (here, in the bench, not in pbem)
counts each statement the driver is handed (an executemany is one) by its verb and
table, and the transactions' begins, commits and rollbacks (none in AUTOCOMMIT; psycopg
sends those itself, and pbem runs SQLite's on the driver's connection), and on
PostgreSQL the pool's ping as a connection is checked out. Prints, per database, those counts per order
handled, the turn tick's ms per order, the total round trips and statements per order
(the round trips less BEGIN, COMMIT, ROLLBACK and the pool's ping), and the CPU
an order of pbem (this process) and of the PostgreSQL server (its processes'), and the
driver's CPU an order by statement (the calling thread's, from the cursor's execute to
its return: on SQLite the database's own work; BEGIN and COMMIT are not in it).

    python bench/round_trips.py                    # 50 games, SQLite and PostgreSQL
    python bench/round_trips.py --games 200 --databases postgresql
    python bench/round_trips.py --show "SELECT outbound_mail"   # that kind's statements
    python bench/round_trips.py --databases postgresql --statements   # the server's time
    python bench/round_trips.py --profile turn.prof   # cProfile: turn.prof.sqlite, ...
    python bench/round_trips.py --databases sqlite --no-compose   # reports with the turn

On SQLite a turn's reports are made by the composer ([server] compose_apart, on by
default) and its reads are its own process's: the tick's statements are counted, unless
--no-compose (the reports made in the turn's transaction, as on PostgreSQL).

With --statements the cluster is restarted with pg_stat_statements loaded, and the
server's execution and planning time over the turn tick is printed by statement.

Needs Dovecot and PostgreSQL's server binaries; run from the repository root.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event  # noqa: E402

from bench.scale import (  # noqa: E402
    SEATS,
    _Nothing,
    answers,
    bench_settings,
    count,
    deliver,
    referee_mails,
)
from pbem.runner.server import Server  # noqa: E402
from testkit.mailstack import MailStack  # noqa: E402
from testkit.pgstack import PgCluster  # noqa: E402

_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+\"?(\w+)", re.IGNORECASE)
_INNER = re.compile(r"\([^()]*\)")   # an innermost bracket: a subquery's tables are not the statement's
cpus: dict[str, tuple[float, float]] = {}   # a database's turn tick: CPU s of pbem, of the server
drivers: dict[str, Counter[str]] = {}   # a database's turn tick: the driver's s by kind
# the round trips that are no statement of pbem's (the transactions' ends, the pool's ping)
_NOT_STATEMENTS = ("BEGIN", "COMMIT", "ROLLBACK", "SELECT 1 (pool ping)")
_CALLED = re.compile(r"\s*SELECT\s+(\w+)\(", re.IGNORECASE)   # SELECT pg_advisory_xact_lock(...


def kind_of(statement: str) -> str:
    """A statement's verb and its first table outside any subquery: "SELECT games",
    "INSERT outbound_mail"."""
    words = statement.split(None, 1)
    verb = words[0].upper() if words else "?"
    outer = statement
    while _INNER.search(outer):
        outer = _INNER.sub(" ", outer)
    table = next((m for m in _TABLE.finditer(outer) if m.group(1).upper() != "AS"),
                 None) or _CALLED.match(statement)
    return f"{verb} {table.group(1)}" if table else verb


def server_cpu(pid: int) -> float:
    """CPU seconds the PostgreSQL server has used: its postmaster's own and its ended
    children's (reaped), and each live child's (the backends, the writer, ...)."""
    tick = os.sysconf("SC_CLK_TCK")

    def fields(path: Path) -> list[str]:
        return path.read_text().rsplit(")", 1)[1].split()   # after "(comm)"
    own = fields(Path(f"/proc/{pid}/stat"))
    total = sum(int(own[n]) for n in (11, 12, 13, 14))   # utime stime cutime cstime
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            child = fields(stat)
        except OSError:   # ended meanwhile
            continue
        if int(child[1]) == pid:   # ppid
            total += int(child[11]) + int(child[12])
    return total / tick


def autocommit(conn: Any) -> bool:
    return bool(conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT")


def statements_kept(cluster: PgCluster) -> None:
    """The server restarted with pg_stat_statements loaded (for --statements)."""
    import psycopg
    with psycopg.connect(cluster.url().replace("postgresql+psycopg", "postgresql"),
                         autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    cluster.restart()


def costliest(engine: Any, orders: int, top: int = 15) -> None:
    """The server's time by statement over the turn tick (pg_stat_statements)."""
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT calls, total_exec_time, total_plan_time, query FROM pg_stat_statements "
            "ORDER BY total_exec_time + total_plan_time DESC").all()
    total = sum(r[1] + r[2] for r in rows)
    print(f"\nthe server's time over the turn tick: {total / orders:.2f} ms an order "
          "(execution and planning, pg_stat_statements)")
    for calls, exec_ms, plan_ms, query in rows[:top]:
        print(f"{exec_ms / orders:7.3f} ms + plan {plan_ms / orders:5.3f} ms an order, "
              f"{calls / orders:5.2f} calls: {' '.join(query.split())[:150]}")


def run(database: str, games: int, seed: int, show: str | None = None,
        profile: str | None = None, statements: bool = False,
        compose: bool | None = None) -> tuple[Counter[str], int, float]:
    """The turn tick's round trips by kind, the orders it handled, its seconds."""
    postgresql = database == "postgresql"
    with MailStack(users=("bluff", "referee")) as stack, \
            tempfile.TemporaryDirectory(prefix="pbem-trips-") as tmp, \
            (PgCluster() if postgresql else _Nothing()) as cluster:
        if postgresql and statements:
            statements_kept(cluster)
        url = cluster.new_database() if postgresql else f"sqlite:///{Path(tmp) / 'trips.db'}"
        settings = bench_settings(stack, url, Path(tmp))
        # with the composer the tick's own statements (the composer's reads are its
        # process's); None: as the setting's default says
        server = Server(settings) if compose is None else Server(settings, compose_apart=compose)
        deliver(stack, referee_mails(stack, games), "referee mails")
        assert server.tick().processed, "the games were not started"
        orders = deliver(stack, answers(server.engine, random.Random(seed), True), "orders")
        trips: Counter[str] = Counter()
        shown: Counter[str] = Counter()
        began: list[float] = []
        driver_s = drivers[database] = Counter()

        def statement(conn: Any, cursor: Any, sql: str, params: Any, context: Any,
                      executemany: bool) -> None:
            kind = kind_of(sql) + (" (many)" if executemany else "")
            trips[kind] += 1
            if kind == show:
                shown[" ".join(sql.split())] += 1
            began[:] = [time.thread_time()]

        def executed(conn: Any, cursor: Any, sql: str, params: Any, context: Any,
                     executemany: bool) -> None:
            if began:   # the driver's time, by kind (--timed)
                kind = kind_of(sql) + (" (many)" if executemany else "")
                driver_s[kind] += time.thread_time() - began.pop()

        def ended(what: str) -> Any:
            def listener(conn: Any) -> None:
                if not autocommit(conn):   # psycopg sends no BEGIN, COMMIT then
                    trips[what] += 1
            return listener

        # BEGIN, COMMIT and ROLLBACK by the transactions' events: psycopg sends them itself,
        # pbem runs SQLite's on the driver's connection (pbem.store.engines._own_statement)
        listeners: list[tuple[str, Any]] = [
            ("before_cursor_execute", statement), ("after_cursor_execute", executed),
            ("begin", ended("BEGIN")), ("commit", ended("COMMIT")),
            ("rollback", ended("ROLLBACK"))]
        if postgresql:   # the pool pings at a checkout
            listeners += [("checkout", lambda *args: trips.update(["SELECT 1 (pool ping)"]))]
        for name, listener in listeners:
            event.listen(server.engine.pool if name == "checkout" else server.engine, name,
                         listener)
        profiler = cProfile.Profile() if profile else None
        if postgresql and statements:
            with server.engine.begin() as conn:
                conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                conn.exec_driver_sql("SELECT pg_stat_statements_reset()")
        served = server_cpu(cluster.server_pid()) if postgresql else 0.0
        clock, cpu = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        turn = server.tick()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{database}")
        seconds = time.perf_counter() - clock
        cpus[database] = (time.process_time() - cpu,
                          server_cpu(cluster.server_pid()) - served if postgresql else 0.0)
        for name, listener in listeners:
            event.remove(server.engine.pool if name == "checkout" else server.engine, name,
                         listener)
        second = count(server.engine, "SELECT count(*) FROM outbound_mail "
                                      "WHERE kind = 'report' AND turn = 2")
        if postgresql and statements:
            costliest(server.engine, orders)
        for sql, times in shown.most_common():
            print(f"{database}: {times / orders:.2f} an order: {sql}")
        assert turn.processed == orders and second == SEATS * games, (turn, second)
        server.close()
        server.engine.dispose()
        return trips, turn.processed, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--games", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--databases", nargs="+", default=["sqlite", "postgresql"],
                        choices=["sqlite", "postgresql"])
    parser.add_argument("--show", metavar="KIND",
                        help='print the statements of one kind, e.g. "SELECT outbound_mail"')
    parser.add_argument("--statements", action="store_true",
                        help="PostgreSQL: the server's costliest statements (pg_stat_statements)")
    parser.add_argument("--profile", metavar="FILE",
                        help="cProfile the turn tick into FILE.<database>")
    parser.add_argument("--compose", action=argparse.BooleanOptionalAction, default=None,
                        help="SQLite: [server] compose_apart (its default; the tick's "
                             "statements counted), or not (--no-compose)")
    args = parser.parse_args()
    results = {db: run(db, args.games, args.seed, args.show, args.profile, args.statements,
                       args.compose)
               for db in args.databases}
    kinds = sorted({k for trips, _, _ in results.values() for k in trips},
                   key=lambda k: -max(r[0][k] / r[1] for r in results.values()))
    print(f"\nround trips per order, one turn of {args.games} games\n")
    print("| statement | " + " | ".join(results) + " |")
    print("| --- |" + " ---: |" * len(results))
    for k in kinds:
        print(f"| {k} | " + " | ".join(f"{t[k] / n:.2f}" for t, n, _ in results.values()) + " |")
    print("| **all round trips** | "
          + " | ".join(f"**{sum(t.values()) / n:.2f}**" for t, n, _ in results.values()) + " |")
    print("| statements (BEGIN, COMMIT, ROLLBACK and the pool's ping apart) | "
          + " | ".join(f"{sum(v for k, v in t.items() if k not in _NOT_STATEMENTS) / n:.2f}"
                       for t, n, _ in results.values()) + " |")
    print("| ms per order (turn tick) | "
          + " | ".join(f"{1000 * s / n:.1f}" for _, n, s in results.values()) + " |")
    print("| CPU ms per order: pbem / the server | "
          + " | ".join(f"{1000 * cpus[db][0] / n:.1f} / {1000 * cpus[db][1] / n:.1f}"
                       for db, (_, n, _s) in results.items()) + " |")
    print("\nthe driver's CPU an order by statement (µs: the thread's, from the cursor's "
          "execute to its return)\n")
    print("| statement | " + " | ".join(results) + " |")
    print("| --- |" + " ---: |" * len(results))
    for k in sorted(kinds, key=lambda k: -max(drivers[db][k] / n
                                              for db, (_, n, _s) in results.items())):
        print(f"| {k} | " + " | ".join(f"{1e6 * drivers[db][k] / n:.0f}"
                                       for db, (_, n, _s) in results.items()) + " |")
    print("| **all** | " + " | ".join(f"**{1e6 * sum(drivers[db].values()) / n:.0f}**"
                                      for db, (_, n, _s) in results.items()) + " |")


if __name__ == "__main__":
    main()
