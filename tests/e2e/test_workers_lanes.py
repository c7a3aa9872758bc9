"""Three `pbem serve` workers on one PostgreSQL database share the work: each game's mail
is a lane one worker claims at a time (pbem.runner.lanes.claim_lane), so a burst over several
games is handled by all of them at once, and still every mail once, in its game's
order, every turn once.

- a burst of HELP mails naming nine games: every worker handled some of it, every mail
  was answered once, every answer arrived once;
- the same with a worker SIGKILLed mid-burst (a fourth takes its place): nothing lost,
  nothing doubled but a mail in flight on the killed worker's SMTP connections;
- three workers each with its own SMTP listener, the mail spread over them: the same;
- a postal game whose players all send their orders at the same moment, turn after
  turn, while three workers poll: each turn resolved once, each report sent once.
"""

from __future__ import annotations

import json
import random
import re
import smtplib
from collections import Counter
from email.message import EmailMessage
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from pbem.config import SmtpSettings
from pbem.demo.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.runner.referee import GROUP
from pbem.store import db
from pbem.store.models import Game, InboundMail, Move, OutboundMail
from testkit.e2e import Client
from testkit.net import LOOPBACK, free_ports, port_open
from testkit.pgstack import PgCluster
from testkit.workers import (
    Workers,
    burst_replies,
    counts,
    games_burst,
    handled_by,
    kill_one_handling,
    received,
    reports_by_game,
    wait_until,
    write_config,
)
from tests.e2e.test_workers import referee_mail

pytestmark = [pytest.mark.mailstack, pytest.mark.postgresql]

USERS = ["p1", "p2", "p3", "p4", "p5", "p6"]
SEATS = {f"lane-{n}": list(pair) for n, pair in enumerate(combinations(USERS, 2)) if n < 9}
BURST = 270


def started(mailstack: Any, pgcluster: PgCluster, tmp_path: Path, fetchers: int = 1,
            ) -> tuple[Path, Any, dict[str, dict[str, EmailMessage]]]:
    """A database with the nine games of SEATS started (classic, two players each), through
    a referee mail handled by one worker; the config (its folder polled by up to
    ``fetchers`` workers at once), the engine and the players' reports (game -> user ->
    report)."""
    database = pgcluster.new_database()
    for user in ["bluff", "referee", *USERS]:
        mailstack.clear(user)
    config = write_config(tmp_path / "pbem.toml", mailstack, database, poll_seconds=0.5,
                          fetchers=fetchers)
    engine = db.open_database(database)
    lines = [line for game, users in SEATS.items() for line in (
        f"NEWGAME {game} RULES classic", *(f"ADD {game} {mailstack.address(u)} P-{u}"
                                           for u in users), f"START {game}")]
    with Workers(config, tmp_path) as one:
        one.start(1)
        referee_mail(mailstack, lines)
        wait_until(lambda: counts(engine).get("in:done", 0) == 1 and
                   set(counts(engine)) <= {"in:done", "out:sent"}, 90, "the games' start")
    with Session(engine) as session:
        assert {g.status for g in session.exec(select(Game))} == {"running"}
    reports: dict[str, dict[str, EmailMessage]] = {}

    def all_reports() -> bool:
        reports.update(reports_by_game(mailstack, USERS))
        return sorted(reports) == sorted(SEATS) and all(
            sorted(reports[g]) == sorted(us) for g, us in SEATS.items())
    wait_until(all_reports, 60, "the first reports", poll=0.3)
    for user in USERS:
        mailstack.clear(user)
    return config, engine, reports


def check_burst(mailstack: Any, engine: Any, ids: list[str], may_repeat: set[str]) -> None:
    """Every mail of the burst handled once and answered once; every answer arrived, and
    once (but those in ``may_repeat``)."""
    with Session(engine) as session:
        inbound = session.exec(select(InboundMail)).all()
        assert {m.status for m in inbound} == {"done"}
        assert Counter(ids) == Counter(m.dedupe_key for m in inbound if m.dedupe_key in ids)
        assert {m.lane for m in inbound if m.dedupe_key in ids} == {
            g.id for g in session.exec(select(Game))}   # each mail in its game's lane
        outbound = session.exec(select(OutboundMail).where(
            col(OutboundMail.inbound_id).is_not(None))).all()
        answers = Counter(m.inbound_id for m in outbound)
        assert set(answers) == {m.id for m in inbound} and set(answers.values()) == {1}
        assert {m.outcome for m in inbound if m.dedupe_key in ids} == {"help sent"}
    arrived = {u: received(mailstack, u) for u in USERS}
    by_address = {mailstack.address(u): u for u in USERS}
    for row in outbound:
        (rcpt,) = json.loads(row.rcpts_json)
        if rcpt in by_address:
            assert arrived[by_address[rcpt]][row.message_id] >= 1, row.kind
    twice = {mid for c in arrived.values() for mid, n in c.items() if n > 1}
    assert twice <= may_repeat


def done_mail(engine: Any) -> int:
    """Inbound mail handled so far; 0 while the database restarts (asked again)."""
    try:
        return counts(engine).get("in:done", 0)
    except Exception:   # noqa: BLE001 - the connections the restart cut: new ones next time
        engine.dispose()
        return 0


def burst_through_three(mailstack: Any, config: Path, engine: Any,
                        reports: dict[str, dict[str, EmailMessage]], tmp_path: Path,
                        meanwhile: Any = lambda: None) -> tuple[list[int], list[str]]:
    """Three workers started, the burst delivered, ``meanwhile`` done while they work
    through it, until all of it is handled and answered; the workers then stopped
    cleanly. Their pids and the burst's Message-IDs."""
    with Workers(config, tmp_path) as workers:
        pids = workers.start(3)
        wait_until(workers.all_ticking, 60, "the workers' first ticks")
        ids = games_burst(mailstack, reports, BURST)
        try:
            meanwhile()
            wait_until(lambda: done_mail(engine) == 1 + BURST and
                       set(counts(engine)) <= {"in:done", "out:sent"}, 240, "the burst")
        except AssertionError:
            print(workers.logs(), counts(engine))
            raise
        statuses = workers.stop()
    assert set(statuses.values()) == {0}, workers.logs()
    return pids, ids


def test_a_burst_over_nine_games_is_shared_by_three_workers(
        mailstack: Any, pgcluster: PgCluster, tmp_path: Path) -> None:
    config, engine, reports = started(mailstack, pgcluster, tmp_path)
    pids, ids = burst_through_three(mailstack, config, engine, reports, tmp_path)
    shares = handled_by(engine)
    print("mails handled by each worker:", {pid: shares[pid] for pid in pids})
    assert all(shares[pid] > 0 for pid in pids), shares   # all three handled mail
    check_burst(mailstack, engine, ids, may_repeat=set())


def test_a_worker_killed_mid_burst_over_nine_games_loses_and_doubles_nothing(
        mailstack: Any, pgcluster: PgCluster, tmp_path: Path) -> None:
    config, engine, reports = started(mailstack, pgcluster, tmp_path)
    killed: dict[str, Any] = {}

    with Workers(config, tmp_path) as workers:
        first = workers.start(3)
        wait_until(workers.all_ticking, 60, "the workers' first ticks")
        ids = games_burst(mailstack, reports, BURST)

        def kill_one_holding_a_lane() -> bool:
            done = kill_one_handling(workers, engine, set(first), 1 + BURST // 5)
            killed.update(done or {})
            return done is not None
        try:
            wait_until(kill_one_holding_a_lane, 120, "a worker holding a lane", poll=0.01)
            wait_until(lambda: counts(engine).get("in:done", 0) == 1 + BURST and
                       set(counts(engine)) <= {"in:done", "out:sent"}, 180, "the burst")
            # the one that took the killed one's place is up (a stop while it starts
            # would kill it before it listens for SIGTERM)
            wait_until(workers.all_ticking, 60, "the fourth worker's first tick")
        except AssertionError:
            print(workers.logs())
            raise
        statuses = workers.stop()
    print(f"killed worker {killed['pid']} with {killed['done_then']} mails handled")
    assert statuses.pop(killed["pid"]) == -9
    assert set(statuses.values()) == {0}, workers.logs()
    assert killed["done_then"] < 1 + BURST                      # killed mid-burst
    shares = handled_by(engine)
    assert shares[killed["pid"]] > 0 and sum(1 for p in shares if p != killed["pid"]) >= 2
    # claimed, not sent: what each connection had in hand, and the mail a lane's group
    # queued, claimed as its transaction commits (pbem.runner.referee.GROUP); only the
    # first may be sent twice, and check_burst lets no other mail repeat
    assert len(killed["in_flight"]) <= SmtpSettings(host="any").connections * 2 + GROUP
    check_burst(mailstack, engine, ids, may_repeat=killed["in_flight"])


def test_three_workers_each_with_its_own_listener_behind_one_address(
        mailstack: Any, pgcluster: PgCluster, tmp_path: Path) -> None:
    """Inbound at scale without one mailbox's poller: each worker takes mail from the MX on
    its own SMTP listener ([listen]); the mail goes to the listeners in turn, as an MX
    with several hosts (or a load balancer) spreads it. Every mail stored once, handled
    once, answered once, by more than one worker."""
    config, engine, reports = started(mailstack, pgcluster, tmp_path)
    ports = free_ports(3)
    sets = []
    for n, port in enumerate(ports, 1):
        folder = tmp_path / f"worker-{n}"
        folder.mkdir()
        own = folder / "pbem.toml"
        own.write_text(config.read_text() + f'[listen]\nhost = "{LOOPBACK}"\nport = {port}\n')
        sets.append(Workers(own, folder))
    try:
        pids = [pid for workers in sets for pid in workers.start(1)]
        wait_until(lambda: all(port_open(p) for p in ports), 60, "the listeners")
        replies = [raw for _, raw in burst_replies(mailstack, reports, BURST // 3)]
        for n, raw in enumerate(replies):
            with smtplib.SMTP(LOOPBACK, ports[n % len(ports)], timeout=10) as client:
                client.sendmail(str(parse_mail(raw)["From"]), [mailstack.address("bluff")], raw)
        ids = [str(parse_mail(raw)["Message-ID"]) for raw in replies]
        wait_until(lambda: counts(engine).get("in:done", 0) == 1 + len(ids) and
                   set(counts(engine)) <= {"in:done", "out:sent"}, 180, "the burst")
    except AssertionError:
        print("\n".join(workers.logs() for workers in sets))
        raise
    finally:
        statuses = {pid: status for workers in sets for pid, status in workers.stop().items()}
    assert set(statuses.values()) == {0}
    with Session(engine) as session:
        assert {m.source for m in session.exec(select(InboundMail))
                if m.dedupe_key in ids} == {"smtp"}
    shares = handled_by(engine)
    assert sum(1 for pid in pids if shares[pid] > 0) >= 2, shares
    check_burst(mailstack, engine, ids, may_repeat=set())


def test_three_workers_poll_one_folder_each_a_share_of_its_mail_at_a_time(
        mailstack: Any, pgcluster: PgCluster, tmp_path: Path) -> None:
    """Inbound at scale with one mailbox: ``[imap] fetchers = 3``, so up to three workers
    poll the folder at once, each a share of its mail by UID (pbem.mail.imap.Share) under
    that share's lease. Every mail fetched once in all (the workers' fetched counts add
    up to the burst), moved out of the folder once, handled once, answered once."""
    config, engine, reports = started(mailstack, pgcluster, tmp_path, fetchers=3)
    _, ids = burst_through_three(mailstack, config, engine, reports, tmp_path)
    fetched = {log.name: sum(int(n) for n in re.findall(r"tick(?: is done)?: fetched (\d+)",
                                                      log.read_text(errors="replace")))
               for log in sorted(tmp_path.glob("worker-*.log"))}
    print("mails fetched by each worker:", fetched)
    assert sum(fetched.values()) == BURST, fetched   # no share polled twice
    assert len(mailstack.fetch_all("bluff", "pbem-done")) == 1 + BURST   # the START too
    assert mailstack.fetch_all("bluff") == []
    check_burst(mailstack, engine, ids, may_repeat=set())


def test_three_workers_ride_out_a_postgresql_and_a_dovecot_restart_mid_burst(
        mailstack: Any, pgcluster: PgCluster, tmp_path: Path) -> None:
    """The outages with three workers polling one folder (``fetchers = 3``): PostgreSQL
    restarted once a fifth of the burst is handled, Dovecot (the mailbox and the answers'
    delivery) once half is. The workers back off and catch up by themselves: every mail
    handled once and answered once. An answer whose "sent" mark the database's restart
    cut may arrive twice (the outbox's at-least-once): at most one a connection a
    worker."""
    config, engine, reports = started(mailstack, pgcluster, tmp_path, fetchers=3)

    def restarts() -> None:
        wait_until(lambda: done_mail(engine) >= 1 + BURST // 5, 120, "a fifth of the burst",
                   poll=0.01)
        pgcluster.restart()
        wait_until(lambda: done_mail(engine) >= 1 + BURST // 2, 180, "half of the burst",
                   poll=0.01)
        mailstack.restart()
    _, ids = burst_through_three(mailstack, config, engine, reports, tmp_path, restarts)
    with Session(engine) as session:
        answers = {m.message_id for m in session.exec(select(OutboundMail))}
    check_burst(mailstack, engine, ids, may_repeat=answers)
    twice = sum(n - 1 for u in USERS for n in received(mailstack, u).values() if n > 1)
    print(f"answers that arrived twice: {twice}")
    assert twice <= 3 * SmtpSettings(host="any").connections


POSTAL = ["p1", "p2", "p3", "p4", "p5"]


def test_the_last_orders_of_a_turn_arriving_together_at_three_workers_resolve_it_once(
        mailstack: Any, pgcluster: PgCluster, tmp_path: Path) -> None:
    """Postal Bluff: all five players' orders of a turn are delivered at the same moment
    (so the turn's last orders reach the workers together), turn after turn."""
    database = pgcluster.new_database()
    for user in ["bluff", "referee", *POSTAL]:
        mailstack.clear(user)
    config = write_config(tmp_path / "pbem.toml", mailstack, database, poll_seconds=0.3)
    engine = db.open_database(database)
    clients = {u: Client(mailstack, u) for u in POSTAL}
    latest: dict[str, tuple[EmailMessage, dict[str, Any]]] = {}

    def reports_at(turn: int) -> bool:
        for user, client in clients.items():
            for msg in client.new_mail():
                view = report_view(msg)
                if view is not None and msg["In-Reply-To"] is None:
                    latest[user] = (msg, view)
        return len(latest) == len(POSTAL) and all(v["turn"] >= turn for _, v in latest.values())

    rng = random.Random(5)
    turns = 3
    with Workers(config, tmp_path) as workers:
        workers.start(3)
        referee_mail(mailstack, ["NEWGAME post-1 SEED 3",
                                 *(f"ADD post-1 {mailstack.address(u)} P-{u}" for u in POSTAL),
                                 "START post-1"])
        try:
            wait_until(lambda: reports_at(1), 90, "the first reports", poll=0.3)
            for turn in range(1, turns + 1):
                raws = [reply_to(msg, mailstack.address(u), client_order_lines(view, rng))
                        for u, (msg, view) in sorted(latest.items())]
                mailstack.deliver_many("bluff", raws)   # all at once: one lane, one worker
                wait_until(lambda t=turn + 1: reports_at(t), 120, f"the reports of turn {turn}",
                           poll=0.3)
            wait_until(lambda: set(counts(engine)) <= {"in:done", "out:sent"}, 60,
                       "all mail handled and sent")
        except AssertionError:
            print(workers.logs())
            raise
        finally:
            for client in clients.values():
                client.close()
        statuses = workers.stop()
    assert set(statuses.values()) == {0}, workers.logs()
    with Session(engine) as session:
        game = session.exec(select(Game)).one()
        assert game.turn == turns + 1
        moves = session.exec(select(Move)).all()
        assert Counter((m.turn, m.seat) for m in moves) == {
            (t, s): 1 for t in range(1, turns + 1) for s in {m.seat for m in moves}}
        reports = Counter((m.seat, m.turn) for m in session.exec(select(OutboundMail))
                          if m.kind == "report")
        assert set(reports.values()) == {1} and len(reports) == len(POSTAL) * (turns + 1)
