"""Every kind of claim is taken over at once when its holder is seen dead, and never when
it may be alive (pbem.store.claims): stored mail's claims, a game's lane (PostgreSQL), the
outbox's claims, the referee's lease and a share's fetch lease.

Seen dead: a pid of this machine (boot and pid namespace) that is gone, or our own pid
with another nonce (an earlier process that had our pid, as PID 1 after a container's
restart), or an older claim without a machine. Maybe alive: a live process, a claim of
another host, and our own pid on another machine of our host name: in another pid
namespace (a container that shares our host name runs as PID 1 too) or another boot (a
cloned VM has our name, our pids and our first pid namespace's inode). A bounded child
(pbem.runner.isolation) claims as its parent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path

import pytest
from sqlalchemy import Engine, update
from sqlmodel import Session, col

from pbem.outbox import table
from pbem.runner import inbox, isolation, lanes, storing
from pbem.store import claims
from pbem.store.claims import Lease, claimer_dead, me
from pbem.store.db import open_database
from pbem.store.models import InboundMail, OutboundMail, ServerState
from testkit.pgstack import PgCluster

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
LEASE = timedelta(minutes=5)


def _gone_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def holders() -> dict[str, tuple[str, bool]]:
    """Claimers by what they are: (the claim's name, taken over at once?)."""
    host, pid = claims._HOST, os.getpid()
    boot, ns = claims._MACHINE.boot, claims._MACHINE.namespace
    here = claims._MACHINE.tag
    return {
        "a process of this host that is gone": (f"{host}:{_gone_pid()}:{here}.abcd", True),
        "an earlier process with our pid": (f"{host}:{pid}:{here}.0000", True),
        "an older claim without a machine": (f"{host}:{_gone_pid()}:abcd", True),
        "our pid, in another pid namespace": (f"{host}:{pid}:{boot}-f00f.abcd", False),
        "our pid, on another boot": (f"{host}:{pid}:{'0' * 32}-{ns}.abcd", False),
        "our pid, named by its pid namespace alone": (f"{host}:{pid}:{ns}.abcd", False),
        "a live process of this host": (f"{host}:{os.getppid()}:{here}.abcd", False),
        "a process of another host": (f"elsewhere:{_gone_pid()}:{here}.abcd", False),
        "this process": (me(), False),
    }


HOLDERS = list(holders())


def test_what_is_seen_dead() -> None:
    for what, (owner, dead) in holders().items():
        assert claimer_dead(owner) is dead, what


def _mail(number: int) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "ann@example.org", "bluff@example.org", "hi"
    msg["Message-ID"] = f"<holder-{number}@example.org>"
    msg.set_content("HELP\n")
    return msg.as_bytes()


def _stored(engine: Engine, owner: str, number: int, lane: int | None = None) -> int:
    assert storing.store_inbound(engine, _mail(number), now=NOW, max_bytes=10**6, source="cli")
    with Session(engine) as session:
        session.execute(update(InboundMail).where(col(InboundMail.status) == "new")
                        .values(claimed_by=owner, claimed_at=NOW, lane=lane))
        session.commit()
    return inbox.newest_id(engine)


def _done(engine: Engine) -> None:
    with Session(engine) as session:
        session.execute(update(InboundMail).values(status="done"))
        session.commit()


def test_stored_mail(database: str) -> None:
    engine = open_database(database)
    for number, (what, (owner, dead)) in enumerate(holders().items()):
        row_id = _stored(engine, owner, number)
        got, _ = inbox.claim_page(engine, NOW + timedelta(seconds=1), LEASE)
        assert (got == [row_id]) is (dead or owner == me()), what
        later, _ = inbox.claim_page(engine, NOW + LEASE + timedelta(seconds=1), LEASE)
        assert later == [row_id], what           # whoever it was: the lease runs out
        _done(engine)


@pytest.mark.postgresql
def test_a_games_lane(pgcluster: PgCluster) -> None:
    engine = open_database(pgcluster.new_database())
    for number, (what, (owner, dead)) in enumerate(holders().items()):
        row_id = _stored(engine, owner, number, lane=7)
        got, holder = lanes.claim_lane(engine, NOW + timedelta(seconds=1), LEASE, 7,
                                       upto=row_id)
        assert (got == [row_id]) is (dead or owner == me()), what
        assert holder == (None if got else owner), what
        _done(engine)


def test_the_outbox(database: str) -> None:
    engine = open_database(database)
    for number, (what, (owner, dead)) in enumerate(holders().items()):
        with Session(engine) as session:
            session.execute(update(OutboundMail).values(status="sent"))
            session.add(OutboundMail(message_id=f"<m{number}@x>", kind="notice",
                                     mail_from="b@x", rcpts_json='["a@x"]',
                                     next_attempt_at=NOW, created_at=NOW, claimed_by=owner,
                                     claimed_at=NOW))
            session.commit()
        free, seen, _ = table.due(engine, NOW + timedelta(seconds=1), LEASE, table.START, 10)
        assert seen == 1, what
        assert bool(free) is dead, what


def test_the_leases(database: str) -> None:
    engine = open_database(database)
    for lease in ["referee", "fetch", "fetch 2/3"]:
        for what, (owner, dead) in holders().items():
            with Session(engine) as session:
                until = (NOW + LEASE).isoformat()
                row = session.get(ServerState, f"lease:{lease}") or ServerState(
                    key=f"lease:{lease}", value="")
                row.value = f'{{"owner": "{owner}", "until": "{until}"}}'
                session.add(row)
                session.commit()
            taken = Lease(engine, lease, lambda: NOW).try_acquire()
            assert taken is (dead or owner == me()), (lease, what)


# --- two workers that share a host name and a pid ----------------------------------------

# pairs of machines one host name may stand for: their pids say nothing of each other
TWINS = {
    # a clone has its own boot id, and the inode of the first pid namespace is the same
    # on every Linux kernel
    "cloned VMs": (claims.Machine("a" * 32, "effffffc"), claims.Machine("b" * 32, "effffffc")),
    "containers on one kernel": (claims.Machine("c" * 32, "f00a"),
                                 claims.Machine("c" * 32, "f00b")),
}


def _as_worker(monkeypatch: pytest.MonkeyPatch, machine: claims.Machine) -> str:
    """This process as a worker on ``machine`` (the identity injected): the same host
    name and pid as any other, a nonce of its own."""
    monkeypatch.setattr(claims, "_MACHINE", machine)
    monkeypatch.setattr(claims, "_me", None)
    return me()


@pytest.mark.parametrize("twins", list(TWINS))
def test_no_claim_is_taken_from_a_live_worker_of_the_same_name_and_pid(
        database: str, monkeypatch: pytest.MonkeyPatch, twins: str) -> None:
    first, second = TWINS[twins]
    engine = open_database(database)
    row_id = _stored(engine, _as_worker(monkeypatch, first), 0)
    assert Lease(engine, "referee", lambda: NOW).try_acquire()

    _as_worker(monkeypatch, second)           # the other worker: its pid is ours too
    assert inbox.claim_page(engine, NOW + timedelta(seconds=1), LEASE)[0] == []
    assert not Lease(engine, "referee", lambda: NOW).try_acquire()

    _as_worker(monkeypatch, first)            # the first, restarted with the same pid:
    assert inbox.claim_page(engine, NOW + timedelta(seconds=2), LEASE)[0] == [row_id]
    assert Lease(engine, "referee", lambda: NOW).try_acquire()   # an earlier incarnation's


# --- a bounded child ------------------------------------------------------------------


def _child_checks(parent: str) -> Callable[[], None]:   # run in the child
    def work() -> None:
        assert me() == parent                       # it claims as its parent
        assert not claimer_dead(parent)
        assert claimer_dead(f"{claims._HOST}:{os.getpid()}:{claims._MACHINE.tag}.0000")
    return work


def test_a_bounded_child_claims_as_its_parent() -> None:
    assert isolation.run_bounded(_child_checks(me())).code == 0
    assert isolation.run_bounded(lambda: _fails()).code == 1     # the check can fail


def _fails() -> None:
    raise AssertionError("on purpose")


def test_how_a_bounded_child_ends() -> None:
    def killed() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def spins() -> None:
        while True:
            pass

    def sleeps() -> None:
        time.sleep(30)

    assert isolation.run_bounded(killed).died
    out_of_cpu = isolation.run_bounded(spins, cpu_seconds=1, seconds=20)
    assert out_of_cpu.died and out_of_cpu.signal == signal.SIGXCPU and not out_of_cpu.timed_out
    started = time.monotonic()
    slow = isolation.run_bounded(sleeps, seconds=0.5)
    assert slow.died and slow.timed_out and time.monotonic() - started < 5
    assert str(slow) == "ran out of time"


def test_a_bounded_child_dies_with_its_parent(tmp_path: Path) -> None:
    """A parent killed while its child works: the child does not go on alone."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from pbem.runner import isolation\n"
        "def work():\n"
        f"    open({str(tmp_path / 'child')!r}, 'w').write(str(__import__('os').getpid()))\n"
        "    time.sleep(60)\n"
        "isolation.run_bounded(work)\n")
    parent = subprocess.Popen([sys.executable, str(script)],
                              env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    child_file = tmp_path / "child"
    # a Python that imports pbem and forks took 4 to 6 s under load: wait for it to
    # start (60 s at most), not a fixed ten seconds
    deadline = time.monotonic() + 60
    while not (child_file.exists() and child_file.read_text()):
        assert parent.poll() is None and time.monotonic() < deadline, "no child started"
        time.sleep(0.05)
    child = int(child_file.read_text())
    parent.kill()
    parent.wait()
    for _ in range(100):
        if claimer_dead(f"{claims._HOST}:{child}:{claims._MACHINE.tag}.abcd"):
            break
        time.sleep(0.05)
    assert claimer_dead(f"{claims._HOST}:{child}:{claims._MACHINE.tag}.abcd")


def test_a_stopped_holder_keeps_its_claims_and_a_killed_one_loses_them(tmp_path: Path) -> None:
    """What the e2e kill tests rely on (testkit.workers.kill_one_handling): a worker stopped
    with SIGSTOP is alive, so nobody takes its claims over and it claims nothing more while
    they are read; once SIGKILLed it is seen dead at once. (Read before and after a plain
    kill, a claim made in between was taken over before the second read: the e2e test saw
    a mail sent twice that neither read had.)"""
    from testkit.workers import Workers

    workers = Workers(tmp_path / "unused.toml", tmp_path)
    ticks = tmp_path / "ticks"
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, time\nn = 0\nwhile True:\n"
                              "    n += 1\n    open(sys.argv[1], 'w').write(str(n))\n"
                              "    time.sleep(0.002)", str(ticks)])
    workers.procs.append(child)
    try:
        deadline = time.monotonic() + 30
        while not (ticks.exists() and ticks.read_text()):
            assert time.monotonic() < deadline, "the child never ticked"
            time.sleep(0.01)
        owner = f"{claims._HOST}:{child.pid}:{claims._MACHINE.tag}.abcd"
        workers.pause(child.pid)
        stopped_at = ticks.read_text()
        time.sleep(0.1)
        assert ticks.read_text() == stopped_at           # a stopped worker does nothing
        assert claimer_dead(owner) is False               # ... and keeps its claims
        assert not claims.claim_stale(owner, NOW, NOW, LEASE)
        workers.kill(child.pid)
        assert claimer_dead(owner) is True                # killed, they are free at once
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
