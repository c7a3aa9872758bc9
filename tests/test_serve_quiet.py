"""`pbem serve` logs what happened, not the scheduler's bookkeeping: APScheduler's INFO
lines (job added, scheduler started, job run: two a poll) stay out of the log. A poll
that comes late (the machine stalled, the process was stopped) still runs: it is not
skipped with a "missed" warning."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.netkit import free_ports
from tests.servekit import listen_config, serving


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
