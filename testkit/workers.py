"""Several real `pbem serve` processes (workers) on one database and one mailbox, for
tests/e2e/test_workers.py and bench/workers.py: their config, starting, killing and
stopping them, a burst of mail into the server's IMAP inbox, and waiting for the
database to show that the work is done.

Plain module (no pytest import), like testkit/mailstack.py and testkit/pgstack.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any, Self

from sqlalchemy import Engine, func
from sqlmodel import Session, col, select

from pbem.demo.robot_client import parse_mail, reply_to, report_view
from pbem.store.claims import Lease
from pbem.store.models import InboundMail, OutboundMail
from testkit.stack import stack_config

ROOT = Path(__file__).resolve().parent.parent
REFEREE_KEY = "workers-referee-key"


def write_config(path: Path, stack: Any, database: str, *, poll_seconds: float = 1.0,
                 lock_wait_seconds: float = 1.0, folder: str = "INBOX",
                 user: str = "bluff", fetchers: int = 1) -> Path:
    """A pbem.toml for workers: the database, user's (bluff's) IMAP folder (polled by up
    to ``fetchers`` workers at once), the stack's SMTP."""
    # a burst of HELP from three players is what answers_per_hour exists to stop; these
    # tests and benches measure handling, so every one is answered
    return stack_config(path, stack, database, REFEREE_KEY,
                        server={"lock_wait_seconds": lock_wait_seconds,
                                "answers_per_hour": 1_000_000},
                        imap={"folder": folder, "poll_seconds": poll_seconds,
                              "fetchers": fetchers}, user=user)


class Workers:
    """`pbem serve -c config` processes; each one's output goes to a log in folder."""

    def __init__(self, config: Path, folder: Path) -> None:
        self.config, self.folder = config, folder
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
        self.env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])

    def start(self, n: int = 1) -> list[int]:
        """Start n more workers; their pids."""
        pids = []
        for _ in range(n):
            log = open(self.folder / f"worker-{len(self.procs) + 1}.log", "wb")  # noqa: SIM115
            proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c",
                                     str(self.config)], stdout=log, stderr=subprocess.STDOUT,
                                    env=self.env, cwd=self.folder)
            log.close()   # the child has its own copy
            self.procs.append(proc)
            pids.append(proc.pid)
        return pids

    def pause(self, pid: int, timeout: float = 10) -> None:
        """SIGSTOP one worker and wait until the kernel has stopped it (state T)."""
        os.kill(pid, signal.SIGSTOP)
        stat = Path(f"/proc/{pid}/stat")
        deadline = time.monotonic() + timeout
        # the state follows the command's parentheses: "pid (comm) T ..."
        while stat.read_text().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {pid} not stopped after {timeout:.0f} s")
            time.sleep(0.005)

    def kill(self, pid: int) -> None:
        """SIGKILL one worker: no cleanup, as a power cut of its machine."""
        os.kill(pid, signal.SIGKILL)
        next(p for p in self.procs if p.pid == pid).wait(30)

    def stop(self, timeout: float = 60) -> dict[int, int]:
        """SIGTERM every worker still running (a clean stop); pid -> exit status."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        statuses = {}
        for proc in self.procs:
            try:
                statuses[proc.pid] = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                statuses[proc.pid] = proc.wait()
        return statuses

    def all_ticking(self) -> bool:
        """Has every worker started and finished a tick?"""
        logs = sorted(self.folder.glob("worker-*.log"))
        return len(logs) == len(self.procs) and all(
            ("the first tick is done" in text or "tick: " in text)
            for text in (log.read_text(errors="replace") for log in logs))

    def logs(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
                         for log in sorted(self.folder.glob("worker-*.log")))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def help_mail(stack: Any, user: str, n: int) -> bytes:
    msg = EmailMessage()
    msg["From"] = stack.address(user)
    msg["To"] = stack.address("bluff")
    msg["Subject"] = f"help {n}"
    msg["Message-ID"] = make_msgid(domain="burst.test")
    msg.set_content("HELP\n")
    return msg.as_bytes(policy=policy.SMTP)


def burst(stack: Any, users: list[str], n: int) -> list[str]:
    """n HELP mails from users (in turn) delivered into bluff's inbox; their Message-IDs."""
    ids = []
    for i in range(n):
        raw = help_mail(stack, users[i % len(users)], i)
        ids.append(str(parse_mail(raw)["Message-ID"]))
        stack.deliver("bluff", raw, mail_from=stack.address(users[i % len(users)]))
    return ids


def reports_by_game(stack: Any, users: list[str]) -> dict[str, dict[str, EmailMessage]]:
    """game -> user -> the latest report of that game in the user's INBOX (report.json)."""
    found: dict[str, dict[str, EmailMessage]] = {}
    for user in users:
        for raw in stack.fetch_all(user):
            msg = parse_mail(raw)
            view = report_view(msg)
            if view is not None and msg["In-Reply-To"] is None:
                found.setdefault(str(view["game"]), {})[user] = msg   # the later wins
    return found


def burst_replies(stack: Any, reports: dict[str, dict[str, EmailMessage]], n: int,
                  lines: tuple[str, ...] = ("HELP",)) -> list[tuple[str, bytes]]:
    """n replies (HELP) of the players of the games of ``reports`` (game -> user -> their
    latest report) to their reports, the games in turn: (game, raw) each. On PostgreSQL
    each is handled in its game's lane."""
    games = sorted(reports)
    replies = []
    for i in range(n):
        game = games[i % len(games)]
        users = sorted(reports[game])
        user = users[(i // len(games)) % len(users)]
        replies.append((game, reply_to(reports[game][user], stack.address(user), list(lines))))
    return replies


def games_burst(stack: Any, reports: dict[str, dict[str, EmailMessage]], n: int,
                server_of: Callable[[str], str] = lambda game: "bluff") -> list[str]:
    """burst_replies put straight into the INBOX of each game's server account
    (server_of); their Message-IDs."""
    raws: dict[str, list[bytes]] = {}
    for game, raw in burst_replies(stack, reports, n):
        raws.setdefault(server_of(game), []).append(raw)
    for account, mails in raws.items():
        stack.deliver_many(account, mails)
    return [str(parse_mail(raw)["Message-ID"]) for mails in raws.values() for raw in mails]


def counts(engine: Engine) -> dict[str, int]:
    """Inbound mail by status and outbound mail by status, as one dict (in:new, out:sent ...)."""
    with Session(engine) as session:
        inbound = session.exec(select(InboundMail.status, func.count())
                               .group_by(InboundMail.status)).all()
        outbound = session.exec(select(OutboundMail.status, func.count())
                                .group_by(OutboundMail.status)).all()
    return {**{f"in:{s}": n for s, n in inbound}, **{f"out:{s}": n for s, n in outbound}}


def lease_holder_pid(engine: Engine, name: str = "referee") -> int | None:
    """The pid of the process holding a lease (host:pid:nonce), None when free."""
    owner = Lease(engine, name, lambda: datetime.now(UTC)).holder()
    return int(owner.split(":")[1]) if owner else None


def handling_pids(engine: Engine) -> set[int]:
    """The pids of the processes holding a claim on new inbound mail: the workers handling
    mail now (on PostgreSQL several, each a game's lane; on SQLite the lease's holder)."""
    with Session(engine) as session:
        owners = session.exec(select(InboundMail.claimed_by).where(
            InboundMail.status == "new", col(InboundMail.claimed_by).is_not(None))).all()
    return {int(owner.split(":")[1]) for owner in owners if owner}


def in_flight(engine: Engine, pid: int) -> set[str]:
    """Message-IDs of the outbound mail the worker ``pid`` has claimed and not sent."""
    with Session(engine) as session:
        return {m.message_id for m in session.exec(
            select(OutboundMail).where(col(OutboundMail.claimed_by).contains(f":{pid}:"),
                                       OutboundMail.status == "pending"))}


def kill_one_handling(workers: Workers, engine: Engine, among: set[int],
                      done_at_least: int) -> dict[str, Any] | None:
    """Once ``done_at_least`` inbound mails are done: SIGKILL a worker of ``among`` that
    holds inbound mail now and start another in its place, as systemd's Restart= would.
    What happened (pid; in_flight: the Message-IDs of what it may have been sending;
    done_then: the mails done then), or None when it is not time yet or no worker of
    ``among`` holds mail.

    The worker is stopped (SIGSTOP) before its claims are read and killed after: a
    stopped process claims nothing more, and while it lives nobody takes its claims
    over, so the read is exactly what it held. (Read before and after a plain kill, a
    mail it claimed in between could be taken over by another worker before the second
    read: sent twice, yet in neither read.)"""
    if counts(engine).get("in:done", 0) < done_at_least:
        return None
    pid = next(iter(sorted(handling_pids(engine) & among)), None)
    if pid is None:
        return None
    workers.pause(pid)
    sending = in_flight(engine, pid)
    workers.kill(pid)
    killed = {"pid": pid, "in_flight": sending, "done_then": counts(engine).get("in:done", 0)}
    workers.start(1)
    return killed


def handled_by(engine: Engine) -> Counter[int]:
    """How many inbound mails each process (pid) handled (claimed last, now done)."""
    with Session(engine) as session:
        owners = session.exec(select(InboundMail.claimed_by).where(
            InboundMail.status == "done")).all()
    return Counter(int(owner.split(":")[1]) for owner in owners if owner)


def wait_until(done: Callable[[], bool], timeout: float, what: str,
               poll: float = 0.2) -> float:
    """Poll done() until true; seconds it took."""
    start = time.monotonic()
    while not done():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what}: not after {timeout:.0f} s")
        time.sleep(poll)
    return time.monotonic() - start


def received(stack: Any, user: str) -> Counter[str]:
    """How often each Message-ID arrived in user's INBOX."""
    return Counter(str(parse_mail(raw)["Message-ID"]) for raw in stack.fetch_all(user))
