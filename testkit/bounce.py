"""The bounce corpus (tests/corpus/bounces/): real-shaped bounces as bytes, with the
names of the mail that bounced filled in by the test (@@MESSAGE_ID@@, @@RCPT@@ the
address that failed, @@SERVER@@ the address the bounce is sent to, @@FROM@@ the
server's address, @@DOMAIN@@ its domain)."""

from __future__ import annotations

import dataclasses
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from pbem.runner.server import Server
from testkit.desk import Clock, key_of
from testkit.e2e import REFEREE_KEY
from testkit.stack import stack_settings

CORPUS = Path(__file__).parents[1] / "tests" / "corpus" / "bounces"

#: shape -> (what flufl.bounce reads it as, permanent?)
SHAPES = {
    "postfix_dsn": ("RFC 3464 DSN from Postfix, original attached (message/rfc822)", True),
    "exim_dsn": ("RFC 3464 DSN from Exim 4.96, original attached", True),
    "gmail": ("Gmail DSN, returned headers only (text/rfc822-headers), In-Reply-To", True),
    "qmail": ("qmail QSBMF, the original quoted in the text", True),
    "exchange_ndr": ("Exchange NDR ('did not reach the following recipient(s)')", True),
    "postfix_delayed": ("Postfix delay warning (Action: delayed)", False),
    "verp_only": ("DSN without the original: only the VERP return path names the mail", True),
}


def bounce_bytes(shape: str, *, message_id: str, rcpt: str, server: str,
                 from_addr: str | None = None) -> bytes:
    from_addr = from_addr or server
    text = (CORPUS / f"{shape}.eml").read_text(encoding="utf-8")
    for key, value in (("@@MESSAGE_ID@@", message_id), ("@@RCPT@@", rcpt),
                       ("@@SERVER@@", server), ("@@FROM@@", from_addr),
                       ("@@DOMAIN@@", from_addr.rpartition("@")[2])):
        text = text.replace(key, value)
    assert "@@" not in text.replace("@@@", "")
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8")


PLAYERS = ["p1", "p2", "p3", "p4", "p5"]


class Desk:
    """A server on the mail stack with a clock the test moves."""

    def __init__(self, stack: Any, tmp_path: Path, *, verp: bool = False,
                 **settings: Any) -> None:
        self.stack, self.clock = stack, Clock()
        for user in ["bluff", "referee", "observer", *PLAYERS]:
            stack.clear(user)
        base = stack_settings(stack, f"sqlite:///{tmp_path / 'pbem.db'}", REFEREE_KEY, verp=verp)
        self.server = Server(dataclasses.replace(base, **settings), clock=self.clock)
        self.n = 0

    def send(self, user: str, *lines: str, in_reply_to: str | None = None,
             top: tuple[str, ...] = ()) -> None:
        """A mail from user to the server; ``top``: header lines above all others (as the
        receiving mail server writes them)."""
        self.n += 1
        msg = EmailMessage()
        msg["From"] = self.stack.address(user)
        msg["To"] = self.stack.address("bluff")
        msg["Subject"] = "orders"
        msg["Message-ID"] = f"<hdr-{self.n}@client.bluff.test>"
        if in_reply_to:
            msg["In-Reply-To"] = in_reply_to
        msg.set_content("\n".join(lines) + "\n")
        raw = "".join(f"{h}\r\n" for h in top).encode() + msg.as_bytes(policy=policy.SMTP)
        self.stack.deliver("bluff", raw, mail_from=self.stack.address(user))

    def referee(self, *lines: str) -> None:
        self.send("referee", f"KEY {REFEREE_KEY}", *lines)

    def player(self, user: str, *lines: str, top: tuple[str, ...] = ()) -> None:
        email = self.stack.address(user)
        self.send(user, "GAME g1", f"KEY {key_of(self.server, email)}", *lines, top=top)

    def tick(self) -> None:
        report = self.server.tick()
        assert report.failed == 0 and not report.problems, report


