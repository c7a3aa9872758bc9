"""Tune the strong robot's constants on fresh seeds, screened game by game.

Each candidate (a set of ``--tune MODULE.NAME=VALUE`` settings of
bench/robot_arena.py) plays the line-up over every seed base; its per-game fair
shares are saved (``--save``) under the runs folder and compared game by game
with the baseline's on the same seeds (bench/robot_paired.py), per base and
pooled over the bases. Runs already in the folder (the same line-up, seed base,
settings and at least as many games) are reused, so a screen at 1,000 games
pairs with the first 1,000 of a 2,000-game baseline.

    # candidates against the robot as it is, tuning seeds, 1,000 games a base
    python3 bench/robot_tune.py --games 1000 --runs /tmp/tune \\
        --try robot_strong.MIX=0.03 --try "robot_strong.MISLEAD=0.15 beliefs.BLUFF=0.12"
    # a coordinate search: each constant in turn, its values tried against the best so
    # far, one kept when it beats that by --keep points pooled
    python3 bench/robot_tune.py --games 1000 --runs /tmp/tune \\
        --coordinate robot_strong.MIX=0.02,0.06 --coordinate robot_strong.STANDINGS=0.4,0.6
    # a winner on held-out seeds, several line-ups
    python3 bench/robot_tune.py --bases 40000,300000,500000 --lineup postal:strong:reader \\
        --lineup postal:strong:odds --try robot_strong.MIX=0.03 --runs /tmp/tune

The arenas run as child processes under ``nice`` (10), at most ``--jobs`` (2)
at once: the machine's cores are shared. A difference is B - A in points of
fair share with its 95% interval; don't keep one inside it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from robot_arena import TUNABLE, interval  # bench/robot_arena.py
from robot_paired import paired, records  # bench/robot_paired.py

ARENA = Path(__file__).resolve().parent / "robot_arena.py"
TUNING_BASES = (600_000, 700_000, 800_000)
MAX_JOBS = 2          # arena processes at once, at most (two shared cores)
Candidate = tuple[str, ...]   # settings "module.NAME=value", sorted; () is the robot as is


def parse_setting(text: str) -> str:
    """'robot_strong.MIX=0.03' checked (a number constant of a tunable module) and
    normalised ('robot_strong.MIX=0.03'), so the same setting names the same run."""
    target, sep, value_text = text.strip().partition("=")
    module_name, dot, name = target.partition(".")
    if not sep or not dot or module_name not in TUNABLE:
        raise ValueError(f"not MODULE.NAME=VALUE with MODULE one of {', '.join(TUNABLE)}: "
                         f"{text!r}")
    old = getattr(importlib.import_module(f"pbem.rules.{module_name}"), name, None)
    if isinstance(old, bool) or not isinstance(old, (int, float)):
        raise ValueError(f"not a number constant of pbem.rules.{module_name}: {name}")
    value = float(value_text)
    return f"{module_name}.{name}={value:g}"


def candidate(texts: Iterable[str]) -> Candidate:
    """Settings into a candidate: one value a constant (the last given wins)."""
    chosen: dict[str, str] = {}
    for text in texts:
        setting = parse_setting(text)
        chosen[setting.split("=", 1)[0]] = setting
    return tuple(sorted(chosen.values()))


def with_setting(base: Candidate, setting: str) -> Candidate:
    return candidate([*base, setting])


def label(cand: Candidate) -> str:
    return " ".join(cand) if cand else "the robot as is"


def coordinate_values(text: str) -> list[str]:
    """'robot_strong.MIX=0.02,0.06' -> one setting a value."""
    target, _, values = text.partition("=")
    return [parse_setting(f"{target}={value}") for value in values.split(",") if value.strip()]


Key = tuple[str, int, Candidate]   # line-up, seed base, candidate


class Runs:
    """The saved arena runs of a folder (JSON lines of bench/robot_arena.py --save),
    by line-up, seed base and settings; the longest run of each is kept."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fair: dict[Key, list[float]] = {}
        folder.mkdir(parents=True, exist_ok=True)
        self.load()

    def load(self) -> None:
        for path in sorted(self.folder.glob("*.jsonl")):
            for record in records(path):
                key = (record["lineup"], record["seed_base"], candidate(record["tune"]))
                if len(record["fair"]) > len(self.fair.get(key, [])):
                    self.fair[key] = record["fair"]

    def has(self, key: Key, games: int) -> bool:
        return len(self.fair.get(key, [])) >= games

    def get(self, key: Key, games: int) -> list[float]:
        return self.fair[key][:games]

    def path(self, key: Key, games: int) -> Path:
        name = json.dumps([key[0], key[1], list(key[2]), games])
        return self.folder / f"{hashlib.sha1(name.encode()).hexdigest()[:12]}.jsonl"

    def command(self, key: Key, games: int) -> list[str]:
        lineup, base, cand = key
        tunes = [part for setting in cand for part in ("--tune", setting)]
        return ["nice", "-n", "10", sys.executable, str(ARENA), "--games", str(games),
                "--seed-base", str(base), "--save", str(self.path(key, games)), *tunes, lineup]

    def ensure(self, keys: Sequence[Key], games: int, jobs: int) -> None:
        """Play the runs not in the folder yet, at most jobs arenas at once."""
        todo = list(dict.fromkeys(key for key in keys if not self.has(key, games)))
        if not todo:
            return
        print(f"playing {len(todo)} run(s) of {games} games, {min(jobs, MAX_JOBS)} at once",
              flush=True)

        def play(key: Key) -> None:
            path = self.path(key, games)
            path.unlink(missing_ok=True)   # a run cut short before is played again
            out = path.with_suffix(".out")
            with out.open("w", encoding="utf-8") as log:
                subprocess.run(self.command(key, games), stdout=log, stderr=subprocess.STDOUT,
                               check=True)
            print(f"  done: {key[0]} {key[1]} {label(key[2])}: "
                  f"{table_row(out)}", flush=True)

        with ThreadPoolExecutor(max_workers=max(1, min(jobs, MAX_JOBS))) as pool:
            list(pool.map(play, todo))
        self.load()


def table_row(out: Path) -> str:
    """The arena's row of a run (its fair share and times), from its output."""
    rows = [line for line in out.read_text(encoding="utf-8").splitlines()
            if line.startswith("| postal") or line.startswith("| classic")
            or line.startswith("| cup")]
    return rows[-1] if rows else "(no row)"


@dataclass
class Comparison:
    lineup: str
    cand: Candidate
    base: Candidate
    rows: list[tuple[str, int, float, float, float, float, float]]   # base label ... below
    pooled: tuple[int, float, float, float]   # games, base %, diff, half-width (points)


def compare(runs: Runs, lineup: str, base: Candidate, cand: Candidate,
            bases: Sequence[int], games: int) -> Comparison:
    """Per seed base: games, baseline %, candidate % ± interval, difference ± half-width;
    then the difference pooled over the bases (points of fair share)."""
    rows = []
    all_a: list[float] = []
    all_b: list[float] = []
    for seed_base in bases:
        a = runs.get((lineup, seed_base, base), games)
        b = runs.get((lineup, seed_base, cand), games)
        n = min(len(a), len(b))
        mean_b, half_b = interval(b[:n])
        mean_a, _, diff, half = paired(a, b)
        rows.append((str(seed_base), n, 100 * mean_a, 100 * mean_b, 100 * half_b,
                     100 * diff, 100 * half))
        all_a += a[:n]
        all_b += b[:n]
    mean_a, _, diff, half = paired(all_a, all_b)
    return Comparison(lineup, cand, base, rows, (len(all_a), 100 * mean_a, 100 * diff, 100 * half))


HEADER = ("| line-up | candidate (B) | against (A) | seed base | games | A % | B %, 95% "
          "| B - A, 95% |\n| --- | --- | --- | --- | --- | --- | --- | --- |")


def report(comparison: Comparison) -> str:
    c = comparison
    lines = [f"| {c.lineup} | {label(c.cand)} | {label(c.base)} | {base} | {n} | {a:.1f} "
             f"| {b:.1f} ± {hb:.1f} | {d:+.1f} ± {h:.1f} |" for base, n, a, b, hb, d, h in c.rows]
    n, a, d, h = c.pooled
    if len(c.rows) > 1:
        lines.append(f"| {c.lineup} | {label(c.cand)} | {label(c.base)} | pooled | {n} "
                     f"| {a:.1f} | {a + d:.1f} | **{d:+.1f} ± {h:.1f}** |")
    return "\n".join(lines)


def screen(runs: Runs, lineups: Sequence[str], base: Candidate, cands: Sequence[Candidate],
           bases: Sequence[int], games: int, jobs: int) -> list[Comparison]:
    """Each candidate against base on every line-up and seed base."""
    keys = [(lineup, seed_base, cand) for lineup in lineups for cand in (base, *cands)
            for seed_base in bases]
    runs.ensure(keys, games, jobs)
    out = [compare(runs, lineup, base, cand, bases, games)
           for lineup in lineups for cand in cands]
    print(HEADER)
    for comparison in out:
        print(report(comparison), flush=True)
    return out


def coordinate_search(runs: Runs, lineup: str, start: Candidate, axes: Sequence[list[str]],
                      bases: Sequence[int], games: int, jobs: int, keep: float) -> Candidate:
    """Each axis (one constant's values) in turn: its values against the best so far; the
    one with the largest pooled gain is kept when that gain is above keep points."""
    best = start
    for values in axes:
        cands = [with_setting(best, value) for value in values]
        cands = [cand for cand in cands if cand != best]
        if not cands:
            continue
        results = screen(runs, [lineup], best, cands, bases, games, jobs)
        top = max(results, key=lambda c: c.pooled[2])
        if top.pooled[2] > keep:
            best = top.cand
            print(f"kept: {label(best)} ({top.pooled[2]:+.1f} ± {top.pooled[3]:.1f})", flush=True)
        else:
            print(f"kept none of {values[0].split('=')[0]} (best {top.pooled[2]:+.1f}; "
                  f"keep above {keep:+.1f})", flush=True)
    print(f"best: {label(best)}", flush=True)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=Path, required=True,
                        help="folder of the saved runs (reused when they are there)")
    parser.add_argument("--lineup", action="append", default=[],
                        help="setup:tested:field (postal:strong:reader); repeat for more")
    parser.add_argument("--bases", default=",".join(map(str, TUNING_BASES)),
                        help="seed bases, comma-separated (the tuning seeds "
                             f"{', '.join(map(str, TUNING_BASES))})")
    parser.add_argument("--games", type=int, default=2000, help="games a line-up a base (2000)")
    parser.add_argument("--base", default="", help="the baseline's settings, space-separated "
                        "(none: the robot as it is)")
    parser.add_argument("--try", dest="tries", action="append", default=[],
                        help="a candidate's settings, space-separated; repeat for more")
    parser.add_argument("--coordinate", action="append", default=[],
                        metavar="MODULE.NAME=V1,V2", help="a coordinate-search axis; in order")
    parser.add_argument("--keep", type=float, default=0.5,
                        help="a coordinate value is kept above this pooled gain, points (0.5)")
    parser.add_argument("--jobs", type=int, default=MAX_JOBS,
                        help=f"arena processes at once (at most {MAX_JOBS})")
    args = parser.parse_args(argv)
    try:
        bases = [int(b) for b in args.bases.split(",") if b.strip()]
        base = candidate(args.base.split())
        tries = [candidate(text.split()) for text in args.tries]
        axes = [coordinate_values(text) for text in args.coordinate]
    except (ValueError, AttributeError) as error:
        parser.error(str(error))
    lineups = args.lineup or ["postal:strong:reader"]
    runs = Runs(args.runs)
    if tries or not axes:
        screen(runs, lineups, base, tries, bases, args.games, args.jobs)
    if axes:
        for lineup in lineups:
            coordinate_search(runs, lineup, base, axes, bases, args.games, args.jobs, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
