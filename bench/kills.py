"""Kills over whole postal games: does a kill ever cost a player their order?

Postal games over the real mail stack (Dovecot in, SMTP out, SQLite), as
tests/e2e/test_kills.py plays them, but many: each round the players reply to their
report with an order, one to three ticks in a row are SIGKILLed (the whole process
group, as systemd stops a service) at a random moment within the length of the last
full tick, then full ticks run until everything is handled and sent. Then a few poison
mails (a line that kills whoever reads the mail: PBEM_POISON, pbem.store.faults.poison_point)
among the orders, each round killed the same way.

    python bench/kills.py                 # 200 kills, then 3 poison mails
    python bench/kills.py --kills 50 --poison 1 --seed 7

It prints the kills done, the orders set aside (must be 0), the poison mails set aside
(each should be) and the full ticks each round needed to catch up (1: a kill costs
nothing but the time of the next tick).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import Session, select  # noqa: E402

from pbem.store.models import OutboundMail  # noqa: E402
from testkit.crash import Zygote  # noqa: E402
from testkit.kills import KilledGame  # noqa: E402
from testkit.mailstack import MailStack  # noqa: E402

POISON_ENV = "PBEM_POISON"          # pbem.store.faults.POISON_ENV (read by name: old pbem has none)
POISON = "this line kills whoever reads it"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="kills that landed, at least")
    parser.add_argument("--poison", type=int, default=3, help="poison mails sent")
    parser.add_argument("--rounds", type=int, default=15, help="rounds a game, at most")
    parser.add_argument("--most-in-a-row", type=int, default=3, help="kills before a full tick")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def answered(game: KilledGame, inbound_ids: list[int | None]) -> int:
    """How many of these stored mails were answered (a mail queued in reply to each)."""
    with Session(game.server.engine) as session:
        return sum(session.exec(select(OutboundMail).where(
            OutboundMail.inbound_id == row_id)).first() is not None for row_id in inbound_ids)


def main() -> None:
    args = arguments()
    started = time.monotonic()
    kills = rounds = games = orders = 0
    catch_ups: Counter[int] = Counter()
    orders_set_aside = poison_set_aside = poison_answered = 0
    with MailStack() as stack, tempfile.TemporaryDirectory() as tmp:
        with Zygote() as zygote:
            while kills < args.kills:
                work = Path(tmp) / f"game-{games}"
                work.mkdir()
                game = KilledGame(stack, work, zygote, seed=args.seed * 1000 + games)
                games += 1
                for _ in range(args.rounds):
                    if kills >= args.kills or not game.running():
                        break
                    done = game.round(most_kills=args.most_in_a_row)
                    if done is None:
                        break
                    rounds += 1
                    kills += done.kills
                    catch_ups[done.ticks_to_catch_up] += 1
                orders += game.orders
                aside = game.set_aside()
                orders_set_aside += len(aside)
                print(f"game {games}: {game.turn() - 1} turns, {kills} kills so far, "
                      f"{len(aside)} orders set aside", flush=True)
        os.environ[POISON_ENV] = POISON
        try:
            with Zygote() as poisoned:
                work = Path(tmp) / "poison"
                work.mkdir()
                game = KilledGame(stack, work, poisoned, seed=args.seed)
                for number in range(args.poison):
                    victim = f"p{1 + number % 5}"
                    game.send_orders(poison={victim: POISON})
                    for _ in range(game.rng.randint(1, args.most_in_a_row)):
                        game.kill_a_tick()   # (the poison kills some itself: not counted)
                    for _ in range(6):   # the poison may kill the first full tick too
                        if poisoned.tick(game.config) == 0 and game.all_done():
                            break
                    game.resend(victim)
                    game.send_orders()
                    game.catch_up()
                aside = game.set_aside()
                poisoned_rows = [m for m in aside if POISON.encode() in m.raw]
                poison_set_aside = len(poisoned_rows)
                orders_set_aside += len(aside) - poison_set_aside
                poison_answered = answered(game, [m.id for m in poisoned_rows])
        finally:
            del os.environ[POISON_ENV]
    seconds = time.monotonic() - started
    print(f"games: {games} (and one with poison), rounds: {rounds}, orders sent: {orders}")
    print(f"kills done: {kills}")
    print(f"orders set aside: {orders_set_aside} (must be 0)")
    print(f"poison mails set aside: {poison_set_aside} of {args.poison} "
          f"(their senders answered: {poison_answered})")
    print("full ticks to catch up after the kills: "
          + ", ".join(f"{n}: {count} rounds" for n, count in sorted(catch_ups.items())))
    print(f"took {seconds:.0f} s")


if __name__ == "__main__":
    main()
