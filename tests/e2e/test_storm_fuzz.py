"""Issue 32, item 6: a storm of mixed hostile mail, fuzzed, through the real path.

A seeded generator (testkit/storm.py) makes the storm: a player's real reply to their
real first report, mutated (bytes flipped to 8-bit ones, NULs and bare line breaks put
in, spans cut and doubled, hostile header lines put in), and header soup (several of
the storm's hostile header categories at once, from players and strangers, with orders
without keys, HELP, LIST and garbage). All of it goes into the server's INBOX on the
real Dovecot, is fetched (in one batch), stored in SQLite and handled, and answered
over the real SMTP relay. Then: no tick logged a traceback, nothing is stuck (the INBOX
is empty, no mail is left new, none failed), each mail was answered at most once, no
stranger got more answers than the README promises, and nothing was applied to the game.
"""

from __future__ import annotations

import logging
import random
import time
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, func, select

from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.runner.server import Server
from pbem.store.models import InboundMail, OutboundMail
from pbem.store.work import Work
from testkit.e2e import REFEREE_KEY
from testkit.stack import stack_settings
from testkit.storm import HOSTILE, mutated, storm_mail

pytestmark = pytest.mark.mailstack

SEED = 32
PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
STRANGERS = ["observer", "p6"]
MUTATED, SOUP = 40, 40
BODIES = ["HELP", "LIST", "STATUS", "BID 2 threes", "GAME g1\nKEY not-the-key\nBID 3 fives",
          "\x00\x1b[31m\u202egarbage\u2028more", "CONFIRM 0123456789", "=?utf-8?q?=0D=0A?="]


def real_reply(stack: Any, user: str) -> bytes:
    """``user``'s reply to their latest report, as a mail client writes it: a line of
    thanks (no order) over the whole report, quoted."""
    raw = stack.fetch_all(user)[-1]
    report = BytesParser(policy=policy.default).parsebytes(raw)
    body = report.get_body(("plain",))
    assert body is not None
    msg = EmailMessage()
    msg["From"], msg["To"] = stack.address(user), stack.address("bluff")
    msg["Subject"] = f"Re: {report['Subject']}"
    msg["In-Reply-To"] = msg["References"] = report["Message-ID"]
    quoted = "\n".join("> " + line for line in str(body.get_content()).splitlines())
    msg.set_content(f"Thanks, a good turn.\n\nOn Tuesday the referee wrote:\n{quoted}\n")
    return msg.as_bytes(policy=policy.SMTP)


def storm(stack: Any, rng: random.Random) -> list[bytes]:
    """The storm: every category once, mutated replies and header soup, each with a
    Message-ID of its own on top (a mutation may still spoil it)."""
    mails = [storm_mail(lines, stack.address(rng.choice(STRANGERS)), rng.choice(BODIES),
                        stack.address("bluff")) for _, lines in HOSTILE]
    replies = {user: real_reply(stack, user) for user in PLAYERS[:2]}
    for n in range(MUTATED):
        reply = replies[PLAYERS[n % 2]]
        mails.append(f"Message-ID: <fuzz-{n}@storm.test>\r\n".encode() + mutated(reply, rng))
    for _ in range(SOUP):
        lines = b"".join(rng.choice(HOSTILE)[1] for _ in range(rng.randrange(1, 5)))
        sender = stack.address(rng.choice(PLAYERS[:2] + STRANGERS))
        mails.append(storm_mail(lines, sender, rng.choice(BODIES), stack.address("bluff")))
    return mails


def test_a_fuzzed_storm_leaves_nothing_stuck_applied_or_answered_twice(
        mailstack: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    for user in ["bluff", "referee", *PLAYERS, *STRANGERS]:
        mailstack.clear(user)
    server = Server(stack_settings(mailstack, f"sqlite:///{tmp_path / 'pbem.db'}",
                                   REFEREE_KEY))
    server.referee.admin(["NEWGAME", "g1", "SEED", "3"])
    for n, user in enumerate(PLAYERS, 1):
        server.referee.admin(["ADD", "g1", mailstack.address(user), f"Player-{n}"])
    server.referee.admin(["START", "g1"])
    server.tick()                                        # the first reports go out
    mailstack.wait_for("p2", 1)
    with Session(server.engine) as session:
        before = session.exec(select(func.max(OutboundMail.id))).one() or 0

    mails = storm(mailstack, random.Random(SEED))
    mailstack.append("bluff", *mails)
    started = time.monotonic()
    with caplog.at_level(logging.INFO):
        first = server.tick()
        server.tick()
    seconds = time.monotonic() - started

    assert [r.getMessage() for r in caplog.records
            if r.exc_info is not None or r.levelno >= logging.ERROR] == []
    assert first.fetched == len(mails)                   # one fetch, one batch
    assert mailstack.fetch_all("bluff") == []            # nothing stays in the INBOX
    with Work(server.engine) as session:
        statuses = session.exec(select(InboundMail.status, func.count()).group_by(
            col(InboundMail.status))).all()
        assert dict(statuses).keys() == {"done"}          # none new, none failed
        answers = session.exec(select(OutboundMail.inbound_id, func.count()).where(
            col(OutboundMail.id) > before, col(OutboundMail.inbound_id).is_not(None))
            .group_by(col(OutboundMail.inbound_id))).all()
        assert answers and max(count for _, count in answers) == 1
        for stranger in STRANGERS:
            rows = session.exec(select(OutboundMail.id).where(
                OutboundMail.rcpts_json == f'["{mailstack.address(stranger)}"]')).all()
            assert len(rows) <= server.settings.stranger_answers_per_day
        game = find_game(session, "g1")
        assert game.turn == 1 and pending_orders(session, game) == {}
    referee = [m for m in mailstack.fetch_all("referee") if b"could not be" in m]
    assert referee == []
    assert seconds < 30
