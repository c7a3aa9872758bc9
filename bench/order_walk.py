"""The walk of one order mail: which pbem modules its handling enters.

A small postal game in this process (a SQLite file, the .eml outbox, no IMAP, no
network): the referee starts it by mail, four players answer their first report with
an order, then the fifth player's order, the one that completes the turn, is stored
and one tick (pbem.server.Server.tick: handling, the clock's work, sending) is traced
with sys.setprofile. Prints how many pbem modules the tick entered and which, with
the number of calls into each, and which of them the mail's own handling entered
(between the tick's marks "mail>" and "mail<": its transaction, without the fetch,
the clock's work and the sending).

    python bench/order_walk.py            # run from the repository root
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
import sys
import tempfile
from collections import Counter
from email import policy
from email.message import EmailMessage
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbem.config import Settings  # noqa: E402
from pbem.robot_client import choose_order, order_lines, read_report, reply_to  # noqa: E402
from pbem.server import Server  # noqa: E402

SERVER = "bluff@walk.test"
REFEREE = "referee@walk.test"
KEY = "walk-referee-key"
PLAYERS = [f"p{n}@walk.test" for n in range(1, 6)]
_ids = itertools.count(1)


def referee_mail(*lines: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = REFEREE, SERVER, "a game"
    msg["Message-ID"] = f"<walk-{next(_ids)}@walk.test>"
    msg.set_content("\n".join([f"KEY {KEY}", *lines]) + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def replies(database: Path, rng: random.Random) -> list[bytes]:
    """Each player's reply to its turn-1 report, with a legal order (as bench/scale.py)."""
    conn = sqlite3.connect(database)
    try:
        rows = conn.execute("SELECT raw, rcpts_json FROM outbound_mail "
                            "WHERE kind = 'report' AND turn = 1 ORDER BY id").fetchall()
    finally:
        conn.close()
    mails = []
    for raw, rcpts in rows:
        report = read_report(raw)
        assert report.view is not None
        move = choose_order(report.view, rng)
        assert move is not None
        mails.append(reply_to(report.msg, json.loads(rcpts)[0], order_lines(move),
                              quote=True, original=report.text))
    return mails


class Walk:
    """The pbem modules a traced call enters (Python frames only), with how many calls:
    in all, and while the mail is handled (``mark`` is the tick's marks)."""

    def __init__(self) -> None:
        self.entered: Counter[str] = Counter()
        self.handling: Counter[str] = Counter()
        self._in_mail = False

    def mark(self, tag: str) -> None:
        if tag in ("mail>", "mail<"):
            self._in_mail = tag == "mail>"

    def _profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name == "pbem" or name.startswith("pbem."):
                self.entered[name] += 1
                if self._in_mail:
                    self.handling[name] += 1

    def trace(self, run: Any) -> None:  # noqa: ANN401
        sys.setprofile(self._profile)
        try:
            run()
        finally:
            sys.setprofile(None)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pbem-walk-") as tmp:
        database = Path(tmp) / "walk.db"
        server = Server(Settings(database=f"sqlite:///{database}", address=SERVER,
                                 referee=REFEREE, referee_key=KEY,
                                 outbox_dir=Path(tmp) / "outbox"))
        server.compile_templates()   # not part of any mail's walk
        lines = ["NEWGAME walk SEED 7", *(f"ADD walk {p} P{n}" for n, p in
                                          enumerate(PLAYERS, 1)), "START walk"]
        assert server.referee.store_inbound(referee_mail(*lines), source="smtp")
        server.tick()
        orders = replies(database, random.Random(7))
        assert len(orders) == len(PLAYERS)
        for raw in orders[:-1]:          # four orders in: the turn waits for the fifth
            assert server.referee.store_inbound(raw, source="smtp")
            server.tick()
        assert server.referee.store_inbound(orders[-1], source="smtp")
        reports: list[Any] = []
        walk = Walk()
        walk.trace(lambda: reports.append(server.tick(walk.mark)))
        entered = walk.entered
        tick = reports[0]
        assert tick.processed == 1, tick
        conn = sqlite3.connect(database)
        try:
            second = conn.execute("SELECT count(*) FROM outbound_mail "
                                  "WHERE kind = 'report' AND turn = 2").fetchone()[0]
        finally:
            conn.close()
        assert second == len(PLAYERS), f"the turn did not complete: {second} turn-2 reports"
        server.engine.dispose()
    print(f"one order mail that completes a turn ({tick}):")
    print(f"{len(entered)} pbem modules entered, {sum(entered.values())} calls")
    for name, calls in sorted(entered.items()):
        print(f"  {name:32} {calls:6}")
    print(f"of them, {len(walk.handling)} entered while the mail itself was handled "
          f"(its transaction: read, record, play the turn, compose the reports):")
    print("  " + ", ".join(sorted(walk.handling)))


if __name__ == "__main__":
    main()
