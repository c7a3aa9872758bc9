"""How fast the turn reports render (pbem.render.reports.Renderer.render: text + HTML part).

Plays whole games of robots through the server's turn code with
testkit/reports.py, as tests/render/test_report_sections.py does (every optional
section filled: talk, notes, watchers, exposes, cups up, final report), records
the context of every report the production code renders, then times rendering
those contexts again, per report template:

* "now": this checkout's pbem/render package and templates/;
* "base": those of a git revision (--baseline, default HEAD), loaded side by
  side in the same process (its package as ``render_baseline``), so both figures
  come from the same run.

Then a turn at a time (English only): every report of each turn, the base
rendering each whole (or with its shared parts, when its revision has them), "now" rendering the turn's shared parts once
(Renderer.shared_parts) and each report with them, as the server does.

    python bench/render.py [--baseline REV] [--repeat 5] [--changed] [--language L]
                           [--save F | --check F]

--save F pickles every report as rendered during the games (template, text,
html); --check F plays the same games again and fails on the first report
whose text or HTML differs by a byte.  Also checked on every run: "now" and
"base" render each recorded context to the same bytes, unless --changed says
the reports are meant to differ (a change of what they show): then the ones
that differ are counted and both are timed. The times are this process's CPU
(time.process_time): a busy machine's other work does not count.  --language de times "now" rendering
the same reports in German (base: English, as a base before translations speaks).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import io
import pickle
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pbem.games.lifecycle  # noqa: E402
from pbem.render.reports import Renderer, SharedParts  # noqa: E402
from pbem.store.security import hash_key  # noqa: E402
from testkit.reports import play  # noqa: E402

# (label, kind, options, players, seed): as in tests/render/test_report_sections.py
GAMES = [
    ("postal", "postal", "", 5, 7),
    ("postal-2", "postal", "", 5, 21),
    ("classic-english", "classic", "english DICE 3", 4, 11),
    ("classic-german", "classic", "german DICE 2 STARS off", 3, 12),
    ("classic-anniversary", "classic", "anniversary DICE 3 EXPOSE on", 3, 13),
    ("classic-czech-six", "classic", "czech", 6, 14),
    ("cup-3", "cup", "", 3, 15),
    ("cup-5", "cup", "", 5, 16),
]

Recorded = list[tuple[str, dict[str, Any], str, str]]   # template, context, text, html
# the turns whose seats' reports shared their parts: the turn's public context (what
# Renderer.shared_parts got) and the indexes of its reports in the game's Recorded
Turns = list[tuple[dict[str, Any], list[int]]]
TURNS: dict[str, Turns] = {}


def record_game(tmp: Path, label: str, kind: str, options: str, players: int,
                seed: int) -> Recorded:
    """Every report of one game, as the production code rendered it."""
    seen: Recorded = []
    turns: Turns = TURNS.setdefault(label, [])

    class Recording(Renderer):
        def shared_parts(self, name: str, public: Mapping[str, Any],
                         language: str = "en") -> SharedParts | None:
            turns.append((copy.deepcopy(dict(public)), []))
            return super().shared_parts(name, public, language)

        def render(self, name: str, context: Mapping[str, Any], language: str = "en",
                   zone: str | None = None, shared: SharedParts | None = None
                   ) -> tuple[str, str]:
            kept = copy.deepcopy(dict(context))     # before the renderer sees it
            text, html = super().render(name, context, language, zone, shared)
            if shared is not None:
                turns[-1][1].append(len(seen))
            seen.append((name, kept, text, html))
            return text, html

    # the same player keys every run (they are random), so that --check can compare
    keys = (f"{label}-{i:04d}" for i in range(10_000))
    pbem.games.lifecycle.new_key = lambda: (k := next(keys), hash_key(k))  # type: ignore[assignment]
    play(tmp, kind, options, players, seed, renderer=Recording())
    return seen


def record_games(tmp: Path) -> dict[str, Recorded]:
    return {game[0]: record_game(tmp, *game) for game in GAMES}


def baseline_renderer(rev: str, tmp: Path) -> Renderer:
    """A Renderer from the revision's pbem/render package (its reports.py and the modules
    beside it, loaded as the package ``render_baseline``), reading the revision's
    templates."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "pbem/render",
                              "templates"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp / "base", filter="data")
    package = tmp / "render_baseline"
    package.mkdir()
    for source in (tmp / "base" / "pbem" / "render").glob("*.py"):
        # its own modules imported as the baseline's, not this checkout's
        text = source.read_text(encoding="utf-8").replace("pbem.render.", "render_baseline.")
        (package / source.name).write_text(text, encoding="utf-8")
    sys.path.insert(0, str(tmp))
    module: ModuleType = importlib.import_module("render_baseline.reports")
    # as an override folder: every template is found there, the packaged ones never
    renderer: Renderer = module.Renderer(tmp / "base" / "templates")
    return renderer


class InLanguage:
    """A renderer that renders every report in one language (--language)."""

    def __init__(self, renderer: Renderer, language: str) -> None:
        self.renderer = renderer
        self.language = language

    def render(self, name: str, context: Mapping[str, Any]) -> tuple[str, str]:
        return self.renderer.render(name, context, self.language)


def forget(renderer: Any) -> None:
    """Empty the renderer's remembered filter answers (if it has any): each pass starts
    cold, as the first of a game's turns would."""
    renderer = getattr(renderer, "renderer", renderer)
    package = type(renderer).__module__.rpartition(".")[0]
    for name, module in list(sys.modules.items()):
        if not name.startswith(package + "."):
            continue
        for attr, obj in vars(module).items():
            # the package's own memos (a remembered function of another module's, as
            # charts' percentages, too); not the Environments, nor the caches of what it
            # imports (the catalogues of pbem.text.i18n.translator are read once a
            # process, not once a turn)
            if attr == "template_environment" or not callable(getattr(obj, "cache_clear", None)):
                continue
            if getattr(obj, "__module__", "").startswith(package + ".") \
                    or isinstance(obj, FunctionType):
                obj.cache_clear()


def timed(base: Renderer, now: Renderer | InLanguage, reports: Recorded, repeat: int) -> tuple[float, float]:
    """CPU seconds for all the reports, base and now: each report alternately by one and
    the other (a busy moment of the machine hits both), the best of ``repeat`` passes
    per report (passes start cold: no remembered filter answers)."""
    clock = time.process_time    # this process's CPU: a busy machine's other work left out
    best_base = [float("inf")] * len(reports)
    best_now = [float("inf")] * len(reports)
    for _ in range(repeat):
        forget(base)
        forget(now)
        for i, (name, context, _, _) in enumerate(reports):
            start = clock()
            base.render(name, context)
            middle = clock()
            now.render(name, context)
            end = clock()
            best_base[i] = min(best_base[i], middle - start)
            best_now[i] = min(best_now[i], end - middle)
    return sum(best_base), sum(best_now)


def timed_turns(base: Renderer, now: Renderer, reports: Recorded, turns: Turns,
                repeat: int) -> dict[str, float]:
    """CPU seconds for every turn's reports (the seats' and the watcher's), base and now:
    base renders each whole (or with its shared parts, if it has them), now renders the
    turn's shared parts once and each report with them (as
    pbem.services.reports.enqueue_reports does); the best of ``repeat`` passes a turn.
    Keys: "base" and "now" (the whole turns), "base shared" and "now shared" (their
    shared passes alone: the rest is the readers' parts)."""
    clock = time.process_time
    best = {key: [float("inf")] * len(turns)
            for key in ("base", "now", "base shared", "now shared")}
    for _ in range(repeat):
        forget(base)
        forget(now)
        for i, (public, indexes) in enumerate(turns):
            name = reports[indexes[0]][0]
            start = clock()
            # a base with shared parts renders as the server then did (--baseline of
            # the stop that made them, or later)
            shared_base = (base.shared_parts(name, public)
                           if hasattr(base, "shared_parts") else None)
            base_shared = clock()
            for j in indexes:
                if shared_base is None:
                    base.render(name, reports[j][1])
                else:
                    base.render(name, reports[j][1], shared=shared_base)
            middle = clock()
            shared = now.shared_parts(name, public)
            now_shared = clock()
            for j in indexes:
                now.render(name, reports[j][1], shared=shared)
            end = clock()
            for key, took in (("base", middle - start), ("now", end - middle),
                              ("base shared", base_shared - start),
                              ("now shared", now_shared - middle)):
                best[key][i] = min(best[key][i], took)
    return {key: sum(times) for key, times in best.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with")
    parser.add_argument("--repeat", type=int, default=7,
                        help="timed passes (the best of them counts, report by report)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--save", type=Path, help="pickle the reports rendered in the games")
    group.add_argument("--check", type=Path, help="compare the reports with a --save file")
    parser.add_argument("--changed", action="store_true",
                        help="the reports are meant to differ from the baseline's (a change "
                             "of what they show): count the ones that differ, time both")
    parser.add_argument("--language", default="en",
                        help="render 'now' in this language (de, cs): the cost of a "
                             "translated report against the base's English one")
    args = parser.parse_args()
    args.changed = args.changed or args.language != "en"

    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        t0 = time.perf_counter()
        games = record_games(tmp)
        print(f"played {len(games)} games in {time.perf_counter() - t0:.1f} s: "
              + ", ".join(f"{label} {len(r)} reports" for label, r in games.items()))
        rendered = {label: [(n, t, h) for n, _, t, h in r] for label, r in games.items()}
        if args.save:
            args.save.write_bytes(pickle.dumps(rendered))
            print(f"saved to {args.save}")
        if args.check:
            saved = pickle.loads(args.check.read_bytes())
            for label, reports in rendered.items():
                if len(saved[label]) != len(reports):
                    print(f"{label}: {len(reports)} reports, {len(saved[label])} saved")
                    return 1
                for i, (got, want) in enumerate(zip(reports, saved[label], strict=True)):
                    if got != want:
                        print(f"{label}: report {i} ({got[0]}) differs from the saved one")
                        return 1
            print(f"every report is byte-identical to {args.check}")

        # --changed: the reports differ, so only their cost is compared, and "now" reads
        # its templates as an override folder too: both pay the same loader's checks
        plain = Renderer(ROOT / "templates") if args.changed else Renderer()
        now: Renderer | InLanguage = (plain if args.language == "en"
                                      else InLanguage(plain, args.language))
        base = baseline_renderer(args.baseline, tmp)
        for label, reports in games.items():
            differ = sum(now.render(name, context) != base.render(name, context)
                         for name, context, _, _ in reports)
            if differ and not args.changed:
                print(f"{label}: {differ} reports differ from {args.baseline}'s")
                return 1
            if args.changed:
                print(f"{label}: {differ} of {len(reports)} reports differ from "
                      f"{args.baseline}'s")
        print(f"{'reports':<22}{'base/s':>9}{'now/s':>9}{'ms base':>9}{'ms now':>8}  speed-up"
              f"   (base: {args.baseline})")
        for label, reports in games.items():
            took_base, took_now = timed(base, now, reports, args.repeat)
            n = len(reports)
            print(f"{label:<22}{n / took_base:>9.0f}{n / took_now:>9.0f}"
                  f"{1000 * took_base / n:>9.2f}{1000 * took_now / n:>8.2f}"
                  f"  {took_base / took_now:>6.2f}x")
        if args.language != "en":
            return 0
        # a turn's reports as the server renders them: shared parts once a turn
        print(f"{'a turn, all reports':<22}{'turns':>9}{'reports':>9}{'ms base':>9}{'ms now':>8}"
              "  speed-up   (ms a report; now: shared parts once a turn)")
        split: dict[str, tuple[int, int, dict[str, float]]] = {}
        for label, reports in games.items():
            turns = TURNS[label]
            n = sum(len(indexes) for _, indexes in turns)
            took = timed_turns(base, plain, reports, turns, args.repeat)
            split[label] = (len(turns), n, took)
            print(f"{label:<22}{len(turns):>9}{n:>9}"
                  f"{1000 * took['base'] / n:>9.2f}{1000 * took['now'] / n:>8.2f}"
                  f"  {took['base'] / took['now']:>6.2f}x")
        # the same turns, their shared pass (ms a turn) and the readers' parts (ms a report)
        print(f"{'a turn, split':<22}{'shared pass base':>18}{'now':>7}"
              f"{'a reader base':>15}{'now':>7}  (ms a turn; ms a report)")
        for label, (t, n, took) in split.items():
            base_readers = took["base"] - took["base shared"]
            now_readers = took["now"] - took["now shared"]
            print(f"{label:<22}{1000 * took['base shared'] / t:>18.2f}"
                  f"{1000 * took['now shared'] / t:>7.2f}"
                  f"{1000 * base_readers / n:>15.3f}{1000 * now_readers / n:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
