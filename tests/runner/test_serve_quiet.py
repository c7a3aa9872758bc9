"""`pbem serve` logs what happened, not the scheduler's bookkeeping: APScheduler's INFO
lines (job added, scheduler started, job run: two a poll) stay out of the log. A poll
that comes late (the machine stalled, the process was stopped) still runs: it is not
skipped with a "missed" warning."""

from __future__ import annotations

import logging
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pbem.cli import quiet_libraries
from pbem.runner.server import poll_scheduler
from testkit.net import free_ports
from testkit.serve import listen_config, serving


def test_serve_does_not_log_the_schedulers_info_lines(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port)
    with serving(config, port, module="pbem") as (proc, smtp):
        smtp.quit()
        time.sleep(11)   # one tick of the 10-second listener poll runs meanwhile
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "listening for mail" in out          # pbem's own INFO lines stay
    assert "apscheduler" not in out and "alembic" not in out, out
    assert "handling connection" not in out, out   # nor aiosmtpd's, five a connection


def test_a_late_poll_runs_late_and_is_not_skipped(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port)
    with serving(config, port, module="pbem") as (proc, smtp):
        smtp.quit()
        time.sleep(7)
        proc.send_signal(signal.SIGSTOP)   # a stall across the second poll, due at 10 s
        time.sleep(6)
        proc.send_signal(signal.SIGCONT)
        time.sleep(1.5)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "missed" not in out, out


def test_a_tick_longer_than_the_poll_interval_delays_the_next_one_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    """A big turn's tick runs longer than the poll interval: the starts that come
    meanwhile are dropped (one tick at a time), and the log does not say so at every
    poll (APScheduler's "skipped: maximum number of running instances reached")."""
    libraries = [logging.getLogger(name) for name in ("apscheduler", "alembic", "mail.log")]
    levels = [logger.level for logger in libraries]
    quiet_libraries()   # as pbem serve does
    starts: list[float] = []

    def slow_tick() -> None:
        starts.append(time.monotonic())
        time.sleep(0.35)

    try:
        with caplog.at_level(logging.DEBUG):
            scheduler = poll_scheduler(0.1, slow_tick, lambda: None,
                                       datetime.now(UTC) + timedelta(seconds=0.05))
            scheduler.start()
            time.sleep(1.3)
            scheduler.shutdown(wait=True)
    finally:   # the other tests' logging as it was
        for logger, level in zip(libraries, levels):
            logger.setLevel(level)
    assert len(starts) >= 2, starts                               # it goes on
    assert all(b - a >= 0.35 for a, b in zip(starts, starts[1:]))   # one at a time
    said = [r.getMessage() for r in caplog.records
            if r.name.startswith("apscheduler") and r.levelno >= logging.WARNING]
    assert said == []
