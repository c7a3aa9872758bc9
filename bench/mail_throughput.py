"""Play N postal games over the real mail stack and measure the referee's mail path.

Prints mails processed per second by `pbem tick` (fetch + process + resolve +
send), and the ratio of tick's time to the bare cost of the same mail work
done directly: fetching the same inbound mails with imapclient (and moving
them, as tick does) and sending the same number of outbound mails with
smtplib, measured in the same run on the same Dovecot.

    python bench/mail_throughput.py [--games 3] [--relay-processes 2]

The test stack's SMTP relay runs in processes of its own (two by default), as
an MTA does: it does not share this interpreter, and it serves the tick's
connections (``[smtp] connections``) in parallel. The bare sending uses one
connection, the floor the issue sets.

Needs Dovecot (dovecot-imapd, dovecot-lmtpd); run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import random
import smtplib
import sys
import tempfile
import time
from email import policy
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import Session, select  # noqa: E402

from pbem.config import ImapSettings, Settings, SmtpSettings  # noqa: E402
from pbem.models import InboundMail, OutboundMail  # noqa: E402
from pbem.robot_client import choose_order, order_lines, parse_mail, reply_to, report_view  # noqa: E402
from pbem.server import Server  # noqa: E402
from tests.mailstack import MailStack  # noqa: E402

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
KEY = "bench-referee-key"


def play(stack: MailStack, server: Server, name: str, seed: int) -> float:
    """One whole game; returns the seconds spent inside tick."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = stack.address("referee"), stack.address("bluff"), "go"
    lines = [f"KEY {KEY}", f"NEWGAME {name} SEED {seed}"]
    lines += [f"ADD {name} {stack.address(u)} {u}" for u in PLAYERS] + [f"START {name}"]
    msg.set_content("\n".join(lines) + "\n")
    stack.deliver("bluff", msg.as_bytes(policy=policy.SMTP), mail_from=stack.address("referee"))
    seen = {u: len(stack.fetch_all(u)) for u in PLAYERS}
    rng = random.Random(seed)
    ticking = 0.0
    while True:
        start = time.perf_counter()
        server.tick()
        ticking += time.perf_counter() - start
        over, moved = False, False
        for user in PLAYERS:
            raws = stack.fetch_all(user)
            fresh, seen[user] = raws[seen[user]:], len(raws)
            reports = [m for m in map(parse_mail, fresh) if report_view(m) is not None
                       and report_view(m)["game"] == name]
            if not reports:
                continue
            report = reports[-1]
            view = report_view(report)
            assert view is not None
            over = over or view["game_over"]
            move = choose_order(view, rng)
            if move is not None:
                stack.deliver("bluff", reply_to(report, stack.address(user), order_lines(move)),
                              mail_from=stack.address(user))
                moved = True
        if over or not moved:
            return ticking


def bare_cost(stack: MailStack, inbound: list[bytes], outbound: list[tuple[str, list[str], bytes]]) -> float:
    """The same mail work done directly with imapclient and smtplib."""
    client = stack.imap("bluff")
    client.select_folder("INBOX")
    for raw in inbound:
        client.append("INBOX", raw)
    if not client.folder_exists("bare-done"):
        client.create_folder("bare-done")
    client.logout()
    start = time.perf_counter()
    client = stack.imap("bluff")
    client.select_folder("INBOX")
    uids = client.search(["ALL"])
    data = client.fetch(uids, ["RFC822.SIZE"])
    data = client.fetch(uids, ["BODY.PEEK[]"])
    assert len(data) == len(inbound)
    client.move(uids, "bare-done")
    client.logout()
    with smtplib.SMTP(stack.smtp_host, stack.smtp_port) as smtp:
        for mail_from, rcpts, raw in outbound:
            smtp.sendmail(mail_from, rcpts, raw)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--relay-processes", type=int, default=2,
                        help="processes of the test SMTP relay, each serving connections as a "
                             "real MTA's do (default 2); 0: a thread of this process, sharing "
                             "its interpreter")
    parser.add_argument("--send-after-handling", action="store_true",
                        help="[smtp] send_while_handling = false: a tick sends its mail once "
                             "it has handled all of it")
    args = parser.parse_args()
    with MailStack(relay_processes=args.relay_processes) as stack, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database=f"sqlite:///{tmp}/bench.db", address=stack.address("bluff"),
            referee=stack.address("referee"), referee_key=KEY,
            imap=ImapSettings(stack.imap_host, stack.imap_port, ssl=False,
                              username=stack.address("bluff"), password=stack.password),
            smtp=SmtpSettings(stack.smtp_host, stack.smtp_port, starttls=False,
                              send_while_handling=not args.send_after_handling))
        server = Server(settings)
        wall = time.perf_counter()
        ticking = sum(play(stack, server, f"bench-{i}", 1000 + i) for i in range(args.games))
        wall = time.perf_counter() - wall
        with Session(server.engine) as session:
            inbound = [r.raw for r in session.exec(select(InboundMail))]
            outbound = [(r.mail_from, json.loads(r.rcpts_json), r.raw)
                        for r in session.exec(select(OutboundMail)) if r.status == "sent"]
        bare = bare_cost(stack, inbound, outbound)
        mails = len(inbound) + len(outbound)
        print(f"games played:              {args.games}")
        print(f"mails in / out:            {len(inbound)} / {len(outbound)}")
        print(f"time inside pbem tick:     {ticking:.2f} s (whole run with the players: {wall:.2f} s)")
        print(f"mails handled per second:  {mails / ticking:.1f} (in + out, by tick)")
        print(f"inbound orders per second: {len(inbound) / ticking:.1f}")
        print(f"bare imapclient+smtplib:   {bare:.2f} s for the same mails")
        print(f"ratio tick / bare:         {ticking / bare:.1f}x")


if __name__ == "__main__":
    main()
