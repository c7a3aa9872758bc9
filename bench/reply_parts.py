"""What the pure parts of an order's handling cost, on the replies bench/scale.py sends.

N postal games are started by referee mail through a real server (*mail stack*, SQLite),
as bench/scale.py starts them; every player's reply to its turn-1 report is made as
scale.py makes it (its orders above the quoted report). Then, in this process, with no
database, each part is timed on those replies (CPU, the best of several rounds of all of
them), in µs a reply:

* ``read_message``: the reply read (MIME, headers, the new text above a quote);
* ``the cut of the quote``: where the reply quotes the report it answers
  (pbem.mail.quotecut.reply_text on pbem.mail.sent.sent_texts of the report, as
  pbem.services.post.read_reply cuts it);
* ``kind.due (seats)``: who still owes a move, asked as an order asks it three times
  (``due_seats`` where the checkout has it, else ``due``).

    python bench/reply_parts.py                          # this checkout
    python bench/reply_parts.py --compare /path/to/other # both, side by side, alternated

``--compare`` times each checkout in a process of its own on the same replies, taking
turns round by round (the before and after of a change in the same run).
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_replies(games: int, path: Path) -> None:
    """The turn-1 replies of ``games`` started games and the reports they answer, pickled."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import scale  # bench/scale.py: its referee mails, replies and settings

    from pbem.runner.server import Server
    from testkit.mailstack import MailStack
    with MailStack(users=("bluff", "referee")) as stack, \
            tempfile.TemporaryDirectory(prefix="pbem-reply-parts-") as tmp:
        settings = scale.bench_settings(stack, f"sqlite:///{Path(tmp) / 'parts.db'}", Path(tmp))
        server = Server(settings)
        scale.deliver(stack, scale.referee_mails(stack, games), "referee mails")
        server.tick()
        replies = list(scale.answers(server.engine, random.Random(1), True))
        with server.engine.connect() as conn:
            reports = [row[0] for row in conn.exec_driver_sql(
                "SELECT raw FROM outbound_mail JOIN outbound_body ON mail_id = id "
                "WHERE kind = 'report' AND turn = 1 ORDER BY id")]
        server.close()
        server.engine.dispose()
    path.write_bytes(pickle.dumps((replies, reports)))


def measure(root: str, data: str, rounds: int) -> dict[str, float]:
    """µs a reply of each part, with ``root``'s pbem (a process of its own)."""
    sys.path.insert(0, root)
    from pbem.kinds import KINDS
    from pbem.mail.quotecut import reply_text
    from pbem.mail.read import read_message
    from pbem.mail.sent import sent_texts
    from pbem.rules.dice import DiceStream, seed_from_number

    replies, reports = pickle.loads(Path(data).read_bytes())
    read = [read_message(raw) for raw in replies]
    kind = KINDS["postal"]
    states = [kind.start(kind.parse_options([]), DiceStream(seed_from_number(n)), 5)
              for n in range(len(replies))]
    seats = getattr(kind, "due_seats", kind.due)

    def best(part: Callable[[], object]) -> float:
        times = []
        for _ in range(rounds):
            start = time.process_time()
            part()
            times.append(time.process_time() - start)
        return 1e6 * min(times) / len(replies)

    return {
        "read_message": best(lambda: [read_message(raw) for raw in replies]),
        "the cut of the quote": best(lambda: [
            reply_text(msg.text, sent_texts(raw)) for msg, raw in zip(read, reports, strict=True)]),
        "kind.due (seats), three times": best(lambda: [
            [set(seats(state)) for _ in range(3)] for state in states]),
    }


def run(root: str, data: Path, rounds: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--child", "--root", root,
                           "--data", str(data), "--rounds", str(rounds)],
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7, help="rounds a turn (best taken)")
    parser.add_argument("--turns", type=int, default=3, help="turns each checkout takes")
    parser.add_argument("--compare", metavar="ROOT", help="another checkout, timed alongside")
    parser.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.root, args.data, args.rounds)))
        return 0
    roots = {"this": str(ROOT)} | ({"other": args.compare} if args.compare else {})
    with tempfile.TemporaryDirectory(prefix="pbem-reply-parts-") as tmp:
        data = Path(tmp) / "replies.pickle"
        make_replies(args.games, data)
        taken: dict[str, list[dict[str, float]]] = {name: [] for name in roots}
        for turn in range(args.turns):   # alternated: odd turns the other goes first
            order = list(roots) if turn % 2 == 0 else list(reversed(roots))
            for name in order:
                taken[name].append(run(roots[name], data, args.rounds))
    parts = list(taken["this"][0])
    names = list(roots)
    print(f"\nµs a reply ({args.games * 5} replies, the best of {args.rounds} rounds; "
          f"the best and worst of {args.turns} turns)\n")
    print("| part | " + " | ".join(names) + (" | this / other |" if args.compare else " |"))
    print("| --- |" + " ---: |" * (len(names) + (1 if args.compare else 0)))
    for part in parts:
        cells = [f"{min(t[part] for t in taken[n]):.1f} to {max(t[part] for t in taken[n]):.1f}"
                 for n in names]
        ratio = ([f"{min(t[part] for t in taken['this']) / min(t[part] for t in taken['other']):.2f}"]
                 if args.compare else [])
        print(f"| {part} | " + " | ".join(cells + ratio) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
