"""Time from an order's delivery into the referee's mailbox to its answer in the
player's, with IMAP IDLE and with polling (the real Dovecot + SMTP stack of
testkit/mailstack.py, a real `pbem serve` process on SQLite).

Each mode: one `pbem serve`; ORDERS HELP mails from six players, one every SPACING
seconds (HELP runs the same path as an order's check and echo: fetch, handle, answer);
each answer is matched to its mail by In-Reply-To. IDLE runs with poll_seconds = 600
(no timed tick comes); polling with idle = false and poll_seconds = POLL (5 s by
default, to keep the run short: the wait grows with it, about half of it on average).
Prints per mode the median, 90th percentile and worst seconds, and the orders answered.

    python3 bench/idle_latency.py [--orders 200] [--poll 5] [--spacing 0.25]

Needs Dovecot (see .ci/run); run from the repository root.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testkit.e2e import Client  # noqa: E402
from testkit.mailstack import MailStack  # noqa: E402
from testkit.stack import stack_config  # noqa: E402

PLAYERS = ("p1", "p2", "p3", "p4", "p5", "p6")


def help_mail(stack: MailStack, user: str) -> tuple[str, bytes]:
    msg = EmailMessage()
    msg["From"], msg["To"] = stack.address(user), stack.address("bluff")
    msg["Subject"] = "help please"
    msg["Message-ID"] = make_msgid(domain="bluff.test")
    msg.set_content("HELP\n")
    return str(msg["Message-ID"]), msg.as_bytes(policy=policy.SMTP)


def run(stack: MailStack, workdir: Path, *, idle: bool, poll: float, orders: int,
        spacing: float) -> list[float]:
    for user in ("bluff", "referee", *PLAYERS):
        stack.clear(user)
    config = stack_config(workdir / "pbem.toml", stack, f"sqlite:///{workdir}/pbem.db", "k",
                          imap={"poll_seconds": 600 if idle else poll, "idle": idle},
                          server={"stranger_answers_per_day": orders + 10})
    proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "the first tick is done" in line:
            break
    threading.Thread(target=proc.stdout.read, daemon=True).start()   # drained
    sent: dict[str, float] = {}
    answered: dict[str, float] = {}
    clients = [Client(stack, user) for user in PLAYERS]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for client in clients:
                for mail in client.new_mail():
                    answered.setdefault(str(mail["In-Reply-To"]), time.monotonic())
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        for n in range(orders):
            message_id, raw = help_mail(stack, PLAYERS[n % len(PLAYERS)])
            stack.deliver("bluff", raw, mail_from=stack.address(PLAYERS[n % len(PLAYERS)]))
            sent[message_id] = time.monotonic()
            time.sleep(spacing)
        ends = time.monotonic() + 2 * poll + 30
        while len(answered.keys() & sent.keys()) < orders and time.monotonic() < ends:
            time.sleep(0.1)
    finally:
        done.set()
        watcher.join()
        for client in clients:
            client.close()
        proc.terminate()
        proc.wait(60)
    return [answered[m] - sent[m] for m in sent if m in answered]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--poll", type=float, default=5.0, help="poll_seconds when polling")
    parser.add_argument("--spacing", type=float, default=0.25, help="seconds between orders")
    args = parser.parse_args()
    with MailStack() as stack, tempfile.TemporaryDirectory() as tmp:
        print(f"{args.orders} orders, one every {args.spacing} s; delivery to answer, seconds")
        print(f"{'mode':<24} {'median':>7} {'p90':>7} {'worst':>7} {'answered':>9}")
        for name, idle in (("IDLE (poll 600 s)", True), (f"polling every {args.poll:g} s", False)):
            workdir = Path(tmp) / ("idle" if idle else "poll")
            workdir.mkdir()
            took = sorted(run(stack, workdir, idle=idle, poll=args.poll, orders=args.orders,
                              spacing=args.spacing))
            p90 = took[int(0.9 * (len(took) - 1))] if took else float("nan")
            print(f"{name:<24} {statistics.median(took):7.2f} {p90:7.2f} {max(took):7.2f} "
                  f"{len(took):>5}/{args.orders}", flush=True)


if __name__ == "__main__":
    main()
