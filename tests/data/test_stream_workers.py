"""A server's Streams send on threads it keeps from tick to tick (pbem.outbox.Workers):
each tick's stream sends all its mail, once, and no tick after the first starts a
thread; the kept threads end with close, and a stream left open on them does not keep
the process from exiting."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from pbem import outbox
from pbem.outbox import Origin, Workers
from pbem.store.db import open_database
from testkit.stored import outbound_rows
from tests.data.test_outbox_drain import NOW, Flaky, stream_queue

ROOT = Path(__file__).resolve().parents[2]


def kept_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"{name}-")]


def test_each_ticks_stream_sends_on_the_threads_the_first_started(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path}/pbem.db")
    origin = Origin("bluff@x.test")
    sender = Flaky(0, RuntimeError())
    workers = Workers("test-kept")
    try:
        for tick in range(3):
            stream = outbox.Stream(engine, sender.opened, lambda: NOW, connections=3,
                                   workers=workers)
            stream.feed(stream_queue(engine, stream, origin, ["a@x.test", "b@x.test"]))
            stream.feed(stream_queue(engine, stream, origin, ["a@x.test", "c@x.test"]))
            report = stream.close()
            assert (report.sent, report.released) == (4, 0)
            assert len(sender.sent) == 4 * (tick + 1)
            # three connections, three threads, started by the first tick alone
            assert workers.started == 3
        assert [(r.status, r.claimed_by) for r in outbound_rows(engine)] == [("sent", None)] * 12
        assert len(kept_threads("test-kept")) == 3
    finally:
        workers.close()
    for thread in kept_threads("test-kept"):
        thread.join(5)
    assert kept_threads("test-kept") == []


def test_closed_workers_end_their_threads_and_take_the_next_job_on_a_new_one() -> None:
    """A server closed between ticks (its kept connections dropped) ticks again: its
    workers, closed, still send (pbem.runner.Server.close, tests/e2e/test_oauth.py)."""
    workers = Workers("test-reopen")
    try:
        release = threading.Event()
        busy = workers.run(release.wait)
        assert workers.run(lambda: None).wait(5)   # a second thread, idle after its job
        workers.close()
        release.set()
        assert busy.wait(5)
        for thread in kept_threads("test-reopen"):
            thread.join(5)   # the idle one at close, the busy one after its job
        assert kept_threads("test-reopen") == []
        done: list[int] = []
        assert workers.run(lambda: done.append(1)).wait(5)
        assert done == [1] and workers.started == 3
    finally:
        workers.close()


def test_a_job_that_raises_leaves_its_thread_for_the_next() -> None:
    workers = Workers("test-raise")
    try:
        def fail() -> None:
            raise RuntimeError("boom")
        assert workers.run(fail).wait(5)
        done: list[int] = []
        assert workers.run(lambda: done.append(1)).wait(5)
        assert done == [1] and workers.started == 1
    finally:
        workers.close()


def test_a_kept_thread_idle_too_long_ends_and_the_next_job_starts_another() -> None:
    workers = Workers("test-idle", idle_seconds=0.2)
    try:
        assert workers.run(lambda: None).wait(5)
        assert len(kept_threads("test-idle")) == 1
        for thread in kept_threads("test-idle"):
            thread.join(5)   # idle past 0.2 s: it ends
        assert kept_threads("test-idle") == []
        done: list[int] = []
        assert workers.run(lambda: done.append(1)).wait(5)
        assert done == [1] and workers.started == 2
    finally:
        workers.close()


def test_a_stream_left_open_on_kept_threads_does_not_keep_the_process_from_exiting(
        tmp_path: Path) -> None:
    script = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from pbem import outbox
from pbem.store.db import open_database
from tests.data.test_outbox_drain import NOW, Flaky, stream_queue

engine = open_database("sqlite:///{tmp_path}/pbem.db")
stream = outbox.Stream(engine, Flaky(0, RuntimeError()).opened, lambda: NOW,
                       workers=outbox.Workers())
stream.feed(stream_queue(engine, stream, outbox.Origin("bluff@x.test"), ["a@x.test"]))
print("fed")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "fed", done.stderr
