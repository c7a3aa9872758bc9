"""pbem's log lines for a terminal, for journald (priorities, no time of their own) and as
JSON: the formatters on real records, and a real `pbem serve` whose stderr is "the
journal's" (JOURNAL_STREAM names its device and inode, as systemd sets it)."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from pbem.runner.logformat import JournalFormatter, JsonFormatter, formatter
from testkit.net import free_ports
from testkit.serve import listen_config

ROOT = Path(__file__).resolve().parents[2]
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def record(level: int, message: str, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            info = sys.exc_info()
    return logging.LogRecord("pbem.runner.server", level, __file__, 1, message, (), info)


def test_journal_lines_carry_their_priority_and_no_time() -> None:
    journal = JournalFormatter()
    assert journal.format(record(logging.INFO, "tick: fetched 1")) == \
        "<6>INFO pbem.runner.server: tick: fetched 1"
    assert journal.format(record(logging.WARNING, "SMTP unavailable")).startswith("<4>WARNING")
    assert journal.format(record(logging.DEBUG, "x")).startswith("<7>")
    assert journal.format(record(logging.CRITICAL, "x")).startswith("<2>")
    lines = journal.format(record(logging.ERROR, "tick failed", exc=True)).splitlines()
    # every line of the traceback is an error too, not an info line of its own
    assert len(lines) > 3 and all(line.startswith("<3>") for line in lines), lines
    assert lines[-1] == "<3>ValueError: boom"


def test_json_lines_are_one_object_each() -> None:
    line = JsonFormatter().format(record(logging.ERROR, "tick failed", exc=True))
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "ERROR" and entry["priority"] == 3
    assert entry["logger"] == "pbem.runner.server" and entry["message"] == "tick failed"
    assert entry["exc"].endswith("ValueError: boom") and entry["time"].endswith("+00:00")


def test_auto_is_journal_only_when_stderr_is_the_journals_stream(tmp_path: Path) -> None:
    with (tmp_path / "err").open("w") as err, (tmp_path / "other").open("w") as other:
        seen = os.fstat(err.fileno())
        env = {"JOURNAL_STREAM": f"{seen.st_dev}:{seen.st_ino}"}
        assert isinstance(formatter("auto", err, env), JournalFormatter)
        # inherited by a process whose stderr went elsewhere: not the journal
        assert not isinstance(formatter("auto", other, env), JournalFormatter)
        assert not isinstance(formatter("auto", err, {}), JournalFormatter)
        assert isinstance(formatter("json", err, {}), JsonFormatter)


def serve_log(tmp_path: Path, *options: str, journal: bool = False) -> str:
    """What a real `pbem serve` logs until its first tick is done (said by itself, or as
    the tick's line) and a clean stop."""
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port, outbox_dir="out")
    log = tmp_path / "serve.err"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    with log.open("w") as err:
        seen = os.fstat(err.fileno())
        env.pop("JOURNAL_STREAM", None)
        if journal:
            env["JOURNAL_STREAM"] = f"{seen.st_dev}:{seen.st_ino}"
        proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", *options, "serve", "-c",
                                 str(config)], stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 60
        while not re.search(r"the first tick is done|pbem.runner.server\W+\s*(message\W+)?tick: ",
                            log.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    return log.read_text()


def test_serve_under_journald_logs_priorities_without_a_time(tmp_path: Path) -> None:
    lines = serve_log(tmp_path, journal=True).splitlines()
    assert lines and all(re.match(r"<[2-7]>[A-Z]+ \S+: ", line) for line in lines), lines
    assert not any(STAMP.search(line) for line in lines), lines
    assert any(line.startswith("<6>INFO pbem.runner.server: listening for mail") for line in lines)


def test_serve_logs_json_on_request(tmp_path: Path) -> None:
    text = serve_log(tmp_path, "--log-format", "json")
    entries = [json.loads(line) for line in text.splitlines()]
    assert any(e["message"].startswith(("the first tick is done", "tick: ")) for e in entries), \
        entries
    assert {e["level"] for e in entries} <= {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


def test_text_is_stamped_as_before(tmp_path: Path) -> None:
    line = formatter("text").format(record(logging.INFO, "hello"))
    assert STAMP.match(line) and line.endswith(" INFO pbem.runner.server: hello")
