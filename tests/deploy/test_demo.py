"""`pbem demo --rules classic|cup`: robots play a whole game over the real path (SMTP
listener, SQLite, .eml outbox), the standings are printed and the record verifies."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest

from pbem.demo.game import new_reports, throwaway
from pbem.kinds.verify import verify_generic
from pbem.store.db import open_database


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pbem.cli", "demo", "--dir", str(tmp_path),
                           *args], capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("rules, options, seed, unit", [
    ("classic", "anniversary DICE 2", 1, "dice left"),   # seeds that give short games
    ("cup", None, 51, "points"),
])
def test_demo_plays_a_whole_game(tmp_path: Path, rules: str, options: str | None, seed: int,
                                 unit: str) -> None:
    done = demo(tmp_path, "--rules", rules, "--seed", str(seed),
                *(["--options", options] if options else []))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert re.match(rf"Game demo-[0-9a-f]{{4}} \({rules}\) is over after \d+ turns\.", lines[0])
    assert lines[1] == "Final standings:"
    standings = [line for line in lines if re.match(r"  \d\. player \d \(\w+\): ", line)]
    assert len(standings) == 4 and all(unit in line for line in standings)
    (record_path,) = tmp_path.glob("demo-*.json")
    record = json.loads(record_path.read_text())
    assert record["kind"] == rules and len(record["players"]) == 4
    assert verify_generic(record) == []
    if options:
        assert record["rules"]["super_die"] is True and record["rules"]["dice_per_player"] == 2
    # every mail went through the outbox; every player got a report each turn
    assert len(list((tmp_path / "outbox").glob("*.eml"))) > 4 * len(record["moves"])


def test_demo_says_why_a_game_cannot_be_set_up(tmp_path: Path) -> None:
    done = demo(tmp_path, "--rules", "classic", "--options", "DICE 11")
    assert done.returncode == 2
    assert "could not set up" in done.stdout and "DICE 11" in done.stdout
    assert "COMMANDS" not in done.stdout


def test_demo_shows_its_progress_on_stderr(tmp_path: Path) -> None:
    done = demo(tmp_path, "--rules", "cup", "--seed", "51")
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("playing: ")]
    assert progress and all(re.fullmatch(r"playing: turn \d+, \d+ mails so far", line)
                            for line in progress)
    turns = int(re.search(r"is over after (\d+) turns", done.stdout).group(1))  # type: ignore[union-attr]
    assert progress[-1].startswith(f"playing: turn {turns}, ")


def test_the_demo_database_does_not_wait_for_the_disk(tmp_path: Path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'pbem.db'}")
    throwaway(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 0   # OFF
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"   # pbem's own
    engine.dispose()


def test_the_robots_read_each_mail_once_and_answer_the_newest_report(tmp_path: Path) -> None:
    def report(to: str, turn: int) -> bytes:
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = "bluff@demo.invalid", to, f"turn {turn}"
        msg.set_content(f"turn {turn}\n")
        msg.add_attachment(json.dumps({"turn": turn}).encode(), maintype="application",
                           subtype="json", filename="report.json")
        return msg.as_bytes(policy=policy.SMTP)

    outbox = tmp_path / "outbox"
    outbox.mkdir()
    (outbox / "1.eml").write_bytes(report("ann@demo.invalid", 1))
    (outbox / "2.eml").write_bytes(report("ann@demo.invalid", 2))
    (outbox / "3.eml").write_bytes(report("referee@demo.invalid", 2))
    seen: set[str] = set()
    latest = new_reports(outbox, seen, {"ann@demo.invalid": "Ann"})
    assert list(latest) == ["ann@demo.invalid"] and latest["ann@demo.invalid"].view == {"turn": 2}
    assert latest["ann@demo.invalid"].text == "turn 2\n"
    assert new_reports(outbox, seen, {"ann@demo.invalid": "Ann"}) == {}
