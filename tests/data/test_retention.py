"""[retention]: a handled mail's text is cut to its header, and the .eml files go, some
days after their game ended; while a game of theirs is on they stay. The records stay
whole: `pbem verify` passes them as before."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from pbem.config import RetentionSettings
from pbem.games.records import find_game
from pbem.kinds import DEFAULT_KIND
from pbem.kinds.verify import check_record
from pbem.runner import server as server_module
from pbem.runner.retention import PRUNED_AT, prune_inbound, prune_when_due
from pbem.runner.storing import store_inbound
from pbem.services.export import export_json
from pbem.store import db
from pbem.store.models import Game, InboundMail, OutboundMail, PendingOrder, ServerState
from testkit.crash import ROOT
from testkit.desk import T0, Clock, admin, deliver, mail, make_server, order, send
from testkit.stored import inbound_rows
from testkit.web import play_out

DAYS = 30
OLD = [f"p{n}.old@example.org" for n in range(1, 5)]     # play in the game that ended long ago
LATE = [f"p{n}.late@example.org" for n in range(1, 5)]   # in the one that ended 11 days ago
ON = [f"p{n}.on@example.org" for n in range(1, 5)]       # in the one still on
STRANGER = "someone@elsewhere.example"


def game(server, name: str, players: list[str]) -> None:  # type: ignore[no-untyped-def]
    admin(server, f"NEWGAME {name} SEED 3 RULES classic english DICE 2")
    for i, email in enumerate(players, start=1):
        admin(server, f"ADD {name} {email} Name{i}")
    admin(server, f"START {name}")


def mail_from(server, sender: str) -> list[InboundMail]:  # type: ignore[no-untyped-def]
    with Session(server.engine) as session:
        rows = inbound_rows(session)
        return [row for row in rows if f"From: {sender}".encode() in row.raw]


def record(server, name: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    with Session(server.engine) as session:
        return export_json(session, find_game(session, name))


def eml_to(folder: Path, address: str) -> list[Path]:
    return [path for path in folder.glob("*.eml") if f"To: {address}".encode() in
            path.read_bytes()]


def test_mail_is_pruned_days_after_its_game_ended_and_the_records_stay(tmp_path: Path) -> None:
    clock = Clock()
    server = make_server(tmp_path, clock)
    outbox = tmp_path / "outbox"
    game(server, "old", OLD)
    order(server, OLD[0], "HELP", name="old")            # a player's mail to the game
    play_out(server, "old")
    game(server, "on", ON)
    order(server, ON[0], "HELP", name="on")
    send(server, ON[1], "HELP")                          # no game named: a player's still
    send(server, STRANGER, "HELP")                       # nobody's game
    server.tick()                                        # the answers out; nothing pruned
    early = set(outbox.glob("*.eml"))
    clock.advance(days=20)
    game(server, "late", LATE)
    order(server, LATE[0], "HELP", name="late")
    play_out(server, "late")
    server.tick()
    for path in outbox.glob("*.eml"):                    # the files' times on the clock's
        written = (T0 if path in early else T0 + timedelta(days=20)).timestamp()
        os.utime(path, (written, written))
    stray = outbox / "not-ours.eml"                      # a mail pbem does not know: kept
    stray.write_bytes(b"Message-ID: <elsewhere@example.org>\r\nTo: x@example.org\r\n\r\nhi\r\n")
    os.utime(stray, (T0.timestamp(), T0.timestamp()))
    records = {name: record(server, name) for name in ("old", "late")}
    whole = {row.id: row.raw for row in mail_from(server, OLD[0])}
    assert whole and all(len(raw) > 200 for raw in whole.values())
    assert all(mail_from(server, a) for a in (STRANGER, ON[0], ON[1], LATE[0]))
    assert all(eml_to(outbox, a) for a in [*OLD, STRANGER, *LATE, *ON])

    clock.advance(days=DAYS - 20 + 1)                   # "old" ended 31 days ago, "late" 11
    server.close()
    server = make_server(tmp_path, clock, retention=RetentionSettings(DAYS, DAYS))
    server.tick()

    for row in mail_from(server, OLD[0]) + mail_from(server, STRANGER):
        assert row.pruned_at is not None and row.truncated, row.id
        assert row.raw.endswith(b"\r\n\r\n") and b"HELP" not in row.raw
        assert row.raw.startswith(whole.get(row.id, row.raw)[:40])
    for address in (*LATE, *ON):
        for row in mail_from(server, address):
            assert row.pruned_at is None and b"HELP" in row.raw, (address, row.id)
    assert not any(eml_to(outbox, a) for a in [*OLD, STRANGER])
    assert all(eml_to(outbox, a) for a in [*LATE, *ON]) and stray.exists()
    with Session(server.engine) as session:              # the table keeps what was sent
        assert any(OLD[0] in r for r in session.exec(select(OutboundMail.rcpts_json)))
        assert session.get(ServerState, PRUNED_AT) is not None

    for name, before in records.items():
        after = record(server, name)
        assert after == before
        assert check_record(after).ok, check_record(after).lines

    # once a day: a mail of nobody's game that is DAYS old an hour after a pruning waits
    # for the next day's
    deliver(server, mail(STRANGER, "HELP again"))
    clock.advance(days=DAYS, hours=-1)
    server.tick()                                        # pruned: it was 1 hour too young
    clock.advance(hours=2)
    server.tick()                                        # old enough, but not due
    assert mail_from(server, STRANGER)[-1].pruned_at is None
    clock.advance(days=1)
    server.tick()
    assert mail_from(server, STRANGER)[-1].pruned_at is not None


def test_retention_zero_keeps_everything_and_db_prune_runs_it_now(tmp_path: Path) -> None:
    clock = Clock()
    server = make_server(tmp_path, clock, retention=RetentionSettings(0, 0))
    send(server, STRANGER, "HELP")
    server.tick()
    clock.advance(days=1000)
    server.tick()
    [row] = mail_from(server, STRANGER)
    assert row.pruned_at is None and b"HELP" in row.raw
    assert list((tmp_path / "outbox").glob("*.eml"))

    toml = tmp_path / "pbem.toml"
    toml.write_text(f'[server]\ndatabase = "sqlite:///{tmp_path / "pbem.db"}"\n'
                    f'outbox_dir = "{tmp_path / "outbox"}"\n'
                    "[retention]\ninbound_days = 0\noutbox_days = 0.0001\n", "utf-8")
    past = T0.timestamp() - 86400
    for path in (tmp_path / "outbox").glob("*.eml"):
        os.utime(path, (past, past))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBEM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "pbem.cli", "db", "prune", "-c", str(toml)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("pruned: 0 mails cut to their header (0 bytes), 1 .eml files "
                                  "deleted")
    assert not list((tmp_path / "outbox").glob("*.eml"))


def test_the_pruning_reads_only_the_head_of_a_mail_on_either_database(database: str) -> None:
    """The mail's head is read in SQL (substr of the raw bytes, on SQLite as on
    PostgreSQL), cut at its blank line; its size stays what it was."""
    engine = db.open_database(database)
    try:
        body = "HELP\n" + "x" * 200_000
        assert store_inbound(engine, mail(STRANGER, body), now=T0, max_bytes=10**7,
                             source="smtp")
        with Session(engine) as session:
            row = session.exec(select(InboundMail)).one()
            row.status, row.processed_at = "done", T0
            session.add(row)
            session.commit()
        pruned = prune_inbound(engine, T0 + timedelta(days=2), 1)
        assert pruned.mails == 1 and pruned.freed > 200_000
        with Session(engine) as session:
            [row] = inbound_rows(session)
            assert row.raw.startswith(b"From: ") and row.raw.endswith(b"\r\n\r\n")
            assert b"HELP" not in row.raw and row.size > 200_000
            assert row.pruned_at is not None
        assert not prune_inbound(engine, T0 + timedelta(days=3), 1)
    finally:
        engine.dispose()


def test_a_mail_is_its_games_by_its_answer_its_order_or_its_lane(database: str) -> None:
    """Mail from nobody who plays is kept while the game it belongs to is on: the game
    of an answer made from it, of an order it gave, or its lane (PostgreSQL)."""
    engine = db.open_database(database)
    try:
        with Session(engine) as session:
            session.add(Game(name="on", kind=DEFAULT_KIND, rules_json="{}", seed_hex="00", commitment="c",
                             status="running", created_at=T0))
            session.commit()
            game_id = session.exec(select(Game.id)).one()
        ids = []
        for n in range(4):
            assert store_inbound(engine, mail(f"w{n}@elsewhere.example", f"HELP {n}"), now=T0,
                                 max_bytes=10**7, source="smtp")
        with Session(engine) as session:
            for row in session.exec(select(InboundMail).order_by(col(InboundMail.id))):
                row.status, row.processed_at = "done", T0
                ids.append(row.id)
                session.add(row)
            session.get(InboundMail, ids[2]).lane = game_id   # type: ignore[union-attr]
            session.add(OutboundMail(message_id="<a@x>", kind="confirm", mail_from="b@x",
                                     rcpts_json="[]", game_id=game_id,
                                     inbound_id=ids[0], next_attempt_at=T0, created_at=T0))
            session.add(PendingOrder(game_id=game_id, turn=1, seat=1, move_json="{}",
                                     inbound_id=ids[1], created_at=T0))
            session.commit()
        later = T0 + timedelta(days=5)
        assert prune_inbound(engine, later, 1).mails == 1          # the fourth alone
        with Session(engine) as session:
            game = session.exec(select(Game)).one()
            game.status, game.ended_at = "over", T0 + timedelta(days=1, hours=1)
            session.add(game)
            session.commit()
        assert prune_inbound(engine, later, 4).mails == 0          # ended not 4 days ago
        assert prune_inbound(engine, later, 3).mails == 3
    finally:
        engine.dispose()


def test_serve_prunes_in_a_job_of_its_own(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """`pbem serve` prunes beside its ticks (a first pruning may take minutes), not in them."""
    clock = Clock()
    server = make_server(tmp_path, clock, retention=RetentionSettings(DAYS, DAYS))
    deliver(server, mail(STRANGER, "HELP"))
    clock.advance(days=DAYS + 1)
    monkeypatch.setattr(server_module, "PRUNE_AFTER", 0.0)
    stop = threading.Event()
    serving = threading.Thread(target=server.serve, args=(stop,))
    serving.start()
    try:
        deadline = time.monotonic() + 60
        while mail_from(server, STRANGER)[0].pruned_at is None:
            assert time.monotonic() < deadline, "serve did not prune"
            time.sleep(0.2)
    finally:
        stop.set()
        serving.join(60)
    assert mail_from(server, STRANGER)[0].pruned_at == clock()


@pytest.mark.parametrize("before", [False, True], ids=["first-day", "a-day-later"])
def test_of_workers_asking_at_once_one_prunes(database: str, before: bool) -> None:
    """Workers asking at the same moment: one takes the day's turn, the others are told it
    is not due (no error on PostgreSQL's unique key, no pruning twice)."""
    engines = [db.open_database(database) for _ in range(4)]
    try:
        if before:
            assert prune_when_due(engines[0], T0 - timedelta(days=2), inbound_days=1,
                                  outbox_days=0, outbox=Path("/nonexistent")) is not None
        start = threading.Barrier(len(engines))
        said: list[object] = []

        def ask(engine) -> None:  # type: ignore[no-untyped-def]
            start.wait()
            said.append(prune_when_due(engine, T0, inbound_days=1, outbox_days=0,
                                       outbox=Path("/nonexistent")))
        threads = [threading.Thread(target=ask, args=(e,)) for e in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(said) == len(engines)
        assert sum(answer is not None for answer in said) == 1
    finally:
        for engine in engines:
            engine.dispose()
