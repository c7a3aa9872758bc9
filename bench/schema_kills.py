"""Kill pbem's schema work at random moments; count the starts that recover.

Two scenes, each on SQLite and (with --postgresql) PostgreSQL:

- first start: `pbem tick` on a fresh database (it creates the schema);
- upgrade: `pbem db upgrade` of a database at the first revision with rows in
  every table.

Each try forks a child of this process (pbem is imported once, so the child is
at its work at once) that runs the command, SIGKILLs it after a delay drawn
uniformly from 0 to the time a whole run takes (the shortest of three measured
first), then runs the command again, unharmed. The try recovered when that second run exits 0, the
database is at the newest revision, its schema (tables, columns, keys, indexes)
equals a fresh database's and every row put in before is read back the same.
Otherwise the database is broken, and the first line of why is counted.

    python3 bench/schema_kills.py                            # 200 tries on SQLite
    python3 bench/schema_kills.py --sqlite 200 --postgresql 50 --rows 50
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbem import cli  # noqa: E402
from testkit.pgstack import PgCluster  # noqa: E402
from testkit.schema_state import (  # noqa: E402
    filled_at_first_revision,
    revision_of,
    rows_of,
    schema_of,
)


def config_of(url: str, folder: Path) -> Path:
    config = folder / "pbem.toml"
    config.write_text(f'[server]\ndatabase = "{url}"\naddress = "bluff@example.org"\n'
                      f'referee = "referee@example.org"\nreferee_key = "k"\n'
                      f'outbox_dir = "{folder / "out"}"\n')
    return config


def start(words: list[str], log: Path) -> int:
    """Fork a child that runs `pbem WORDS` (its output into ``log``); its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            code = cli.main(words)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def status(pid: int) -> int:
    _, got = os.waitpid(pid, 0)
    return -os.WTERMSIG(got) if os.WIFSIGNALED(got) else os.WEXITSTATUS(got)


def run(words: list[str], log: Path) -> tuple[int, float]:
    began = time.monotonic()
    code = status(start(words, log))
    return code, time.monotonic() - began


def why(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines()
             if line.strip() and not line.startswith("(Background")]
    errors = [line for line in lines if "Error" in line]
    return (errors or lines or ["(no output)"])[-1][:160]


class Scene:
    """One kind of schema work on one database: how to make its database, what to run."""

    def __init__(self, name: str, words: list[str], new_url: Callable[[Path], str],
                 rows: int) -> None:
        self.name, self.words, self.new_url, self.rows = name, words, new_url, rows

    def prepare(self, folder: Path) -> tuple[Path, dict]:
        url = self.new_url(folder)
        columns = filled_at_first_revision(url, self.rows) if self.words[0] == "db" else {}
        before = rows_of(url, columns) if columns else {}
        return config_of(url, folder), {"url": url, "columns": columns, "rows": before}


def measure(scene: Scene, base: Path) -> tuple[float, dict]:
    """How long a whole run takes (the shortest of three: a load spike would push the
    kills past the end), and the schema it makes."""
    spans, schema, head = [], {}, None
    for n in range(3):
        folder = base / f"{scene.name}-whole-{n}"
        folder.mkdir()
        config, state = scene.prepare(folder)
        code, seconds = run([*scene.words, "-c", str(config)], folder / "log")
        if code != 0:
            raise SystemExit(f"{scene.name}: a whole run failed: {why(folder / 'log')}")
        spans.append(seconds)
        schema, head = schema_of(state["url"]), revision_of(state["url"])
    return min(spans), {"schema": schema, "head": head}


def one_try(scene: Scene, folder: Path, span: float, fresh: dict,
            rng: random.Random) -> tuple[str, str]:
    """('recovered' | 'finished' | 'broken', why)."""
    config, state = scene.prepare(folder)
    words = [*scene.words, "-c", str(config)]
    pid = start(words, folder / "killed.log")
    time.sleep(rng.uniform(0, span))
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    killed = status(pid) == -signal.SIGKILL
    code, _ = run(words, folder / "again.log")
    if code != 0:
        return "broken", why(folder / "again.log")
    if revision_of(state["url"]) != fresh["head"]:
        return "broken", f"at revision {revision_of(state['url'])}"
    if schema_of(state["url"]) != fresh["schema"]:
        return "broken", "the schema differs from a fresh one"
    if state["columns"] and rows_of(state["url"], state["columns"]) != state["rows"]:
        return "broken", "rows lost or changed"
    return ("recovered" if killed else "finished"), ""


def bench(scene: Scene, tries: int, base: Path, rng: random.Random) -> None:
    span, fresh = measure(scene, base)
    tally: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for n in range(tries):
        folder = base / f"{scene.name}-{n}"
        folder.mkdir()
        outcome, reason = one_try(scene, folder, span, fresh, rng)
        tally[outcome] += 1
        if reason:
            reasons[reason] += 1
    killed = tally["recovered"] + tally["broken"]
    print(f"{scene.name:28} whole run {span * 1000:5.0f} ms; {tries} tries: "
          f"{killed} killed mid-way, {tally['recovered']} recovered, "
          f"{tally['broken']} left a broken database"
          f" ({tally['finished']} had finished before the kill)", flush=True)
    for reason, count in reasons.most_common():
        print(f"    {count:4} x {reason}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sqlite", type=int, default=200, help="tries on SQLite (200)")
    parser.add_argument("--postgresql", type=int, default=0, help="tries on PostgreSQL (0)")
    parser.add_argument("--rows", type=int, default=50, help="rows a table, upgrade scene (50)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="pbem-schema-kills-") as tmp:
        base = Path(tmp)

        def sqlite_url(folder: Path) -> str:
            return f"sqlite:///{folder / 'pbem.db'}"

        for scene_name, words in (("first start", ["tick"]), ("upgrade", ["db", "upgrade"])):
            if args.sqlite:
                bench(Scene(f"sqlite {scene_name}", words, sqlite_url, args.rows),
                      args.sqlite // 2, base, rng)
        if args.postgresql:
            with PgCluster() as cluster:
                for scene_name, words in (("first start", ["tick"]),
                                          ("upgrade", ["db", "upgrade"])):
                    bench(Scene(f"postgresql {scene_name}", words,
                                lambda _folder: cluster.new_database(), args.rows),
                          args.postgresql // 2, base, rng)


if __name__ == "__main__":
    main()
