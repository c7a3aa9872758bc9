"""Two arena runs compared game by game (bench/robot_arena.py --save).

The same line-up on the same seeds deals the same dice, so the difference of
two robots' fair shares, game by game, has a tighter interval than the two
runs' own intervals: a change is screened by its paired difference.

    python3 bench/robot_arena.py --games 2000 --save a.jsonl postal:strong:reader
    python3 bench/robot_arena.py --games 2000 --save b.jsonl --tune robot_strong.MIX=0.05 \\
        postal:strong:reader
    python3 bench/robot_paired.py a.jsonl b.jsonl

Records of A and B are matched by line-up and seed base (several seed bases
pool into one figure as well as one each).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def records(path: Path) -> Iterator[dict[str, Any]]:
    """The records bench/robot_arena.py --save wrote to path: a line-up, its seed
    base, games and settings, and its per-game fair shares."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def load(path: Path) -> dict[tuple[str, int], list[float]]:
    return {(record["lineup"], record["seed_base"]): record["fair"] for record in records(path)}


def paired(a: list[float], b: list[float]) -> tuple[float, float, float, float]:
    """(mean of a, mean of b, mean of b - a, its 95% half-width), over the common games."""
    n = min(len(a), len(b))
    diffs = [b[i] - a[i] for i in range(n)]
    sd = statistics.pstdev(diffs) if n > 1 else 0.0
    return (statistics.fmean(a[:n]), statistics.fmean(b[:n]), statistics.fmean(diffs),
            1.96 * sd / math.sqrt(n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    runs_a, runs_b = load(args.a), load(args.b)
    common = sorted(set(runs_a) & set(runs_b))
    if not common:
        parser.error("no line-up and seed base in both files")
    print("| line-up | seed base | games | A % | B % | B - A, 95% |")
    print("| --- | --- | --- | --- | --- | --- |")
    pooled: dict[str, tuple[list[float], list[float]]] = {}
    for lineup, base in common:
        a, b = runs_a[(lineup, base)], runs_b[(lineup, base)]
        n = min(len(a), len(b))
        mean_a, mean_b, diff, half = paired(a, b)
        print(f"| {lineup} | {base} | {n} | {100 * mean_a:.1f} | {100 * mean_b:.1f} "
              f"| {100 * diff:+.1f} ± {100 * half:.1f} |")
        into = pooled.setdefault(lineup, ([], []))
        into[0].extend(a[:n])
        into[1].extend(b[:n])
    for lineup, (a, b) in pooled.items():
        if sum(1 for key in common if key[0] == lineup) > 1:
            mean_a, mean_b, diff, half = paired(a, b)
            print(f"| {lineup} | pooled | {len(a)} | {100 * mean_a:.1f} | {100 * mean_b:.1f} "
                  f"| {100 * diff:+.1f} ± {100 * half:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
