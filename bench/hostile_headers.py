"""What one hostile mail costs the reader (pbem.mail.read.read_message).

For every shape of hostile header (and a few hostile bodies) it reads mails of
growing size, each in a fresh process, and prints the CPU time and the peak of
resident memory that reading it added (Linux: the peak is reset once the mail is
built), and the CPU time of reading the orders of its new text (pbem.orders.parsing.parse_text,
a postal game's orders); then the worst mail per shape.

    python bench/hostile_headers.py              # up to the issue's sizes and 10 MB bodies
    python bench/hostile_headers.py --quick      # small sizes only
    python bench/hostile_headers.py --shape ct_params --limit-mb 3000 --timeout 120

Each mail is read by a child process with a memory limit (``--limit-mb``, address
space) and a time limit (``--timeout``), so a mail the reader cannot bound shows as
"killed" or "out of memory" instead of taking the machine down.  ``--root DIR``
reads with the pbem of another checkout (for a before/after).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MB = 1024 * 1024


def _mail(headers: list[bytes], body: bytes = b"HELP\r\n") -> bytes:
    return b"\r\n".join(headers) + b"\r\n\r\n" + body


def _plain(*extra: bytes) -> list[bytes]:
    return [b"From: p1@bluff.test", b"To: bluff@bluff.test", b"Subject: orders",
            b"Message-ID: <bench@x.test>", *extra]


def dots_from(n: int) -> bytes:
    return _mail([b"From: x" + b"." * n + b"@evil.test", *_plain()[1:]])


def ct_params(n: int) -> bytes:
    return _mail(_plain(b"Content-Type: text/plain" +
                        b"".join(b"; a=%d" % (i % 10) for i in range(n))))


def ct_rfc2231(n: int) -> bytes:
    return _mail(_plain(b"Content-Type: text/plain" +
                        b"".join(b"; n*%d*=x'y'%%41" % i for i in range(n))))


def ew_from(n: int) -> bytes:
    return _mail([b"From: " + b" ".join([b"=?utf-8?q?p1?="] * n) + b" <p1@bluff.test>",
                  *_plain()[1:]])


def ew_subject(n: int) -> bytes:
    return _mail([*_plain()[:2], b"Subject: " + b" ".join([b"=?utf-8?q?a?="] * n),
                  *_plain()[3:]])


def nested_ew_subject(n: int) -> bytes:
    """Encoded words whose text is itself encoded words (decoded once only)."""
    inner = b"=?utf-8?b?PT91dGYtOD9xP2E/PQ==?="   # "=?utf-8?q?a?=" in base64
    return _mail([*_plain()[:2], b"Subject: " + b" ".join([inner] * n), *_plain()[3:]])


def many_fields(n: int) -> bytes:
    return _mail(_plain(*[b"X-F%d: v" % i for i in range(n)]))


def folded_field(n: int) -> bytes:
    return _mail(_plain(b"X-Folded: a" + b"\r\n b" * n))


def long_unknown_field(n: int) -> bytes:
    return _mail(_plain(b"X-Long: " + b"a" * n))


def many_parts(n: int) -> bytes:
    part = b"--b\r\nContent-Type: text/plain; charset=utf-8; format=flowed\r\n\r\nx\r\n"
    return _mail(_plain(b"Content-Type: multipart/mixed; boundary=b"), part * n + b"--b--\r\n")


def parts_at_caps(n: int) -> bytes:
    """Parts whose Content-Type and Content-Disposition are each at their caps."""
    params = b"".join(b"; p%d=v" % i for i in range(39))
    part = (b"--b\r\nContent-Type: text/plain" + params + b"\r\nContent-Disposition: inline" +
            params + b"\r\n\r\nx\r\n")
    return _mail(_plain(b"Content-Type: multipart/mixed; boundary=b"), part * n + b"--b--\r\n")


def nested_multiparts(n: int) -> bytes:
    inner = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i)
                     for i in range(1, n))
    return _mail(_plain(b"Content-Type: multipart/mixed; boundary=b0"),
                 b"--b0\r\n" + inner + b"Content-Type: text/plain\r\n\r\nBID 1 two\r\n")


def newline_body(n: int) -> bytes:
    return _mail(_plain(), b"HELP\r\n" + b"\r\n" * n)


def short_lines_body(n: int) -> bytes:
    return _mail(_plain(), b"x\r\n" * n)


def html_body(n: int) -> bytes:
    return _mail(_plain(b"Content-Type: text/html"), b"<p>x</p>" * n)


def html_nested(n: int) -> bytes:
    return _mail(_plain(b"Content-Type: text/html"), b"<div>" * n + b"BID 1 two")


def html_attributes(n: int) -> bytes:
    return _mail(_plain(b"Content-Type: text/html"),
                 b"<p " + b" ".join(b"a%d=x" % i for i in range(n)) + b">BID 1 two</p>")


def html_blockquotes(n: int) -> bytes:
    return _mail(_plain(b"Content-Type: text/html"), b"<blockquote>x" * n)


def boundary_lookalikes(n: int) -> bytes:
    """A body full of near-boundaries: "--b" not at the start of a line."""
    return _mail(_plain(b"Content-Type: multipart/mixed; boundary=b"), b"x--b" * n)


def attribution_lines(n: int) -> bytes:
    """Lines that each look like the start of a quote header, wrapped (a time, an address,
    a colon at the end), none of them one: every line is tried as an attribution."""
    line = b"pe 20. lokakuuta 2017 klo 17.50 " + b"a@b.c x " * 30 + b"BID 1 two:\r\n"
    return _mail(_plain(), line * n)


def spoken_lines(n: int) -> bytes:
    """Lines full of bids as people write them, none of them one (the reading of orders
    tries each clause of each line)."""
    line = ("maybe I bid 3 fives, ich biete nicht 4 F\u00fcnfer, s\u00e1z\u00edm 5 p\u011btek"
            "? 6 stars or 7 twos, danke, 8 Sterne bitte").encode() + b"\r\n"
    return _mail(_plain(b"Content-Type: text/plain; charset=utf-8"), line * n)


def long_order_lines(n: int) -> bytes:
    """Lines of 5,000 characters (as long as a line is read) of words that order lines
    are made of."""
    return _mail(_plain(), ((b"drei Fuenfer " * 385)[:5000] + b"\r\n") * n)


def bordered_divs(n: int) -> bytes:
    """HTML full of Windows Mail's bordered divs, none opening with a From label."""
    return _mail(_plain(b"Content-Type: text/html"),
                 b'<div style="border-top:solid #E1E1E1 1.0pt"><p><b></b>' * n + b"BID 1 two")


SHAPES: dict[str, tuple[Callable[[int], bytes], list[int], list[int]]] = {
    # name: (maker, sizes, quick sizes)
    "dots_from": (dots_from, [1_000, 5_000, 20_000, 40_000], [1_000, 20_000]),
    "ct_params": (ct_params, [100, 1_000, 8_000, 50_000], [100, 8_000]),
    "ct_rfc2231": (ct_rfc2231, [100, 1_000, 6_000, 20_000], [100, 6_000]),
    "ew_from": (ew_from, [100, 1_000, 10_000, 20_000], [100, 10_000]),
    "ew_subject": (ew_subject, [100, 1_000, 12_000, 50_000], [100, 12_000]),
    "nested_ew_subject": (nested_ew_subject, [50, 10_000], [50, 10_000]),
    "many_fields": (many_fields, [1_000, 10_000, 1_000_000], [1_000, 10_000]),
    "folded_field": (folded_field, [1_000, 100_000, 3_000_000], [1_000, 100_000]),
    "long_unknown_field": (long_unknown_field, [10_000, 9_000_000], [10_000, 1_000_000]),
    "many_parts": (many_parts, [100, 2_000, 100_000], [100, 2_000]),
    "parts_at_caps": (parts_at_caps, [100, 500, 5_000], [100, 500]),
    "nested_multiparts": (nested_multiparts, [10, 1_000, 100_000], [10, 1_000]),
    "newline_body": (newline_body, [1_000, 4_500_000], [1_000, 100_000]),
    "short_lines_body": (short_lines_body, [1_000, 3_000_000], [1_000, 100_000]),
    "html_body": (html_body, [1_000, 25_000, 60_000, 1_200_000], [1_000, 25_000]),
    "html_nested": (html_nested, [1_000, 39_000, 2_000_000], [1_000, 39_000]),
    "html_attributes": (html_attributes, [1_000, 22_000, 1_500_000], [1_000, 22_000]),
    "html_blockquotes": (html_blockquotes, [1_000, 14_000, 800_000], [1_000, 14_000]),
    "boundary_lookalikes": (boundary_lookalikes, [1_000, 2_500_000], [1_000, 100_000]),
    "attribution_lines": (attribution_lines, [1_000, 3_000], [1_000, 3_000]),
    "bordered_divs": (bordered_divs, [1_000, 3_000], [1_000, 3_000]),
    "spoken_lines": (spoken_lines, [1_000, 100_000], [1_000, 10_000]),
    "long_order_lines": (long_order_lines, [300, 1_000], [300, 1_000]),
}


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    """Reset this process's peak resident size (Linux: VmHWM), so the peak measured is
    the reading's, not building the mail's."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def measure_one(shape: str, size: int, limit_mb: int,
                root: str) -> dict[str, float | int | str]:
    """In this (child) process: build the mail, read it once, report the cost."""
    if limit_mb:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb * MB, limit_mb * MB))
    sys.path.insert(0, root)
    from pbem.mail.read import read_message

    raw = SHAPES[shape][0](size)
    read_message(b"From: a@x.test\r\n\r\nwarm up\r\n")
    exact = _reset_peak()
    before = _status_kb("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = time.process_time()
    msg = read_message(raw)
    cpu = time.process_time() - cpu
    # then the orders of its new text are read, as a postal game's player mail is
    from pbem.commands.registry import player_commands
    from pbem.kinds import KINDS
    from pbem.orders.parsing import parse_text
    commands = player_commands(KINDS["postal"])
    orders_cpu = time.process_time()
    parse_text(msg.lines, commands)
    orders_cpu = time.process_time() - orders_cpu
    after = _status_kb("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = ("sender " + str(msg.from_addr) if msg.readable
               else str(msg.problem or "unreadable"))[:70]
    return {"bytes": len(raw), "cpu": cpu, "orders": orders_cpu,
            "mb": max(0, after - before) / 1024, "outcome": outcome}


def run_child(shape: str, size: int, limit_mb: int, timeout: float,
              root: str) -> dict[str, object]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", shape, str(size),
           "--limit-mb", str(limit_mb), "--root", root]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"killed after {timeout:g} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": "out of memory" if "MemoryError" in last else last[:70]}
    return dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES))
    parser.add_argument("--limit-mb", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose pbem reads")
    parser.add_argument("--child", nargs=2, metavar=("SHAPE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_one(args.child[0], int(args.child[1]), args.limit_mb,
                                     args.root)))
        return
    worst: dict[str, tuple[float, float, str]] = {}
    print(f"{'shape':<20} {'size':>10} {'bytes':>11} {'cpu s':>8} {'orders s':>8} {'+MB':>8}"
          "  outcome")
    for shape in args.shape or list(SHAPES):
        _, sizes, quick = SHAPES[shape]
        for size in quick if args.quick else sizes:
            got = run_child(shape, size, args.limit_mb, args.timeout, args.root)
            if "error" in got:
                print(f"{shape:<20} {size:>10,} {'':>11} {'':>8} {'':>8}  {got['error']}")
                worst[shape] = (float("inf"), float("inf"), f"size {size:,}: {got['error']}")
                continue
            cpu, mb = float(str(got["cpu"])), float(str(got["mb"]))
            orders = float(str(got["orders"]))
            print(f"{shape:<20} {size:>10,} {int(str(got['bytes'])):>11,} {cpu:>8.3f} "
                  f"{orders:>8.3f} {mb:>8.1f}  {got['outcome']}")
            cpu += orders
            if shape not in worst or (cpu, mb) > worst[shape][:2]:
                worst[shape] = (cpu, mb, f"size {size:,}, {int(str(got['bytes'])):,} bytes")
    print("\nworst mail per shape (CPU: reading the mail and its orders):")
    for shape, (cpu, mb, what) in worst.items():
        print(f"  {shape:<20} {cpu:>8.3f} s CPU {mb:>8.1f} MB  ({what})")
    finite = [w for w in worst.values() if w[0] != float("inf")]
    if finite:
        print(f"\nworst of all: {max(w[0] for w in finite):.3f} s CPU, "
              f"{max(w[1] for w in finite):.1f} MB")


if __name__ == "__main__":
    main()
