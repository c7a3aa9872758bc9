"""Claims and leases. A process that takes a mail (or the referee's lease) writes
who it is, ``host:pid:machine.nonce``, and when. Another process may take the
thing over when that claim is older than the lease, or at once when the claimer
is visibly dead: on the same machine, and its pid is gone (or is our own pid with
another nonce: an earlier incarnation of this process, as after a restart that
gave the new process the dead one's pid, PID 1 in a container).

"The same machine" is where a pid names one process: this boot of this kernel
(its random boot id, new at every boot and on every clone of a VM) and this pid
namespace (a container has its own). A host name says nothing here: two containers
that share one (host networking) both run as PID 1, and cloned VMs share their
name, their pids and the inode of their first pid namespace; each sees the other's
claims as another machine's, which run out with their lease, never as its own dead
ones. A bounded child that handles a mail for its parent (pbem.runner.isolation) claims as
its parent (``act_for``), and dies with it.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, case, insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from pbem.store.driver import unindexed
from pbem.store.models import ServerState

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Machine:
    """Where a pid names one process: a boot of a kernel and a pid namespace."""

    boot: str        # /proc/sys/kernel/random/boot_id, "" where it cannot be read
    namespace: str   # the pid namespace's inode, in hex, "" where it cannot be read

    @property
    def tag(self) -> str:
        """As a claim names it; "" when unknown (then no claimer is ever judged dead)."""
        return f"{self.boot}-{self.namespace}" if self.boot and self.namespace else ""


def this_machine() -> Machine:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")
    except OSError:
        boot = ""
    try:
        namespace = format(os.stat("/proc/self/ns/pid").st_ino, "x")
    except OSError:
        namespace = ""
    return Machine(boot, namespace)


_HOST = socket.gethostname()
_MACHINE = this_machine()
_me: tuple[int, str] | None = None
_for: tuple[int, str] | None = None   # (our pid, the parent's claimer name): act_for


def me() -> str:
    """This process as a claimer: host:pid:machine.nonce (a new nonce after a fork):
    the machine's tag (Machine.tag), a dot and random hex."""
    global _me
    pid = os.getpid()
    if _for is not None and _for[0] == pid:
        return _for[1]
    if _me is None or _me[0] != pid:
        _me = (pid, f"{_MACHINE.tag}.{secrets.token_hex(4)}")
    return f"{_HOST}:{pid}:{_me[1]}"


def act_for(parent: str) -> None:
    """This (forked) process claims as ``parent``, the claimer it works for: it holds
    what its parent holds, and must not outlive it (pbem.runner.isolation)."""
    global _for
    _for = (os.getpid(), parent)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a killed child not yet reaped by its parent is a zombie: dead to us
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def claimer_dead(owner: str | None) -> bool:
    """True only when we can see that the claimer is gone; False when unsure.

    Seen only on this machine (a claim's tag says which: Machine; an older claim
    without one is taken as of ours). Our own pid with another nonce is an earlier
    process that had our pid: dead, since a pid is one process's at a time; unless it
    is the claimer we act for (a bounded child's parent) or ours."""
    if not owner:
        return True
    host, _, rest = owner.partition(":")
    pid_text, _, nonce = rest.partition(":")
    if host != _HOST or not pid_text.isdigit() or not _MACHINE.tag:
        return False
    machine, dot, _ = nonce.rpartition(".")
    if dot and machine != _MACHINE.tag:   # another machine's pids: not ours to see
        return False
    if owner == me() or (_for is not None and owner == _for[1]):
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    return not _pid_alive(pid)


def claim_stale(owner: str | None, claimed_at: datetime | None, now: datetime,
                lease: timedelta) -> bool:
    """May this claim be taken over: nobody holds it, its lease ran out, or its holder died."""
    if owner is None or claimed_at is None:
        return True
    if owner == me():
        return False
    if aware(claimed_at) + lease <= aware(now):
        return True
    return claimer_dead(owner)


def aware(when: datetime) -> datetime:
    """A time read back from the database as UTC (SQLite returns it without a zone)."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def claim(session: Session, table: Any, row_id: int, owner: str | None, now: datetime, *,
          status: str, count: bool = False) -> bool:
    """Claim a row of ``table`` (an inbound or outbound mail) for this process.

    A compare-and-swap on claimed_by: the row must still have ``status`` and
    the claimer seen before (``owner``; None: nobody), so of two processes
    that saw the same free or stale claim only one gets it. With ``count`` its attempts
    are counted too (one more), by the same statement. The caller commits.
    """
    same_owner = (col(table.claimed_by).is_(None) if owner is None
                  else col(table.claimed_by) == owner)
    counted = {"attempts": col(table.attempts) + 1} if count else {}
    # Core on the session's connection: an ORM-enabled update costs ten times more
    done = session.connection().execute(update(table).where(
        col(table.id) == row_id, col(table.status) == status, same_owner)
        .values(claimed_by=me(), claimed_at=now, **counted))
    return bool(done.rowcount == 1)


@lru_cache(maxsize=16)
def _claim_free(table: Any, status: str, counting: bool) -> Any:
    """claim_many's UPDATE of the free rows (:rows) of ``table`` in ``status``, counting
    the attempts of :counted (``counting``): built once, as it runs at every claim (a
    tick's page of mail, the outbox's)."""
    more = {"attempts": col(table.attempts) + case(
        (col(table.id).in_(bindparam("counted", expanding=True)), 1), else_=0)} \
        if counting else {}
    return (update(table)
            .where(col(table.id).in_(bindparam("rows", expanding=True)),
                   unindexed(col(table.status)) == status,   # found by the ids
                   col(table.claimed_by).is_(None))
            .values(claimed_by=bindparam("me"), claimed_at=bindparam("now"), **more)
            .returning(col(table.id)))


def claim_many(session: Session, table: Any, seen: list[tuple[int, str | None]],
               now: datetime, *, status: str, counted: Collection[int] = ()) -> list[int]:
    """Claim the rows ``seen`` (id, claimer seen before) as ``claim`` does, one by one in
    effect; returns the ids we got, in the order given. The free rows (the common
    case) are claimed by one UPDATE; a row someone else took meanwhile is not ours,
    as with ``claim``, even for another thread of this process. The rows of ``counted``
    claimed have their attempts counted too (one more), by the statement that claims
    them (pbem.runner.lanes.claim_lane: a round trip, not two). The caller commits."""
    free = [row_id for row_id, owner in seen if owner is None]
    got: set[int] = set()
    if free:   # RETURNING: exactly the rows this statement took (SQLite >= 3.35)
        values: dict[str, Any] = {"rows": free, "me": me(), "now": now}
        if counted:
            values["counted"] = sorted(counted)
        got.update(session.connection().execute(
            _claim_free(table, status, bool(counted)), values).scalars())
    got.update(row_id for row_id, owner in seen
               if owner is not None and claim(session, table, row_id, owner, now,
                                              status=status, count=row_id in counted))
    return [row_id for row_id, _ in seen if row_id in got]


@dataclass
class Waits:
    """What a tick waited for, how long (wall seconds) and on whom, for its log line: a
    lease another process held, a lane of mail another worker held (left to it), a lock
    of the database (a game's, the one writer's)."""

    seconds: dict[str, float] = field(default_factory=dict)
    whom: dict[str, set[str]] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, seconds: float, whom: str | None = None) -> None:
        self.seconds[what] = self.seconds.get(what, 0.0) + seconds
        self.times[what] = self.times.get(what, 0) + 1
        if whom:
            self.whom.setdefault(what, set()).add(whom)

    def worth_saying(self, at_least: float = 0.05) -> bool:
        """Did the tick wait a noticeable while (a tick that left work to another process
        says so only with what it did)?"""
        return any(secs >= at_least for secs in self.seconds.values())

    def __str__(self) -> str:
        parts = []
        for what, secs in self.seconds.items():
            whom = sorted(self.whom.get(what, ()))
            on = f" (on {', '.join(whom[:3])}{' ...' if len(whom) > 3 else ''})" if whom else ""
            parts.append(f"{what}: {secs:.2f} s, {self.times[what]} times{on}")
        return "; ".join(parts)


# --------------------------------------------------------------------------- the lease


_LEASE_VALUE = select(ServerState.value).where(col(ServerState.key) == bindparam("lease"))
_SWAP = update(ServerState).where(
    col(ServerState.key) == bindparam("lease"), col(ServerState.value) == bindparam("old")
).values(value=bindparam("new"))


class Lease:
    """A named lease in the server_state table: one holder at a time, across processes.

    ``acquire`` is a compare-and-swap on the row's value, so two processes can
    never both believe they hold it; a holder that crashed is replaced at once
    on the same host, or when its lease time has run out.
    """

    def __init__(self, engine: Any, name: str, clock: Callable[[], datetime],
                 seconds: float = 300.0) -> None:
        self.engine = engine
        self.key = f"lease:{name}"
        self.clock = clock
        self.seconds = seconds
        self._value: str | None = None
        self.refused_by: str | None = None   # the holder the last refused try saw

    def other_holder(self) -> str | None:
        """Who else holds the lease now (a live holder whose time has not run out), or
        None: a look, the lease is not taken."""
        with self.engine.connect() as conn:
            value = conn.execute(_LEASE_VALUE, {"lease": self.key}).scalar_one_or_none()
        if value is None:
            return None
        current = json.loads(value)
        owner, until = current.get("owner"), current.get("until")
        if not owner or owner == me() or until is None or claimer_dead(owner) or \
                aware(datetime.fromisoformat(until)) <= aware(self.clock()):
            return None
        return str(owner)

    def _new_value(self) -> str:
        until = self.clock() + timedelta(seconds=self.seconds)
        return json.dumps({"owner": me(), "until": until.isoformat()})

    def holder(self) -> str | None:
        with Session(self.engine) as session:
            row = session.get(ServerState, self.key)
            return json.loads(row.value).get("owner") if row is not None else None

    def try_acquire(self) -> bool:
        new = self._new_value()
        try:
            with self.engine.begin() as conn:   # Core: a tick takes two leases
                value = conn.execute(_LEASE_VALUE, {"lease": self.key}).scalar_one_or_none()
                if value is None:
                    conn.execute(insert(ServerState).values(key=self.key, value=new))
                else:
                    current = json.loads(value)
                    owner = current.get("owner")
                    until = (datetime.fromisoformat(current["until"]) if current.get("until")
                             else None)
                    if owner and owner != me() and until is not None and \
                            aware(until) > aware(self.clock()) and not claimer_dead(owner):
                        self.refused_by = owner   # named as seen: it may release at once
                        return False
                    if conn.execute(_SWAP, {"lease": self.key, "old": value,
                                            "new": new}).rowcount != 1:
                        self.refused_by = "another process"   # it swapped in meanwhile
                        return False
        except IntegrityError:   # another process created it first
            self.refused_by = "another process"
            return False
        self._value = new
        return True

    def acquire(self, wait: float = 0.0, poll: float = 0.05) -> bool:
        """Take the lease, waiting up to ``wait`` seconds (real time) for its holder."""
        deadline = time.monotonic() + wait
        while True:
            if self.try_acquire():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
            poll = min(poll * 2, 1.0)

    def renew(self) -> bool:
        """Push our lease's end further; False if we no longer hold it."""
        return self._swap(self._new_value())

    def release(self) -> None:
        self._swap(json.dumps({"owner": None, "until": None}))
        self._value = None

    def _swap(self, new: str) -> bool:
        if self._value is None:
            return False
        with self.engine.begin() as conn:
            done = conn.execute(_SWAP, {"lease": self.key, "old": self._value, "new": new})
        if done.rowcount != 1:
            self._value = None
            return False
        self._value = new
        return True
