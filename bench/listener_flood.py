"""The SMTP listener under a flood: `pbem serve` as a process, N mails over C parallel
SMTP connections on loopback; prints the mails the listener took a second and its
resident memory (before, at its peak during the flood, after).

    python3 bench/listener_flood.py                              # this checkout
    python3 bench/listener_flood.py --root ../pbem-old     # the pbem of another one
    python3 bench/listener_flood.py --root ../pbem-old --root .   # before/after

Options: `--mails` (2000), `--clients` (8 connections at once, each from its own
loopback address), `--size` (bytes of body a mail; 2000), `--root DIR` (repeatable:
each checkout in turn, the same flood). The mails are HELP requests from strangers, so
the server also answers them into its .eml outbox while it takes more.
"""

from __future__ import annotations

import argparse
import os
import smtplib
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.net import free_ports  # noqa: E402
from testkit.serve import connect_smtp, listen_config, rss_mb  # noqa: E402

OURS = "bluff@example.org"


def mail(client: int, i: int, size: int) -> bytes:
    body = b"".join(b"x" * 70 + b"\r\n" for _ in range(size // 72))
    return (f"From: s{client}@stranger.test\r\nTo: {OURS}\r\nSubject: help\r\n"
            f"Message-ID: <flood-{client}-{i}@bench>\r\n\r\nHELP\r\n").encode() + body


def flood(root: Path, mails: int, clients: int, size: int,
          throttled: bool = False) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_ports(1)[0]
        # the listener's mails a minute per IP / sender (451 past them) are off unless
        # asked for: the flood measures what the listener can take (a pbem without the
        # settings has no such limit)
        has_limits = "mails_per_minute_per_ip" in (root / "pbem" / "config.py").read_text()
        extra = ("" if throttled or not has_limits else
                 "mails_per_minute_per_ip = 0\nmails_per_minute_per_sender = 0\n")
        config = listen_config(Path(tmp) / "pbem.toml", port, outbox_dir="out", listen=extra)
        env = {**os.environ, "PYTHONPATH": str(root)}
        with open(Path(tmp) / "pbem.log", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c",
                                     str(config)], stdout=log, stderr=subprocess.STDOUT,
                                    env=env, cwd=root)
        try:
            connect_smtp(port, seconds=60).quit()
            before = rss_mb(proc.pid)
            peak = [before]
            taken = [0] * clients
            slowed = [0] * clients
            done = threading.Event()

            def watch() -> None:
                while not done.wait(0.05):
                    peak[0] = max(peak[0], rss_mb(proc.pid))

            def send(c: int) -> None:
                with smtplib.SMTP("127.0.0.1", port, timeout=60,
                                  source_address=(f"127.0.2.{c + 1}", 0)) as s:
                    for i in range(c, mails, clients):
                        try:
                            s.sendmail(f"s{c}@stranger.test", [OURS], mail(c, i, size))
                            taken[c] += 1
                        except smtplib.SMTPSenderRefused:   # 451: the throttle said later
                            slowed[c] += 1
                            s.rset()

            watcher = threading.Thread(target=watch)
            watcher.start()
            start = time.monotonic()
            senders = [threading.Thread(target=send, args=(c,)) for c in range(clients)]
            for t in senders:
                t.start()
            for t in senders:
                t.join()
            seconds = time.monotonic() - start
            done.set()
            watcher.join()
            return {"slowed": sum(slowed), "mails": sum(taken), "seconds": seconds, "per_second": sum(taken) / seconds,
                    "rss_before": before, "rss_peak": peak[0], "rss_after": rss_mb(proc.pid)}
        finally:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mails", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--root", action="append", type=Path)
    parser.add_argument("--throttled", action="store_true",
                        help="keep [listen] mails_per_minute_per_ip/_sender at their "
                             "defaults (the mails refused with 451 are counted)")
    args = parser.parse_args()
    print(f"{args.mails} mails of {args.size} bytes over {args.clients} connections")
    print(f"{'checkout':32} {'mails':>6} {'451':>5} {'s':>7} {'mails/s':>8} "
          f"{'RSS MB before':>14} {'peak':>6} {'after':>6}")
    for root in args.root or [ROOT]:
        r = flood(root.resolve(), args.mails, args.clients, args.size, args.throttled)
        print(f"{str(root)[-32:]:32} {r['mails']:6.0f} {r['slowed']:5.0f} {r['seconds']:7.1f} "
              f"{r['per_second']:8.1f} {r['rss_before']:14.0f} {r['rss_peak']:6.0f} "
              f"{r['rss_after']:6.0f}", flush=True)


if __name__ == "__main__":
    main()
