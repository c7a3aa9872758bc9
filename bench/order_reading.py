"""What reading the orders of a mail costs: typical player mails, and the worst.

Each mail is read as the referee reads it: pbem.mail.read.read_message (MIME, the new
text above a quote) and then pbem.orders.parsing.parse_text with a postal game's orders (the
order words, and the grammar of orders as people write them). It prints, for each
mail, the microseconds of the whole reading and of parse_text alone (the best of
several rounds of many reads each), then the mean of the typical mails.

    python bench/order_reading.py                          # this checkout
    python bench/order_reading.py --root /path/to/other    # another checkout's pbem
    python bench/order_reading.py --compare /path/to/other # both, side by side

``--compare`` runs each checkout in a process of its own, one after the other, in the
same run (the before and after of a change).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

REPORT = "\n".join(
    ["Game bluff-7, turn 3: your report as player 2.", "",
     "Mini-game 1: player 1 bid 4 threes; your dice: 2 3 3 * 5."] +
    [f"> Mini-game {i}: player {i} bid {i + 2} fives, {i} dice each" for i in range(2, 6)] +
    ["Send BID <quantity> <face> or CHALLENGE.", "-- ", "The referee of bluff-7"])

TYPICAL: dict[str, str] = {
    "keyword": "BID 4 fives\n",
    "keyword reply": "BID 4 fives\n\nOn Sun, 6 Dec 2026 at 10:00, Referee <ref@bluff.test> "
                     "wrote:\n" + "\n".join("> " + line for line in REPORT.splitlines()),
    "en sentence": "Hi all,\n\nI'll raise to four sixes. Good luck!\n\nCheers,\nAnn\n",
    "de sentence": "Hallo zusammen,\n\nich biete drei Fünfer.\n\nViele Grüße\nHans\n\n"
                   "Am 06.12.2026 um 10:00 schrieb Referee <ref@bluff.test>:\n" +
                   "\n".join("> " + line for line in REPORT.splitlines()),
    "cs sentence": "Ahoj,\n\nZvyšuji na čtyři šestky, díky.\n\nS pozdravem\nJana\n",
    "de challenge": "Das glaube ich nicht. Hoch die Becher!\n",
    "cs bare bid": "3 pětky\n",
    "talk and order": "Hi,\nsee you in 3 days, I have 2 meetings today.\nLast game was fun "
                      "with 5 players.\nBID 6 twos\nThanks, Finn\n",
}
# the worst the reader lets through: 300 lines of new text (read.MAX_TEXT_LINES), each
# long and full of numbers and face words, none of them an order
WORST = {
    "300 lines of bid-like prose": "\n".join(
        "I think " + " ".join(f"{n} fives or {n + 1} Fünfer a {n} pětek" for n in range(8))
        + f" and more, line {i}" for i in range(300)),
    "300 lines, 8 bid-like clauses": "\n".join(
        ", ".join(f"maybe I bid {n} fives and {n} Fünfer ich biete {n} pětek zvyšuji na "
                  f"{n} hvězdiček" for n in range(1, 9))[:300] for _ in range(300)),
    "300 lines of 4000 characters": "\n".join(
        ("drei Fünfer " * 340)[:4000] for _ in range(300)),
}


def mail(body: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Ann <ann@bluff.test>"
    msg["To"] = "bluff@bluff.test"
    msg["Subject"] = "Re: [bluff bluff-7] turn 3"
    msg["Message-ID"] = "<bench@bluff.test>"
    msg.set_content(body)
    return msg.as_bytes(policy=SMTP)


def measure(root: str, rounds: int, reads: int) -> dict[str, dict[str, float]]:
    """Microseconds a mail (the best round) in the pbem of ``root``: whole, parse only."""
    sys.path.insert(0, root)
    from pbem.commands.registry import player_commands
    from pbem.kinds import KINDS
    from pbem.mail.read import read_message
    from pbem.orders.parsing import parse_text

    commands = player_commands(KINDS["postal"])   # (for parse alone: the same each time)
    found: dict[str, dict[str, float]] = {}
    for name, body in {**TYPICAL, **WORST}.items():
        raw = mail(body)
        n = reads if name in TYPICAL else max(1, reads // 100)
        lines = read_message(raw).lines
        whole = parse = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(n):   # the commands made afresh, as for each mail
                parse_text(read_message(raw).lines, player_commands(KINDS["postal"]))
            whole = min(whole, (time.perf_counter() - start) / n * 1e6)
            start = time.perf_counter()
            for _ in range(n):
                parse_text(lines, commands)
            parse = min(parse, (time.perf_counter() - start) / n * 1e6)
        found[name] = {"whole": whole, "parse": parse}
    return found


def run(root: str, rounds: int, reads: int) -> dict[str, dict[str, float]]:
    done = subprocess.run([sys.executable, __file__, "--child", "--root", root,
                           "--rounds", str(rounds), "--reads", str(reads)],
                          capture_output=True, text=True, check=True)
    result: dict[str, dict[str, float]] = json.loads(done.stdout)
    return result


def show(columns: dict[str, dict[str, dict[str, float]]]) -> None:
    names = list(next(iter(columns.values())))
    heads = "".join(f"{label + ' whole':>16}{label + ' parse':>16}" for label in columns)
    print(f"{'mail':32}{heads}   (microseconds a mail)")
    for name in names:
        cells = "".join(f"{c[name]['whole']:16.1f}{c[name]['parse']:16.1f}"
                        for c in columns.values())
        print(f"{name:32}{cells}")
    means = "".join(
        f"{sum(c[n]['whole'] for n in TYPICAL) / len(TYPICAL):16.1f}"
        f"{sum(c[n]['parse'] for n in TYPICAL) / len(TYPICAL):16.1f}" for c in columns.values())
    print(f"{'mean of the typical mails':32}{means}")
    if len(columns) == 2:
        before, after = columns.values()
        for what in ("whole", "parse"):
            b = sum(before[n][what] for n in TYPICAL)
            a = sum(after[n][what] for n in TYPICAL)
            print(f"typical mails, {what}: {100 * (a - b) / b:+.1f}% "
                  f"({list(columns)[1]} against {list(columns)[0]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose pbem reads")
    parser.add_argument("--compare", help="another checkout, measured in the same run first")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reads", type=int, default=400)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.root, args.rounds, args.reads)))
        return
    columns = {}
    if args.compare:
        columns["before"] = run(args.compare, args.rounds, args.reads)
        columns["after"] = run(args.root, args.rounds, args.reads)
    else:
        columns["this"] = run(args.root, args.rounds, args.reads)
    show(columns)


if __name__ == "__main__":
    main()
