"""bench/robot_tune.py: settings parsed and named alike, runs saved, reused and paired."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def tune(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    import robot_tune  # bench/robot_tune.py

    module: ModuleType = robot_tune
    return module


def test_settings_are_checked_and_named_alike(tune: ModuleType, tmp_path: Path) -> None:
    assert tune.parse_setting(" robot_strong.MIX=0.030 ") == "robot_strong.MIX=0.03"
    assert tune.parse_setting("beliefs.BLUFF=2e-1") == "beliefs.BLUFF=0.2"
    for bad in ("robot_strong.MIX", "MIX=0.1", "ladder.X=1", "robot_strong.NOPE=1",
                "robot_strong.MIX=high", "robot_strong.Table=1"):
        with pytest.raises(ValueError):
            tune.parse_setting(bad)
    # sorted, one value a constant (the last wins), so the same settings name one run
    assert tune.candidate(["robot_strong.MIX=0.1", "beliefs.BLUFF=0.2",
                           "robot_strong.MIX=0.02"]) == ("beliefs.BLUFF=0.2",
                                                         "robot_strong.MIX=0.02")
    assert tune.with_setting(("robot_strong.MIX=0.02",), "robot_strong.MIX=0.06") == (
        "robot_strong.MIX=0.06",)
    assert tune.coordinate_values("robot_strong.MIX=0.02, 0.06") == [
        "robot_strong.MIX=0.02", "robot_strong.MIX=0.06"]
    with pytest.raises(SystemExit):
        tune.main(["--runs", str(tmp_path), "--try", "robot_strong.NOPE=1"])


def test_a_candidate_is_played_saved_reused_and_paired(
        tune: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A candidate that sets a constant to its own value plays the baseline's games:
    the paired difference is exactly 0 on each base and pooled; a second screen plays
    nothing (the runs are reused), and a shorter one pairs the first games."""
    runs_dir = tmp_path / "runs"
    argv = ["--runs", str(runs_dir), "--games", "2", "--bases", "700000,710000",
            "--lineup", "postal:strong:odds", "--try", "robot_strong.MIX=0.04", "--jobs", "2"]
    assert tune.main(argv) == 0
    out = capsys.readouterr().out
    assert "playing 4 run(s) of 2 games" in out
    assert out.count("+0.0 ± 0.0") == 3   # two bases and pooled
    assert "| postal:strong:odds | robot_strong.MIX=0.04 | the robot as is | pooled | 4 |" in out
    saved = sorted(runs_dir.glob("*.jsonl"))
    assert len(saved) == 4
    records = [json.loads(path.read_text()) for path in saved]
    assert sorted(tuple(r["tune"]) for r in records) == [
        (), (), ("robot_strong.MIX=0.04",), ("robot_strong.MIX=0.04",)]
    assert tune.main([*argv[:3], "1", *argv[4:]]) == 0
    out = capsys.readouterr().out
    assert "playing" not in out
    assert "| 700000 | 1 |" in out and "| pooled | 2 |" in out
    assert len(sorted(runs_dir.glob("*.jsonl"))) == 4


def test_pairing_and_the_coordinate_search_keep_only_a_gain(
        tune: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Saved runs (written as bench/robot_arena.py --save writes them) pair game by game;
    the coordinate search keeps a value only when its pooled gain is above keep."""
    lineup = "postal:strong:reader"
    fair = {(): [0.0, 0.5, 1.0, 0.0], ("robot_strong.MIX=0.02",): [1.0, 0.5, 1.0, 0.0],
            ("robot_strong.MIX=0.06",): [0.0, 0.0, 1.0, 0.0]}
    with (tmp_path / "made.jsonl").open("w") as out:
        for settings, shares in fair.items():
            for base in (600_000, 700_000):
                out.write(json.dumps({"lineup": lineup, "seed_base": base, "games": 4,
                                      "tune": list(settings), "fair": shares}) + "\n")
    runs = tune.Runs(tmp_path)
    comparison = tune.compare(runs, lineup, (), ("robot_strong.MIX=0.02",), [600_000, 700_000], 4)
    assert comparison.pooled[0] == 8
    assert comparison.pooled[2] == pytest.approx(25.0)   # +1 in one game of four
    assert comparison.rows[0][5] == pytest.approx(25.0)
    best = tune.coordinate_search(runs, lineup, (), [tune.coordinate_values(
        "robot_strong.MIX=0.02,0.06")], [600_000, 700_000], 4, 1, keep=0.5)
    assert best == ("robot_strong.MIX=0.02",)
    assert "kept: robot_strong.MIX=0.02 (+25.0" in capsys.readouterr().out
    best = tune.coordinate_search(runs, lineup, (), [["robot_strong.MIX=0.06"]],
                                  [600_000, 700_000], 4, 1, keep=0.5)
    assert best == ()
    assert "kept none of robot_strong.MIX (best -12.5" in capsys.readouterr().out
