"""How fast the web pages answer with many games in the database.

Plays one classic game and one postal game through the referee, then copies
their rows (games, players, moves) until the SQLite database holds --games games
(70% finished, 25% running, 5% open for sign-up), and times the pages served by
the ASGI app in-process (no network): the index, a deep page of each list, a
finished game's page and replay, a running game's page, and the answers to a
revalidation (If-None-Match: 304).

    python bench/web_pages.py [--games 10000] [--repeat 20]

Prints the median and the slowest time of each page, in milliseconds, and
whether SQLite answers the index's queries from an index or a table scan.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text
from sqlmodel import Session, col, select

from pbem.store.models import Game, Move, Player
from pbem.web import create_app
from testkit.desk import PLAYERS, Clock, admin, make_server

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient


def played(server, name: str, options: str, players: int) -> None:  # type: ignore[no-untyped-def]
    admin(server, f"NEWGAME {name} SEED 3 {options}".strip())
    for i, email in enumerate(PLAYERS[:players], start=1):
        admin(server, f"ADD {name} {email} Name{i}")
    admin(server, f"START {name}")


def fill(server, total: int) -> None:  # type: ignore[no-untyped-def]
    # the templates' rows are copied after commits too: keep their loaded values
    with Session(server.engine, expire_on_commit=False) as session:
        templates = {g.name: g for g in session.exec(select(Game))}
        players = {name: list(session.exec(select(Player).where(Player.game_id == g.id)))
                   for name, g in templates.items()}
        moves = {name: list(session.exec(select(Move).where(Move.game_id == g.id)))
                 for name, g in templates.items()}
        plan = ([("classic-0", "over")] * int(total * 0.7) + [("postal-0", "running")]
                * int(total * 0.25))
        plan += [("classic-0", "new")] * (total - len(plan) - len(templates))
        for n, (source, status) in enumerate(plan, start=1):
            base = templates[source]
            game = Game(**{**base.model_dump(exclude={"id"}), "name": f"g{n:05d}-{source[:4]}",
                           "status": status})
            if status == "new":
                game.options_json = '{"open": true}'
                game.turn, game.started_at, game.ended_at = 0, None, None
            session.add(game)
            session.flush()
            for p in players[source]:
                session.add(Player(**{**p.model_dump(exclude={"id"}), "game_id": game.id,
                                      "key": f"k{n}-{p.entrant}",
                                      "seat": None if status == "new" else p.seat}))
            if status == "over":
                for m in moves[source]:
                    session.add(Move(**{**m.model_dump(exclude={"id"}), "game_id": game.id}))
            if n % 1000 == 0:
                session.commit()
        session.commit()


def timed(client: TestClient, url: str, repeat: int, **headers: str) -> tuple[float, float, int]:
    times = []
    status = 0
    for _ in range(repeat):
        start = time.perf_counter()
        answer = client.get(url, headers=headers)
        times.append((time.perf_counter() - start) * 1000)
        status = answer.status_code
    return statistics.median(times), max(times), status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--db", help="reuse the database of an earlier run (skips the filling)")
    parser.add_argument("--sql", action="append", default=[],
                        help="run this SQL first (e.g. CREATE INDEX ..., to compare)")
    args = parser.parse_args()
    folder = Path(args.db).parent if args.db else Path(tempfile.mkdtemp(prefix="pbem-web-bench-"))
    server = make_server(folder, Clock())
    start = time.perf_counter()
    if not args.db:
        played(server, "classic-0", "RULES classic english DICE 3", 4)
        while _status(server, "classic-0") == "running":
            admin(server, "PROCESS classic-0")
        played(server, "postal-0", "DEADLINE 48", 5)
        admin(server, "PROCESS postal-0")
        fill(server, args.games)
    with server.engine.begin() as conn:
        for sql in args.sql:
            conn.execute(text(sql))
    with Session(server.engine) as session:
        count = len(session.exec(select(Game.id)).all())
        move_rows = len(session.exec(select(Move.id)).all())
        plan = session.exec(text("EXPLAIN QUERY PLAN SELECT * FROM game WHERE status IN "
                                 "('running', 'paused') ORDER BY deadline LIMIT 25")).all()
    print(f"{count} games, {move_rows} moves in {folder / 'pbem.db'} "
          f"(filled in {time.perf_counter() - start:.1f} s)")
    print("index query plan: " + "; ".join(str(row[-1]) for row in plan))
    with Session(server.engine) as session:
        deep = session.exec(select(Game.name).where(Game.status == "over")
                            .order_by(col(Game.id).desc()).limit(1)).one()
    client = TestClient(create_app(server.settings))
    pages = ["/", "/list/finished?page=200", "/list/running?page=50", "/list/open?page=10",
             "/games/classic-0", f"/games/{deep}", f"/games/{deep}/replay/10",
             "/games/postal-0", "/api/games/postal-0", f"/games/{deep}/record.json"]
    print(f"{'page':44} {'median ms':>10} {'max ms':>8}  status")
    for url in pages:
        median, worst, status = timed(client, url, args.repeat)
        print(f"{url:44} {median:10.1f} {worst:8.1f}  {status}")
    etag = client.get("/games/postal-0").headers["etag"]
    median, worst, status = timed(client, "/games/postal-0", args.repeat, **{"if-none-match": etag})
    print(f"{'/games/postal-0 (If-None-Match)':44} {median:10.1f} {worst:8.1f}  {status}")
    return 0


def _status(server, name: str) -> str:  # type: ignore[no-untyped-def]
    with Session(server.engine) as session:
        return session.exec(select(Game.status).where(Game.name == name)).one()


if __name__ == "__main__":
    sys.exit(main())
