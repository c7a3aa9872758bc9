"""What carrying a game's pending mails into its next turn costs a resolved turn
(pbem.services.post.read_in_turn: one UPDATE), against an outbox of many sent mails.

    python bench/read_in_turn.py [mails] [games]

Prints the outbox size and the time of one call (the median of 200), on SQLite.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from sqlalchemy import insert
from sqlmodel import Session

from pbem.services.post import read_in_turn
from pbem.store.db import open_database
from pbem.store.models import Game, OutboundMail


def main(mails: int = 200_000, games: int = 500) -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as folder:
        engine = open_database(f"sqlite:///{Path(folder) / 'pbem.db'}")
        rows = [{"message_id": f"<{n}@x.test>", "kind": "report" if n % 3 else "notice",
                 "mail_from": "bluff@x.test", "rcpts_json": f'["p{n % 5}@x.test"]',
                 "game_id": n % games + 1, "seat": n % 5 + 1,
                 "turn": n % 40 + 1, "status": "sent" if n % 1000 else "pending",
                 "attempts": 1, "next_attempt_at": now, "created_at": now}
                for n in range(mails)]
        with Session(engine) as session:
            session.connection().execute(insert(Game), [
                {"id": g, "name": f"g{g}", "rules_json": "{}", "seed_hex": "00",
                 "commitment": "", "created_at": now} for g in range(1, games + 1)])
            session.connection().execute(insert(OutboundMail), rows)
            session.commit()
        times = []
        for n in range(200):
            game = SimpleNamespace(id=n % games + 1, turn=n % 40 + 2)
            with Session(engine) as session:
                start = time.perf_counter()
                read_in_turn(session, game, game.turn - 1)  # type: ignore[arg-type]
                times.append(time.perf_counter() - start)
                session.rollback()
        print(f"outbox: {mails:,} mails ({mails // 1000:,} pending), {games} games")
        print(f"read_in_turn: median {statistics.median(times) * 1e6:.0f} us, "
              f"max {max(times) * 1e6:.0f} us a resolved turn")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
