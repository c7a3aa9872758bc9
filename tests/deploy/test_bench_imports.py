"""Every benchmark under bench/ still imports what it uses: a bench is run rarely, by hand,
so a renamed function breaks it silently (scale.py, order_walk.py and mail_throughput.py
once asked pbem.demo.robot_client for a choose_order that had moved to the kinds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted(p for p in (ROOT / "bench").glob("*.py"))


@pytest.mark.parametrize("bench", BENCHES, ids=[p.name for p in BENCHES])
def test_a_bench_loads(bench: Path) -> None:
    # run as a module that is not __main__: its imports and definitions, not its run;
    # bench/ on the path as `python bench/x.py` puts it (one bench imports another)
    code = ("import runpy, sys; sys.argv = [sys.argv[1]]; "
            "runpy.run_path(sys.argv[0], run_name='bench_loaded')")
    done = subprocess.run([sys.executable, "-c", code.replace("sys.argv[0]", repr(str(bench))),
                           str(bench)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'bench'}"})
    assert done.returncode == 0, done.stderr[-2000:]
