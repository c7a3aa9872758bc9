"""`pbem demo --rules classic|cup`: robots play a whole game over the real path (SMTP
listener, SQLite, .eml outbox), the standings are printed and the record verifies."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pbem.kinds.verify import verify_generic


def demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pbem.cli", "demo", "--dir", str(tmp_path),
                           *args], capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("rules, options, seed, unit", [
    ("classic", "anniversary DICE 2", 4, "dice left"),   # seeds that give short games
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
