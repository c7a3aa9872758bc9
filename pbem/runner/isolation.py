"""A piece of work run in a bounded child process: does it kill whoever runs it?

A process that dies while handling a mail may have been killed from outside (a
restart, a deploy, an OOM killer that picked it for its size) or by the mail. To
tell the two apart, the mail is handled again in a forked child (``run_bounded``)
with limits of its own: memory (RLIMIT_AS: its size at the fork and ``memory``
bytes more), CPU time (RLIMIT_CPU) and wall time (killed after ``seconds``). The
parent watches: a child that ends by a signal, or runs out of time, died of its
work; a kill of the whole service takes the parent with it, and a parent that
died tells nothing, so an outside kill is never held against the work.

The child dies with its parent (PR_SET_PDEATHSIG on Linux), so no child goes on
alone after its parent was killed and keeps what it holds.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import resource
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from pbem.store import claims, faults

log = logging.getLogger(__name__)

SECONDS = 120.0              # a child's wall time, at most
CPU_SECONDS = 60             # and its CPU time
MEMORY = 1024 * 1024 * 1024  # bytes it may grow by beyond its size at the fork

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Ending:
    """How a bounded child ended: ``code`` its exit code (None: killed by ``signal``,
    or stopped by us for running out of wall time: ``timed_out``)."""

    code: int | None
    signal: int | None = None
    timed_out: bool = False

    @property
    def died(self) -> bool:
        """Did the work kill its process (a signal, a limit, the wall time)?"""
        return self.code is None

    def __str__(self) -> str:
        if self.timed_out:
            return "ran out of time"
        if self.signal is not None:
            return f"killed by {signal.Signals(self.signal).name}"
        return f"exit code {self.code}"


def _size() -> int:
    """This process's address space now (bytes)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _bounded(work: Callable[[], None], memory: int, cpu_seconds: int, parent: int,
             claimer: str) -> None:
    if sys.platform.startswith("linux"):   # die with the parent, never alone
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:   # the parent died before the line above: nothing to do
        os._exit(3)
    faults.work_for(parent)
    claims.act_for(claimer)
    size = _size()
    if size:
        _limit(resource.RLIMIT_AS, size + memory)
    _limit(resource.RLIMIT_CPU, int(resource.getrusage(resource.RUSAGE_SELF).ru_utime)
           + cpu_seconds)
    work()


def _limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, hard))
    except (ValueError, OSError):   # not allowed here: the wall time still bounds it
        log.warning("could not limit the child (%s)", which)


def run_bounded(work: Callable[[], None], *, seconds: float = SECONDS,
                memory: int = MEMORY, cpu_seconds: int = CPU_SECONDS) -> Ending:
    """Run ``work`` in a forked child bounded in memory, CPU and wall time; how it ended.
    The child claims as this process (pbem.store.claims.act_for: it holds what we hold, and
    a crash point in it kills us, pbem.store.faults.work_for). It exits 0 when ``work``
    returns, 1 when it raises (logged)."""
    child = multiprocessing.get_context("fork").Process(
        target=_bounded, args=(work, memory, cpu_seconds, os.getpid(), claims.me()),
        daemon=True)
    with warnings.catch_warnings():
        # Python 3.12 warns of a fork beside threads (the outbox's senders): the child
        # touches none of their state, only a database connection of its own
        warnings.simplefilter("ignore", DeprecationWarning)
        child.start()
    child.join(seconds)
    if child.exitcode is None:
        child.kill()
        child.join()
        return Ending(None, signal.SIGKILL, timed_out=True)
    code = child.exitcode
    child.close()
    return Ending(None, -code) if code < 0 else Ending(code)
