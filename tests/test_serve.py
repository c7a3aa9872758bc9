"""`pbem serve` as a real process: takes mail on its SMTP listener, answers it, stops on SIGTERM."""

from __future__ import annotations

import signal
import smtplib
import subprocess
import sys
import time
from email import policy
from email.message import EmailMessage
from pathlib import Path

from tests.mailstack import free_ports


def test_serve_answers_mail_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    config = tmp_path / "pbem.toml"
    config.write_text(f"""
[server]
database = "sqlite:///pbem.db"
address = "bluff@example.org"
referee = "referee@example.org"
referee_key = "k"
outbox_dir = "out"
[listen]
host = "127.0.0.1"
port = {port}
""")
    proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                smtp = smtplib.SMTP("127.0.0.1", port, timeout=5)
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                assert time.monotonic() < deadline, "serve did not start listening"
                time.sleep(0.1)
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = "ann@example.org", "bluff@example.org", "help"
        msg["Message-ID"] = "<serve-test@example.org>"
        msg.set_content("HELP\n")
        with smtp:
            smtp.sendmail("ann@example.org", ["bluff@example.org"], msg.as_bytes(policy=policy.SMTP))
        # SIGTERM right away: the clean stop must still process and answer the mail in hand
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
    answers = list((tmp_path / "out").glob("*.eml"))
    assert len(answers) == 1
    text = answers[0].read_bytes()
    assert b"ann@example.org" in text and b"<serve-test@example.org>" in text
