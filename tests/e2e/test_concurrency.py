"""Promise 7, concurrency: two (or three) servers at once against the same
database and mailbox handle every mail once, resolve every turn once and send
every mail once. What keeps them apart is in the database: the referee lease
(server_state), a claim on each inbound mail and each outbox row, and a
handling transaction that begins by re-checking its claim with a write.

The processes are real: forked children of testkit/crash.py's zygote (so
they start together and overlap), and two `pbem tick` commands.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import Session, select

from pbem.config import load_settings
from pbem.demo.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.games.records import find_game
from pbem.runner.server import Server
from pbem.store import claims
from pbem.store.claims import Lease
from pbem.store.models import InboundMail, Move, OutboundMail, ServerState
from testkit.crash import ROOT, Zygote
from testkit.smtp_relay import start_controller
from tests.e2e.test_crash import PLAYERS, Scene

pytestmark = pytest.mark.mailstack


@pytest.fixture(scope="module")
def zygote():
    with Zygote() as z:
        yield z


def latest_report(scene: Scene, user: str, turn: int) -> EmailMessage:
    reports = [m for m in scene.mail_of(user) if report_view(m) is not None
               and m["In-Reply-To"] is None and report_view(m)["turn"] == turn]
    assert len(reports) == 1, (user, turn, len(reports))
    return reports[0]


def send_turn(scene: Scene, turn: int, rng: random.Random) -> list[str]:
    ids = []
    for user in PLAYERS:
        report = latest_report(scene, user, turn)
        lines = client_order_lines(report_view(report), rng)
        raw = reply_to(report, scene.stack.address(user), lines)
        ids.append(str(parse_mail(raw)["Message-ID"]))
        scene.stack.deliver("bluff", raw, mail_from=scene.stack.address(user))
    return ids


def test_two_ticks_at_once_handle_every_mail_once(mailstack, tmp_path: Path, database: str,
                                                  zygote: Zygote) -> None:
    scene = Scene(mailstack, tmp_path, database)
    rng = random.Random(8)
    sent_ids: list[str] = []
    for turn in (1, 2):
        sent_ids += send_turn(scene, turn, rng)
        mailstack.wait_for("bluff", 5)
        assert zygote.run(scene.config, count=2) == [0, 0]
    assert zygote.run(scene.config, count=2) == [0, 0]
    with Session(scene.server.engine) as session:
        game = find_game(session, "g1")
        assert game.turn == 3                                   # two turns, each once
        moves = session.exec(select(Move).where(Move.game_id == game.id)).all()
        assert Counter(m.turn for m in moves) == {1: 5, 2: 5}
        assert {m.by for m in moves} == {"player"}
        inbound = session.exec(select(InboundMail)).all()
        assert len(inbound) == 10 and {m.status for m in inbound} == {"done"}
        outbound = session.exec(select(OutboundMail)).all()
        assert {m.status for m in outbound} == {"sent"}
        answers = Counter(m.inbound_id for m in outbound if m.kind == "confirm")
        assert set(answers.values()) == {1} and len(answers) == 10
    for user in PLAYERS:
        mails = scene.mail_of(user)
        ids = Counter(str(m["Message-ID"]) for m in mails)
        assert set(ids.values()) == {1}, user                   # nothing arrived twice
        turns = sorted(report_view(m)["turn"] for m in mails
                       if report_view(m) is not None and m["In-Reply-To"] is None)
        assert turns == [1, 2, 3]
        replied = Counter(str(m["In-Reply-To"]) for m in mails if m["In-Reply-To"])
        assert sorted(replied) == sorted(i for i in sent_ids if replied.get(i)) and \
            set(replied.values()) == {1} and len(replied) == 2
    assert mailstack.fetch_all("bluff") == []
    assert len(mailstack.fetch_all("bluff", "pbem-done")) == 10


def test_two_pbem_tick_commands_at_once(mailstack, tmp_path: Path, database: str) -> None:
    scene = Scene(mailstack, tmp_path, database)
    scene.send_orders(PLAYERS)
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PBEM_CRASH_AT", None)
    command = [sys.executable, "-m", "pbem.cli", "tick", "-c", str(scene.config)]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    scene.check(may_repeat=0)


# --------------------------------------------------------------------------- each part alone


def many_mails(scene: Scene, n: int) -> None:
    """n HELP mails from the players, stored and waiting (no IMAP involved); each is
    answered while n is at most answers_per_hour (10) a player."""
    for i in range(n):
        msg = EmailMessage()
        msg["From"] = scene.stack.address(PLAYERS[i % 5])
        msg["To"] = scene.stack.address("bluff")
        msg["Subject"] = f"help {i}"
        msg["Message-ID"] = make_msgid(domain="bluff.test")
        msg.set_content("HELP\n")
        assert scene.server.referee.store_inbound(msg.as_bytes(policy=policy.SMTP),
                                                  source="smtp")


def test_claims_alone_keep_three_referees_from_handling_a_mail_twice(
        mailstack, tmp_path: Path, database: str, zygote: Zygote) -> None:
    """Without the tick's lease: three processes run process_pending on the same mails."""
    scene = Scene(mailstack, tmp_path, database)
    many_mails(scene, 50)
    assert zygote.run(scene.config, job="process", count=3) == [0, 0, 0]
    with Session(scene.server.engine) as session:
        inbound = session.exec(select(InboundMail)).all()
        assert {m.status for m in inbound} == {"done"}
        answers = Counter(m.inbound_id for m in session.exec(select(OutboundMail))
                          if m.kind == "help")
        assert len(answers) == 50 and set(answers.values()) == {1}
        claimers = {m.claimed_by for m in inbound}
    assert len(claimers) >= 1


class Sink:
    """An SMTP server that counts what it is given."""

    def __init__(self) -> None:
        self.ids: Counter[str] = Counter()
        self.controller = start_controller(self)

    async def handle_DATA(self, server, session, envelope):
        self.ids[str(parse_mail(envelope.original_content)["Message-ID"])] += 1
        return "250 OK"


def test_claims_keep_three_senders_from_sending_a_mail_twice(
        mailstack, tmp_path: Path, database: str, zygote: Zygote) -> None:
    scene = Scene(mailstack, tmp_path, database)
    many_mails(scene, 50)
    scene.server.referee.process_pending()
    sink = Sink()
    try:
        config = tmp_path / "sink.toml"
        text = scene.config.read_text()
        config.write_text(text.replace(f"port = {mailstack.smtp_port}",
                                       f"port = {sink.controller.port}"))
        assert zygote.run(config, job="send", count=3) == [0, 0, 0]
    finally:
        sink.controller.stop()
    with Session(scene.server.engine) as session:
        rows = session.exec(select(OutboundMail).where(OutboundMail.kind == "help")).all()
    assert {r.status for r in rows} == {"sent"}
    assert len(sink.ids) == 50 and set(sink.ids.values()) == {1}


# --------------------------------------------------------------------------- the lease


def test_the_lease_has_one_holder_and_outlives_no_dead_one(database: str) -> None:
    from pbem.store.db import open_database
    engine = open_database(database)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    clock = lambda: now  # noqa: E731
    mine = Lease(engine, "referee", clock, seconds=300)
    assert mine.try_acquire()

    def held_by(owner: str, until: datetime) -> None:
        with Session(engine) as session:
            value = f'{{"owner": "{owner}", "until": "{until.isoformat()}"}}'
            session.execute(update(ServerState).where(ServerState.key == "lease:referee")
                            .values(value=value))
            session.commit()
    # a live process on this host (our parent) holds it: not ours until it expires
    live = f"{claims._HOST}:{os.getppid()}:abcd"
    held_by(live, now + timedelta(minutes=5))
    assert not mine.try_acquire()
    assert not mine.acquire(wait=0.2)
    held_by(live, now - timedelta(seconds=1))              # expired
    assert mine.try_acquire()
    # a dead process on this host: taken over at once
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    held_by(f"{claims._HOST}:{dead.pid}:abcd", now + timedelta(minutes=5))
    assert mine.try_acquire()
    # an earlier incarnation of this very process (same pid, another nonce)
    held_by(f"{claims._HOST}:{os.getpid()}:0000", now + timedelta(minutes=5))
    assert mine.try_acquire()
    # a process on another host: only its lease time frees it
    held_by(f"elsewhere:{os.getpid()}:abcd", now + timedelta(minutes=5))
    assert not mine.try_acquire()
    # release frees it for anyone
    held_by(claims.me(), now + timedelta(minutes=5))
    mine._value = None
    assert mine.try_acquire()
    mine.release()
    assert Lease(engine, "referee", clock).holder() is None


def test_a_fetch_left_to_another_names_the_holder_even_if_it_has_just_finished(
        tmp_path: Path, database: str, caplog: pytest.LogCaptureFixture) -> None:
    """The fetch lease's holder ends its poll right after our try read it: the line that
    leaves the fetch to it names it as the try saw it (it named None, read again). (The
    holder is another thread: on SQLite the try's read and its end are one transaction
    that holds the write lock, so the holder's write comes just after it.)"""
    import logging
    import threading

    from pbem.config import ImapSettings, Settings
    other = "elsewhere:1:abcd"
    calls = {"n": 0, "armed": False}
    holder: list[threading.Thread] = []

    def end_the_holders_poll() -> None:
        with server.engine.begin() as conn:
            conn.execute(update(ServerState).where(ServerState.key == "lease:fetch")
                         .values(value='{"owner": null, "until": null}'))

    def clock() -> datetime:
        if calls["armed"]:
            calls["n"] += 1
            if calls["n"] == 3:   # fetch: backoff, the new value, then the holder's end
                holder.append(threading.Thread(target=end_the_holders_poll))
                holder[0].start()    # the holder ends its poll now
                holder[0].join(0.5)  # (PostgreSQL: done; SQLite: after our try)
        return datetime.now(UTC)
    settings = Settings(database=database, address="bluff@x.org", referee="referee@x.org",
                        referee_key="k", outbox_dir=tmp_path / "out",
                        imap=ImapSettings("127.0.0.1", 9, ssl=False, username="bluff",
                                          password="x"))
    server = Server(settings, clock)
    until = datetime.now(UTC) + timedelta(minutes=5)
    with Session(server.engine) as session:
        session.add(ServerState(key="lease:fetch",
                                value=f'{{"owner": "{other}", "until": "{until.isoformat()}"}}'))
        session.commit()
    calls["armed"] = True
    with caplog.at_level(logging.INFO, logger="pbem.runner.fetching"):
        assert server.fetch() == 0
    assert calls["n"] >= 3
    holder[0].join(30)
    assert Lease(server.engine, "fetch", clock).holder() is None   # it did end meanwhile
    assert f"another process ({other}) is fetching mail; left to it" in caplog.text


def test_a_tick_that_cannot_get_the_lease_leaves_the_mail_to_the_holder(
        tmp_path: Path, database: str) -> None:
    from pbem.config import Settings
    settings = Settings(database=database, address="bluff@x.org",
                        referee="referee@x.org", referee_key="k", outbox_dir=tmp_path / "out",
                        lock_wait_seconds=0.1)
    server = Server(settings)
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "ann@x.org", "bluff@x.org", "help"
    msg["Message-ID"] = "<lease-1@x.org>"
    msg.set_content("HELP\n")
    assert server.referee.store_inbound(msg.as_bytes(policy=policy.SMTP), source="smtp")
    other = "elsewhere:1:abcd"
    until = datetime.now(UTC) + timedelta(minutes=5)
    with Session(server.engine) as session:
        session.add(ServerState(key="lease:referee",
                                value=f'{{"owner": "{other}", "until": "{until.isoformat()}"}}'))
        session.commit()
    assert server.tick().processed == 0
    with Session(server.engine) as session:
        assert session.exec(select(InboundMail)).one().status == "new"
        session.delete(session.get(ServerState, "lease:referee"))
        session.commit()
    assert server.tick().processed == 1


def test_a_tick_that_waited_for_the_referee_lease_says_how_long_and_on_whom(
        tmp_path: Path, database: str, caplog: pytest.LogCaptureFixture) -> None:
    """SQLite: the tick waits lock_wait_seconds for the lease, then its line says so, and
    whose it was; PostgreSQL (workers side by side, the lease only a shell command's):
    it leaves the mail to the holder at once, and says whose it was."""
    import logging

    from pbem.config import Settings
    settings = Settings(database=database, address="bluff@x.org", referee="referee@x.org",
                        referee_key="k", outbox_dir=tmp_path / "out", lock_wait_seconds=0.3)
    server = Server(settings)
    other = "elsewhere:1:abcd"
    until = datetime.now(UTC) + timedelta(minutes=5)
    with Session(server.engine) as session:
        session.add(ServerState(key="lease:referee",
                                value=f'{{"owner": "{other}", "until": "{until.isoformat()}"}}'))
        session.commit()
    with caplog.at_level(logging.INFO, logger="pbem.runner.server"):
        server.safe_tick()
    assert f"another process ({other}) is handling mail; left to it" in caplog.text
    if database.startswith("sqlite"):
        waited = re.search(r"waited: the referee lease: ([0-9.]+) s, 1 times \(on (\S+)\)",
                           caplog.text)
        assert waited is not None, caplog.text
        assert float(waited.group(1)) >= 0.3 and waited.group(2) == other


def test_a_referee_command_from_the_shell_waits_for_the_referee_lease(
        tmp_path: Path, database: str) -> None:
    from pbem.config import Settings
    from pbem.text.errors import Refusal
    settings = Settings(database=database, address="bluff@x.org",
                        referee="referee@x.org", referee_key="k", outbox_dir=tmp_path / "out",
                        lock_wait_seconds=0.1)
    server = Server(settings)
    until = datetime.now(UTC) + timedelta(minutes=5)
    with Session(server.engine) as session:
        session.add(ServerState(key="lease:referee",
                                value=f'{{"owner": "elsewhere:1:abcd", "until": "{until.isoformat()}"}}'))
        session.commit()
    with pytest.raises(Refusal, match="busy"):
        server.referee.admin(["NEWGAME", "g1"])
    with Session(server.engine) as session:
        session.delete(session.get(ServerState, "lease:referee"))
        session.commit()
    assert "created" in server.referee.admin(["NEWGAME", "g1"])[0]
    assert Lease(server.engine, "referee", server.clock).holder() is None


# --------------------------------------------------------------------------- the clock


@pytest.mark.parametrize("due", ["reminder", "deadline"])
def test_three_clocks_at_once_remind_once_and_resolve_once(tmp_path: Path, database: str,
                                                         zygote: Zygote, due: str) -> None:
    """Without the tick's lease: three processes run the clock work on the same game at
    the same moment. SQLite lets one writer in; on PostgreSQL each game's transaction
    takes the writer's lock first (pbem.store.advisory_locks.one_writer), so the others find the work done."""
    config = tmp_path / "pbem.toml"
    config.write_text(f'[server]\ndatabase = "{database}"\naddress = "bluff@x.org"\n'
                      f'referee = "referee@x.org"\nreferee_key = "k"\n'
                      f'outbox_dir = "{tmp_path / "out"}"\n'
                      # the turn's reports queued with it, whatever the default: no tick
                      # runs here to make a draft of them (pbem.runner.composer)
                      'compose_apart = false\n')
    server = Server(load_settings(config))
    for line in ["NEWGAME g1 SEED 3 DEADLINE 48",
                 *(f"ADD g1 p{i}@x.org P{i}" for i in range(1, 6)), "START g1"]:
        server.referee.admin(line.split())
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        game.deadline = datetime.now(UTC) + (timedelta(hours=1) if due == "reminder"
                                             else -timedelta(minutes=1))
        session.add(game)
        session.commit()
    for _ in range(3):
        assert zygote.run(config, job="clock", count=3) == [0, 0, 0]
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        rows = session.exec(select(OutboundMail)).all()
        kinds = Counter(m.kind for m in rows)
        if due == "reminder":
            assert game.turn == 1 and game.reminded_turn == 1
            assert kinds["reminder"] == 5
        else:
            assert game.turn == 2
            moves = session.exec(select(Move).where(Move.game_id == game.id)).all()
            assert len(moves) == 5 and {m.by for m in moves} == {"robot"}
            assert Counter(m.turn for m in rows if m.kind == "report") == {1: 5, 2: 5}
