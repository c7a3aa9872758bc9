"""`pbem serve` as a real process: takes mail on its SMTP listener, answers it, stops on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from email import policy
from email.message import EmailMessage
from pathlib import Path

from pbem.runner.ticking import TickReport
from testkit.net import free_ports
from testkit.serve import listen_config, serving


def test_serve_answers_mail_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port, outbox_dir="out")
    with serving(config, port) as (proc, smtp):
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
    # the tick that answered says where its time went
    took = re.search(r"processed 1, .*sent 1, .*; took ([\d.]+) s \(fetching ([\d.]+), "
                     r"handling ([\d.]+), sending ([\d.]+)\)", out)
    assert took is not None, out
    total, *phases = map(float, took.groups())
    # each figure is rounded to 0.01: three phases and their total differ by at most 0.02
    assert float(took.group(3)) > 0 and abs(sum(phases) - total) <= 0.02, out
    answers = list((tmp_path / "out").glob("*.eml"))
    assert len(answers) == 1
    text = answers[0].read_bytes()
    assert b"ann@example.org" in text and b"<serve-test@example.org>" in text


def test_serve_stops_at_start_on_a_template_that_does_not_compile(tmp_path: Path) -> None:
    """A referee's broken override is found before the first mail, not by it."""
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port, outbox_dir="out")
    config.write_text(config.read_text().replace(
        'outbox_dir = "out"', 'outbox_dir = "out"\ntemplates_dir = "house"'))
    (tmp_path / "house").mkdir()
    (tmp_path / "house" / "error.txt.j2").write_text("Sorry:\n{% for line in lines %}\n")
    proc = subprocess.run([sys.executable, "-m", "pbem.cli", "serve", "-c", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "config error: template" in proc.stderr and "error.txt.j2, line 2" in proc.stderr, \
        proc.stderr


def test_a_tick_report_says_where_its_time_went_only_when_it_did_something() -> None:
    busy = TickReport(processed=2, sent=3,
                      seconds={"fetching": 0.012, "handling": 0.25, "sending": 0.5})
    assert str(busy).endswith("; took 0.76 s (fetching 0.01, handling 0.25, sending 0.50)")
    idle = TickReport(seconds={"fetching": 0.01, "handling": 0.0, "sending": 0.0})
    assert "took" not in str(idle)
    assert str(idle) == "fetched 0, processed 0, turns resolved 0, sent 0, deferred 0, failed 0"


def test_start_up_compiles_the_templates_then_sets_what_is_loaded_aside_from_the_collector(
        tmp_path: Path) -> None:
    """serve's start: every template compiled, then all loaded so far frozen (gc.freeze), so
    the collector does not walk it again in every full collection. In a process of its
    own: freezing this one would keep the tests' objects."""
    code = (
        "import gc\n"
        "from pbem.config import Settings\n"
        "from pbem.runner.server import Server\n"
        f"server = Server(Settings(database='sqlite:///{tmp_path}/p.db', "
        "address='bluff@example.org', referee='ref@example.org', "
        f"outbox_dir='{tmp_path}/out'))\n"
        "before = gc.get_freeze_count()\n"
        "server.start_up()\n"
        "cached = {name for _, name in server.referee.renderer.env.cache.keys()}\n"
        "print(before, gc.get_freeze_count() > 1000, 'postal_report.html.j2' in cached)\n"
        "server.close()\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    before, frozen, compiled = run.stdout.split()
    assert before == "0" and frozen == "True" and compiled == "True", run.stdout
