"""`pbem serve` logs what happened, not the scheduler's bookkeeping: APScheduler's INFO
lines (job added, scheduler started, job run: two a poll) stay out of the log."""

from __future__ import annotations

import signal
import smtplib
import subprocess
import sys
import time
from pathlib import Path

from tests.mailstack import free_ports


def test_serve_does_not_log_the_schedulers_info_lines(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    config = tmp_path / "pbem.toml"
    config.write_text(f"""
[server]
database = "sqlite:///pbem.db"
address = "bluff@example.org"
referee = "referee@example.org"
referee_key = "k"
[listen]
host = "127.0.0.1"
port = {port}
""")
    proc = subprocess.Popen([sys.executable, "-m", "pbem", "serve", "-c", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                smtplib.SMTP("127.0.0.1", port, timeout=5).quit()
                break
            except OSError:
                assert proc.poll() is None
                assert time.monotonic() < deadline, "serve did not start listening"
                time.sleep(0.1)
        time.sleep(11)   # one tick of the 10-second listener poll runs meanwhile
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "listening for mail" in out          # pbem's own INFO lines stay
    assert "apscheduler" not in out and "alembic" not in out, out
