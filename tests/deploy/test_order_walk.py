"""The house's measures of one order mail's handling (bench/order_walk.py) stay where issue
44 put them: the runner revisits few modules, a fact is looked up once or nearly, and no
call goes up a layer (the injected clock aside: a tick's progress is told down, to
pbem.services.progress, not by a callback into the server)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_one_order_mail_walks_down_the_layers_without_going_back_and_forth() -> None:
    walked = subprocess.run([sys.executable, str(ROOT / "bench" / "order_walk.py")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    figures = {name: int(count) for name, count in re.findall(
        r"^(runner revisits|repeated fact look-ups|calls up a layer): (\d+)",
        walked.stdout, re.M)}
    assert set(figures) == {"runner revisits", "repeated fact look-ups", "calls up a layer"}
    assert figures["calls up a layer"] == 0, walked.stdout[-1500:]
    assert figures["runner revisits"] <= 3, walked.stdout[-1500:]
    assert figures["repeated fact look-ups"] <= 10, walked.stdout[-1500:]
