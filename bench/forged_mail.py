"""Forged mail in others' names, handled by one server (SQLite, the .eml outbox, the
desk's clock): N wrong-key mails forged from a player and from the referee, then N HELP
mails forged from a player. Prints the mails a second each run handled and how many
answers and owner notices they made: the answers stay bounded however large N is, and
the right key after them still works.

    python3 bench/forged_mail.py                 # N = 1000
    python3 bench/forged_mail.py --mails 200 2000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from testkit.desk import (
    PLAYERS,
    REFEREE,
    REFEREE_KEY,
    Clock,
    key_of,
    mail,
    make_server,
    outbox_rows,
    started_game,
)


def run(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pbem-forged-") as folder:
        server = make_server(Path(folder), Clock())
        started_game(server)
        victim = PLAYERS[0]
        for label, sender, body in (
                ("wrong keys as a player", victim, "GAME g1\nKEY forged-{i}\nBID 1 two"),
                ("wrong keys as the referee", REFEREE, "KEY forged-{i}\nLIST"),
                ("HELP as a player", PLAYERS[1], "HELP")):
            before = len(outbox_rows(server, sender))
            for i in range(n):
                server.referee.store_inbound(mail(sender, body.format(i=i), subject=f"m{i}"),
                                             source="smtp")
            start = time.perf_counter()
            server.referee.process_pending()
            seconds = time.perf_counter() - start
            rows = outbox_rows(server, sender)[before:]
            notices = sum(r.kind == "notice" and r.inbound_id is None for r in rows)
            print(f"{n:6d} {label:26s} {n / seconds:7.0f} mails/s  "
                  f"{len(rows) - notices:3d} answers  {notices} owner notices")
        right = [(victim, f"GAME g1\nKEY {key_of(server, victim)}\nBID 1 two"),
                 (REFEREE, f"KEY {REFEREE_KEY}\nLIST")]
        for sender, body in right:
            server.referee.store_inbound(mail(sender, body, subject="the real one"),
                                         source="smtp")
        server.referee.process_pending()
        print(f"{'':6s} then the right keys: "
              f"{[outbox_rows(server, s)[-1].kind for s, _ in right]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mails", type=int, nargs="+", default=[1000])
    for n in parser.parse_args().mails:
        run(n)


if __name__ == "__main__":
    main()
