"""A turn's reports as a draft (pbem.services.draft_data): its bytes, and what writing and
reading it costs, against the pickle of the same TurnReports that drafts were before.

Plays a game of each kind by the robots (resolve_turn, no orders: the game's policy plays
every seat) to a few turns, then makes the draft of the last turn's reports many times:
its bytes and the CPU of making them in the turn's transaction (the game's moves read and
the JSON written; the pickle's dumps beside), and of reading them in the composer (the
state replayed from the start: the composer's first draft of a game, or a game whose
state it no longer keeps; and with the state kept: a game's next draft).

    python3 bench/drafts.py
    python3 bench/drafts.py --repeat 500
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pbem.games.states  # noqa: E402
from pbem.games.lifecycle import add_player, create_game, start_game  # noqa: E402
from pbem.games.records import find_game, players_of, seats_of  # noqa: E402
from pbem.kinds import kind_named  # noqa: E402
from pbem.services.draft_data import draft_bytes, moves_until, reports_from_draft  # noqa: E402
from pbem.services.reports import turn_reports  # noqa: E402
from pbem.services.turns import resolve_turn  # noqa: E402
from pbem.store.db import open_database  # noqa: E402
from pbem.store.rows import game_row  # noqa: E402
from pbem.store.work import Work  # noqa: E402

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
GAMES = [("postal", "", 5, 1), ("postal", "", 5, 8), ("classic", "", 5, 30), ("cup", "", 4, 30)]


def _cpu_us(repeat: int, work: object) -> float:
    began = time.process_time()
    for _ in range(repeat):
        work()   # type: ignore[operator]
    return 1e6 * (time.process_time() - began) / repeat


def measure(folder: Path, kind: str, options: str, players: int, turns: int,
            repeat: int) -> str:
    engine = open_database(f"sqlite:///{folder / f'{kind}-{turns}.db'}")
    with Work(engine) as session:
        game = create_game(session, "g1", seed=(7).to_bytes(32, "big"), now=START,
                           turn_hours=24, kind=kind,
                           rules_json=kind_named(kind).parse_options(options.split()))
        for i in range(players):
            add_player(session, game, f"p{i + 1}@example.org", f"P{i + 1}")
        start_game(session, game, START)
        now = START
        for _ in range(turns):
            now += timedelta(hours=1)
            outcome = resolve_turn(session, game, now)
            game = find_game(session, "g1")
            if game.status != "running":
                break
        turn = turn_reports(session, game_row(game), outcome.state, now=now,
                            notes=list(outcome.notes))
        seats = seats_of(players_of(session, game))
        pickled = pickle.dumps(turn, pickle.HIGHEST_PROTOCOL)
        raw = draft_bytes(turn, seats, moves_until(session, game))
        dumps = _cpu_us(repeat, lambda: pickle.dumps(turn, pickle.HIGHEST_PROTOCOL))
        made = _cpu_us(repeat, lambda: draft_bytes(turn, seats, moves_until(session, game)))
        loads = _cpu_us(repeat, lambda: pickle.loads(pickled))

        def from_start() -> None:
            pbem.games.states._states.clear()   # the bench's look: no state kept
            reports_from_draft(session, raw)

        fresh = _cpu_us(repeat, from_start)
        kept = _cpu_us(repeat, lambda: reports_from_draft(session, raw))
        session.rollback()
    engine.dispose()
    return (f"| {kind} | {game.turn}{' (over)' if game.status == 'over' else ''} | "
            f"{len(json.loads(raw)['moves'])} | {len(pickled):,} / {len(raw):,} | "
            f"{dumps:.0f} / {made:.0f} | {loads:.0f} / {fresh:.0f} / {kept:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    print("| kind | turn | moves | bytes: pickle / JSON | made, µs: pickle / JSON (moves read) "
          "| read, µs: pickle / JSON replayed from the start / the state kept |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="pbem-drafts-") as tmp:
        for kind, options, players, turns in GAMES:
            print(measure(Path(tmp), kind, options, players, turns, args.repeat), flush=True)


if __name__ == "__main__":
    main()
