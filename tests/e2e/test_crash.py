"""Promise 1, crash safety: kill a real server process (SIGKILL) at each step of
handling mail and resolving a turn, over the real mail stack, restart it, and
check that nothing was lost and nothing was done twice.

The scene: a started game; all five players reply to their first report with
an order, so the fifth order resolves the turn. A child process runs one tick
(fetch over IMAP, store, process, resolve, send over SMTP) and is killed at a
crash point (testkit/crash.py, pbem/store/faults.py); a second child (the restart)
runs a tick to the end, and a third must find nothing left to do. Then:

- every order was applied exactly once: the turn resolved with the five
  players' own moves (none played by the robot), each mail handled once;
- every answer and report was sent: one confirmation per order mail, one
  turn-2 report per player, the referee's mail included;
- nobody got a second copy of anything, except when the crash fell between
  the SMTP hand-off and marking the mail sent: then exactly one mail arrives
  twice, with the same Message-ID.
"""

from __future__ import annotations

import os
import random
import smtplib
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from pbem.config import load_settings
from pbem.demo.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.games.records import find_game
from pbem.runner.server import Server
from pbem.store.claims import aware
from pbem.store.models import Game, InboundMail, Move, OutboundMail, PendingOrder
from testkit.crash import ROOT, Zygote
from testkit.net import free_ports
from testkit.serve import connect_smtp, listen_config
from testkit.stack import stack_config

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
KEY = "crash-referee-key"


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as z:
        yield z


def write_config(tmp_path: Path, stack, database: str, connections: int = 1,
                 stream: bool = False, eml: Path | None = None) -> Path:
    """One SMTP connection by default, and the tick's mail sent at its end (not while it
    handles: send_while_handling off): the crash chain counts the mails one by one. With
    ``eml`` no [smtp]: the mail is written as .eml files into that folder."""
    config = stack_config(tmp_path / "pbem.toml", stack, database, KEY,
                          # the reports rendered in the turn's transaction, whatever the
                          # default (the composer's: tests/e2e/test_crash_composer.py)
                          server={"send_while_handling": stream, "compose_apart": False,
                                  **({"outbox_dir": str(eml)} if eml else {})},
                          smtp={"connections": connections})
    if eml is not None:
        config.write_text(config.read_text(encoding="utf-8").split("[smtp]")[0],
                          encoding="utf-8")
    return config


class Scene:
    """A started game whose five players have just mailed their turn-1 orders; on the
    database of the ``database`` fixture (SQLite or PostgreSQL)."""

    def __init__(self, stack, tmp_path: Path, database: str, *, deadline: bool = False,
                 connections: int = 1, stream: bool = False, eml: bool = False) -> None:
        self.stack = stack
        for user in ["bluff", "referee", *PLAYERS]:
            stack.clear(user)
        self.eml = tmp_path / "outbox" if eml else None
        self.config = write_config(tmp_path, stack, database, connections, stream, self.eml)
        self.server = Server(load_settings(self.config))
        setup = [f"NEWGAME g1 SEED 11{' DEADLINE 1' if deadline else ''}"]
        setup += [f"ADD g1 {stack.address(u)} Player-{u}" for u in PLAYERS] + ["START g1"]
        for line in setup:
            self.server.referee.admin(line.split())
        assert self.server.tick().sent == 5
        self.order_ids: dict[str, str] = {}

    def send_orders(self, players: list[str]) -> None:
        rng = random.Random(3)
        for user in players:
            (report,) = self.mail_of(user)
            lines = client_order_lines(report_view(report), rng)
            raw = reply_to(report, self.stack.address(user), ["Here goes:", *lines, "Cheers"])
            self.order_ids[user] = str(parse_mail(raw)["Message-ID"])
            self.stack.deliver("bluff", raw, mail_from=self.stack.address(user))
        self.stack.wait_for("bluff", len(players))

    def mail_of(self, user: str) -> list[EmailMessage]:
        if self.eml is None:
            return [parse_mail(r) for r in self.stack.fetch_all(user)]
        mails = [parse_mail(f.read_bytes()) for f in sorted(self.eml.glob("*.eml"))]
        return [m for m in mails if str(m["To"]) == self.stack.address(user)]

    def check(self, *, may_repeat: int = 0, robot_seats: int = 0) -> None:
        """Every order applied once, every mail sent, at most ``may_repeat`` copies twice."""
        with Session(self.server.engine) as session:
            game = find_game(session, "g1")
            assert game.turn == 2
            moves = session.exec(select(Move).where(Move.game_id == game.id, Move.turn == 1)).all()
            assert len(moves) == 5
            assert Counter(m.by for m in moves)["player"] == 5 - robot_seats
            assert session.exec(select(PendingOrder)).all() == []
            inbound = session.exec(select(InboundMail)).all()
            assert len(inbound) == len(self.order_ids)
            assert {m.status for m in inbound} <= {"done"}
            assert all(m.outcome and m.outcome.startswith("order accepted") for m in inbound)
            outbound = session.exec(select(OutboundMail)).all()
            assert {m.status for m in outbound} == {"sent"}
            queued = Counter(m.message_id for m in outbound)
            assert set(queued.values()) == {1}
        copies: Counter[str] = Counter()
        for user in PLAYERS:
            mails = self.mail_of(user)
            copies.update(str(m["Message-ID"]) for m in mails)
            distinct = {str(m["Message-ID"]): m for m in mails}
            reports = [m for m in distinct.values() if report_view(m) is not None
                       and m["In-Reply-To"] is None]
            assert sorted(report_view(m)["turn"] for m in reports) == [1, 2], user
            answers = [m for m in distinct.values() if m["In-Reply-To"] is not None]
            if user in self.order_ids:
                assert [str(a["In-Reply-To"]) for a in answers] == [self.order_ids[user]], user
                assert "order received" in str(answers[0]["Subject"])
            else:
                assert answers == []
        # every mail the server queued for a player arrived; a repeat has the same Message-ID
        referee = self.stack.address("referee")
        assert set(copies) == {m.message_id for m in outbound if referee not in m.rcpts_json}
        assert sum(n - 1 for n in copies.values()) <= may_repeat
        assert self.stack.fetch_all("bluff") == []
        assert len(self.stack.fetch_all("bluff", "pbem-done")) == len(self.order_ids)


# Killed one after another: each restart takes up where the last process died and is
# killed at the next step, until a clean tick finishes the work. (n: the n-th pass.)
CHAIN = [
    "imap-fetched",            # bodies fetched, nothing stored
    "imap-stored:3",           # the five stored (one commit, a batch), none moved on the
                               # IMAP server
    "imap-moved",              # all five fetched again (deduplicated) and moved
    "inbound-handled:2",       # the first order handled, the second mid-transaction
    "inbound-committed:1",     # the second order committed
    "outbox-enqueued:6",       # orders 3 and 4 done; mid-transaction among the turn's reports
    "inbound-committed:1",     # the turn-resolving fifth order committed, nothing sent
    "outbox-claimed:3",        # two mails sent, the third claimed
    "outbox-handed-off:2",     # the third sent (the dead claimer's claim taken over), the
                               # fourth handed to SMTP but not marked sent
    "outbox-marked:3",         # the fourth sent again, the fifth and sixth sent and marked
]


def test_a_crash_at_every_step_loses_nothing_and_repeats_only_the_mail_in_flight(
        mailstack, tmp_path: Path, database: str, zygote: Zygote) -> None:
    scene = Scene(mailstack, tmp_path, database)
    scene.send_orders(PLAYERS)
    for crash in CHAIN:
        assert zygote.tick(scene.config, crash=crash) == -9, f"never reached {crash}"
    assert zygote.tick(scene.config) == 0          # the restart that runs to the end
    assert zygote.tick(scene.config) == 0          # and finds nothing left to do
    scene.check(may_repeat=1)
    # exactly one mail comes twice: the one in flight at "outbox-handed-off" (the order a
    # page goes out in groups a recipient's mails, so which row that is is not fixed here)
    copies = Counter(str(m["Message-ID"]) for u in PLAYERS for m in scene.mail_of(u))
    (repeated,) = [mid for mid, n in copies.items() if n > 1]
    assert copies[repeated] == 2
    with Session(scene.server.engine) as session:
        row = session.exec(select(OutboundMail).where(OutboundMail.message_id == repeated)).one()
        assert row.kind == "report" or row.inbound_id is not None


def test_a_crash_after_claiming_a_page_sends_each_mail_once(
        mailstack, tmp_path: Path, database: str, zygote: Zygote) -> None:
    """The whole page of the turn's mail is claimed in one transaction; killed before the
    first hand-off, the restart takes the dead process's claims over and sends each once."""
    scene = Scene(mailstack, tmp_path, database, connections=3)
    scene.send_orders(PLAYERS)
    assert zygote.tick(scene.config, crash="outbox-claimed:1") == -9
    with Session(scene.server.engine) as session:
        claimed = [m for m in session.exec(select(OutboundMail)) if m.claimed_by]
        assert len(claimed) > 3 and {m.status for m in claimed} == {"pending"}
    assert zygote.tick(scene.config) == 0
    assert zygote.tick(scene.config) == 0
    scene.check(may_repeat=0)


def test_a_crash_while_three_connections_send_repeats_at_most_their_mails_in_flight(
        mailstack, tmp_path: Path, database: str, zygote: Zygote) -> None:
    scene = Scene(mailstack, tmp_path, database, connections=3)
    scene.send_orders(PLAYERS)
    assert zygote.tick(scene.config, crash="outbox-handed-off:4") == -9
    assert zygote.tick(scene.config) == 0
    assert zygote.tick(scene.config) == 0
    scene.check(may_repeat=3)     # one a connection at most, each with its Message-ID


# Sending while handling (send_while_handling, the default): the answers leave while the
# next orders are handled, so a crash at any step may find a mail between its hand-off
# and its mark: at most one a connection, each crash.
STREAM_CHAIN = [
    "inbound-committed:2",     # orders 1 and 2 done, answer 2 queued (claimed) and not fed
    "outbox-handed-off:2",     # orders 3 to 5 handled while their answers leave: killed
                               # with the second handed off and not marked, maybe in the
                               # middle of an order (handled again in a bounded child:
                               # a kill is not the mail's fault, README "Guarantees" 3)
    "outbox-marked:2",         # what is left handled; the dead claims taken over, sent
    "outbox-handed-off:1",
]


def test_a_crash_while_sending_during_handling_loses_nothing(
        mailstack, tmp_path: Path, database: str, zygote: Zygote) -> None:
    scene = Scene(mailstack, tmp_path, database, connections=2, stream=True)
    scene.send_orders(PLAYERS)
    crashed = 0
    for crash in STREAM_CHAIN:
        status = zygote.tick(scene.config, crash=crash)
        if status == 0:     # the work ran out before this point: the rest is checked below
            break
        assert status == -9
        crashed += 1
    assert crashed >= 2, "the chain reaches its first two points at least"
    assert zygote.tick(scene.config) == 0
    assert zygote.tick(scene.config) == 0
    scene.check(may_repeat=2 * crashed)


def test_a_crash_with_the_eml_outbox_repeats_at_most_one_handled_mails_files(
        mailstack, tmp_path: Path, database: str, zygote: Zygote) -> None:
    """The .eml outbox marks a transaction's files sent with the next transaction's commit
    (pbem.outbox.Inline): killed while the second order is handled, the first order's
    answer is written and not marked; the restart writes it again (its Message-ID),
    loses nothing, and repeats no other mail. On PostgreSQL the five orders are one
    transaction (a game's group): killed at its third file, the three are written again."""
    scene = Scene(mailstack, tmp_path, database, stream=True, eml=True)
    scene.send_orders(PLAYERS)
    written = 1 if database.startswith("sqlite") else 3
    crash = "inbound-handled:2" if written == 1 else f"outbox-handed-off:{written}"
    assert zygote.tick(scene.config, crash=crash) == -9
    assert scene.eml is not None and len(list(scene.eml.glob("*.eml"))) == 5 + written
    assert zygote.tick(scene.config) == 0
    assert zygote.tick(scene.config) == 0
    scene.check(may_repeat=written)
    copies = Counter(str(m["Message-ID"]) for u in PLAYERS for m in scene.mail_of(u))
    assert sorted(copies.values(), reverse=True)[:written + 1] == [2] * written + [1]


@pytest.mark.parametrize("stream", [True, False], ids=["while-handling", "at-the-end"])
def test_answers_leave_while_the_tick_handles_the_next_orders(
        mailstack, tmp_path: Path, database: str, zygote: Zygote, stream: bool) -> None:
    """With send_while_handling the first order's answer is sent before the fifth order
    (the one that resolves the turn) is handled; without, all mail leaves at the end. On
    PostgreSQL the five are one transaction (a game's group: Referee.handle_group), so
    their answers leave together as it commits, before the tick's end."""
    scene = Scene(mailstack, tmp_path, database, stream=stream)
    scene.send_orders(PLAYERS)
    assert zygote.tick(scene.config) == 0
    grouped = database.startswith("postgresql")
    with Session(scene.server.engine) as session:
        inbound = session.exec(select(InboundMail).order_by(col(InboundMail.id))).all()
        first_answer = session.exec(select(OutboundMail).where(
            OutboundMail.inbound_id == inbound[0].id)).one()
        assert first_answer.sent_at is not None and inbound[-1].processed_at is not None
        assert (aware(first_answer.sent_at) < aware(inbound[-1].processed_at)) is \
            (stream and not grouped)
    scene.check()


def test_a_crash_mid_report_of_a_deadline_turn(mailstack, tmp_path: Path, database: str,
                                               zygote: Zygote) -> None:
    """The turn resolves at its deadline (in the tick's clock work), not by a mail."""
    scene = Scene(mailstack, tmp_path, database, deadline=True)
    scene.send_orders(["p1"])
    with Session(scene.server.engine) as session:   # the deadline passes
        game = session.exec(select(Game)).one()
        assert game.deadline is not None
        game.deadline = datetime.now(UTC) - timedelta(minutes=1)
        session.add(game)
        session.commit()
    # the confirmation is the first mail queued, the reports the second to sixth
    assert zygote.tick(scene.config, crash="outbox-enqueued:4") == -9
    with Session(scene.server.engine) as session:   # the crashed resolution left no trace
        assert find_game(session, "g1").turn == 1
        assert session.exec(select(Move)).all() == []
        assert len(session.exec(select(OutboundMail)).all()) == 5 + 1   # + the confirmation
    assert zygote.tick(scene.config) == 0
    assert zygote.tick(scene.config) == 0
    scene.check(robot_seats=4)


def test_pbem_tick_itself_dies_at_the_crash_point_and_recovers(mailstack, tmp_path: Path,
                                                               database: str) -> None:
    """The same over the real command line: PBEM_CRASH_AT in the environment of `pbem tick`."""
    scene = Scene(mailstack, tmp_path, database)
    scene.send_orders(PLAYERS)
    env = {**os.environ, "PBEM_CRASH_AT": "outbox-handed-off:6",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pbem.cli", "tick", "-c", str(scene.config)]
    crashed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert crashed.returncode == -9, crashed.stdout + crashed.stderr
    del env["PBEM_CRASH_AT"]
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "sent 5" in again.stdout     # the mail in flight (again) and the four after it
    scene.check(may_repeat=1)


def test_crash_points_cost_nothing_unless_armed() -> None:
    from pbem.store import faults
    faults.arm(None)
    for point in faults.POINTS:
        faults.crash_point(point)       # still alive
    with pytest.raises(ValueError, match="unknown crash point"):
        faults.arm("no-such-point")
    faults.arm(None)



def test_a_crash_after_the_listener_stored_a_mail_but_before_its_250(
        tmp_path: Path, database: str, zygote: Zygote) -> None:
    """The SMTP client never got its 250, so it sends again: the mail is handled once."""
    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port, database=database, referee_key=KEY,
                           outbox_dir="out")
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "ann@example.org", "bluff@example.org", "help"
    msg["Message-ID"] = "<listener-crash@example.org>"
    msg.set_content("HELP\n")
    raw = msg.as_bytes(policy=policy.SMTP)

    def deliver_while(crash: str | None, expect_250: bool) -> list[int]:
        statuses: list[int] = []
        child = threading.Thread(target=lambda: statuses.extend(
            zygote.run(config, crash=crash, job="listen", seconds=1.5)))
        child.start()
        client = connect_smtp(port, seconds=10, timeout=10)
        try:
            client.sendmail("ann@example.org", ["bluff@example.org"], raw)
            assert expect_250
            client.quit()
        except smtplib.SMTPServerDisconnected:
            assert not expect_250
        child.join(30)
        return statuses
    assert deliver_while("listener-stored", expect_250=False) == [-9]
    engine = Server(load_settings(config)).engine
    with Session(engine) as session:
        assert [m.status for m in session.exec(select(InboundMail))] == ["new"]   # stored
    assert deliver_while(None, expect_250=True) == [0]     # the client's retry, after restart
    with Session(engine) as session:
        rows = session.exec(select(InboundMail)).all()
        assert [m.status for m in rows] == ["done"]
        assert len(session.exec(select(OutboundMail)).all()) == 1
    assert len(list((tmp_path / "out").glob("*.eml"))) == 1
