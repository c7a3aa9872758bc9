"""serve's SIGTERM / SIGINT: the handler takes no lock (pbem.runner.stop_signals).

Each case runs in a child process of its own: signal handlers belong to a process's main
thread, and a case that goes wrong hangs for good, which the parent sees and ends.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# The child holds the event's own lock, as serve's main thread does for a few steps of
# each Event.wait, and is sent SIGTERM: the handler runs there, with the lock held.
CHILD = """
import logging, os, signal, sys, threading
from pbem.runner.stop_signals import StopOnSignals
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
stop = threading.Event()
{handlers}
    with stop._cond:
        os.kill(os.getpid(), signal.{signal})
        print("handled with the lock held", flush=True)
    print("stopped" if stop.wait(20) else "not stopped", flush=True)
"""
OURS = "with StopOnSignals(stop):"
NAIVE = "signal.signal(signal.SIGTERM, lambda *_: stop.set())\nif True:"


def run_child(handlers: str, sig: str = "SIGTERM", seconds: float = 30
              ) -> subprocess.CompletedProcess[str]:
    code = CHILD.format(handlers=handlers, signal=sig)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=seconds, check=False)


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stop_signal_with_the_event_lock_held_stops(sig: str) -> None:
    done = run_child(OURS, sig)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["handled with the lock held", "stopped"], done.stdout
    # the reader thread's log line, on stderr
    assert done.stderr.splitlines() == [f"{sig}: stopping once the mail in hand is done"]


def test_the_handler_that_sets_the_event_itself_hangs_there() -> None:
    """Why the module exists: Event.set() in the handler waits for a lock its own thread
    holds. Should a Python make that safe, this fails and the pipe may go."""
    with pytest.raises(subprocess.TimeoutExpired) as hung:
        run_child(NAIVE, seconds=3)
    assert b"handled" not in (hung.value.stdout or b"")


def test_the_handlers_before_are_put_back() -> None:
    code = textwrap.dedent("""
        import signal, threading
        from pbem.runner.stop_signals import StopOnSignals
        before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        with StopOnSignals(threading.Event()) as ours:
            assert signal.getsignal(signal.SIGTERM) == ours._handle
            assert signal.getsignal(signal.SIGINT) == ours._handle
        assert {s: signal.getsignal(s) for s in before} == before
        assert [t.name for t in threading.enumerate()] == ["MainThread"]
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
