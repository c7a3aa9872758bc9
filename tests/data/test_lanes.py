"""pbem.runner.lanes (PostgreSQL): each stored mail is given its lane once; a lane's new
mail is claimed together, oldest first, and only when no other live process holds any
of it, so one game's mail is one worker's at a time, in arrival order. And the key a
sender's address locks under is the same in every process and fits PostgreSQL's int4."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import event, update
from sqlmodel import Session, col, select

from pbem.mail.read import MAX_TEXT_LINES, read_message
from pbem.runner import inbox, lanes, storing
from pbem.runner.triage import lane_of, lanes_of, named_game
from pbem.services.post import read_reply
from pbem.store.advisory_locks import lane_claim, lock_key
from pbem.store.claims import me
from pbem.store.db import open_database
from pbem.store.models import InboundMail
from pbem.store.work import Work
from testkit.desk import (
    PLAYERS,
    REFEREE,
    SERVER,
    T0,
    Clock,
    game_row,
    mail,
    make_server,
    outbox_rows,
    started_game,
)
from testkit.pgstack import PgCluster

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
LEASE = timedelta(minutes=5)
OTHER = "elsewhere:1:abcd"


def stored(engine, wanted: list[int]) -> list[int]:
    """Mails stored in this order, given the lanes ``wanted`` (one each); their ids."""
    for n, _ in enumerate(wanted):
        assert storing.store_inbound(engine, f"Message-ID: <lane-{n}@x.test>\r\n\r\nHELP\r\n"
                                   .encode(), now=NOW, max_bytes=10_000, source="smtp")
    with Session(engine) as session:
        ids = list(session.exec(select(InboundMail.id).order_by(col(InboundMail.id))))
    by_id = dict(zip(ids, wanted, strict=True))
    assert lanes.give_lanes(engine, max(ids),
                            lambda _s, reads: [by_id[read.id] for read in reads]) == len(ids)
    return [i for i in ids if i is not None]


def held_by(engine, row_id: int, owner: str, at: datetime) -> None:
    with Session(engine) as session:
        session.execute(update(InboundMail).where(col(InboundMail.id) == row_id)
                        .values(claimed_by=owner, claimed_at=at))
        session.commit()


@pytest.mark.postgresql
def test_a_lane_is_claimed_whole_oldest_first_and_only_when_no_other_holds_it(
        pgcluster: PgCluster) -> None:
    engine = open_database(pgcluster.new_database())
    ids = stored(engine, [5, 6, 5, 0, 6, 5])
    upto = max(ids)
    assert lanes.waiting_lanes(engine, upto) == [5, 6, 0]   # by each lane's oldest mail
    # a lane is given once: a second reading changes nothing
    assert lanes.give_lanes(engine, upto, lambda _s, reads: [99 for _ in reads]) == 0
    held_by(engine, ids[2], OTHER, NOW)                      # another worker holds lane 5
    assert lanes.claim_lane(engine, NOW, LEASE, 5, upto=upto) == ([], OTHER)
    assert lanes.claim_lane(engine, NOW, LEASE, 6, upto=upto) == ([ids[1], ids[4]], None)
    # its claim ran out: the lane is ours, the stale one in its place, oldest first
    later = NOW + LEASE + timedelta(seconds=1)
    assert lanes.claim_lane(engine, later, LEASE, 5, upto=upto) == (
        [ids[0], ids[2], ids[5]], None)
    with Session(engine) as session:
        owners = dict(session.execute(select(InboundMail.id, InboundMail.claimed_by)).all())
        attempts = dict(session.execute(select(InboundMail.id, InboundMail.attempts)).all())
    assert {owners[i] for i in (ids[0], ids[2], ids[5], ids[1], ids[4])} == {me()}
    assert owners[ids[3]] is None
    assert attempts[ids[0]] == 1 and attempts[ids[2]] == 0   # the first one's is counted
    # a lane we hold ourselves is ours to claim again (the next tick after an outage)
    assert lanes.claim_lane(engine, later, LEASE, 6, upto=upto)[0] == [ids[1], ids[4]]
    assert lanes.claim_lane(engine, later, LEASE, 7, upto=upto) == ([], None)   # no mail


@pytest.mark.postgresql
def test_a_lanes_claim_counts_the_attempts_of_the_mails_begun_in_its_own_update(
        pgcluster: PgCluster) -> None:
    """The first ``begun`` mails of a lane (a group, handled together) have their attempts
    counted by the statement that claims them: one UPDATE for a lane of free mail; a
    stale claim taken over is counted by its own compare-and-swap."""
    engine = open_database(pgcluster.new_database())
    ids = stored(engine, [5, 5, 5, 5, 6, 6, 6])
    upto = max(ids)
    updates: list[str] = []

    def statement(conn, cursor, sql, *_) -> None:  # noqa: ANN001
        if sql.startswith("UPDATE inbound_mail"):
            updates.append(sql)

    event.listen(engine, "before_cursor_execute", statement)
    try:
        assert lanes.claim_lane(engine, NOW, LEASE, 5, upto=upto, begun=3) == (ids[:4], None)
        assert len(updates) == 1   # claimed and counted together (it was two statements)
        held_by(engine, ids[4], OTHER, NOW - LEASE - timedelta(seconds=1))   # ran out
        assert lanes.claim_lane(engine, NOW, LEASE, 6, upto=upto, begun=2) == (ids[4:], None)
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    with Session(engine) as session:
        attempts = dict(session.execute(select(InboundMail.id, InboundMail.attempts)).all())
    assert [attempts[i] for i in ids] == [1, 1, 1, 0, 1, 1, 0]


@pytest.mark.postgresql
def test_a_lanes_claim_and_the_giving_of_lanes_read_the_new_mail_by_its_lane_index(
        pgcluster: PgCluster) -> None:
    """A lane's claim reads its new mail, and the giving of lanes the new mail without
    one, by the partial index on (lane, id) of the new mail, not by every new mail (at
    50,000 stored orders a claim cost the server 13.6 ms so, once a game). The planner's
    choice is read back with EXPLAIN from the statements the code sends (sequential
    scans off: so few rows would be read whole)."""
    engine = open_database(pgcluster.new_database())
    upto = max(stored(engine, [5, 6, 5]))
    sent: dict[str, object] = {}

    def capture(conn, cursor, sql, params, context, many) -> None:  # noqa: ANN001
        if sql.startswith("SELECT") and "FROM inbound_mail" in sql and \
                "inbound_mail.lane" in sql:
            sent.setdefault(sql, params)

    event.listen(engine, "before_cursor_execute", capture)
    try:
        assert lanes.claim_lane(engine, NOW, LEASE, 5, upto=upto)[0]
        assert lanes.give_lanes(engine, upto, lambda _s, reads: [0 for _ in reads]) == 0
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert len(sent) == 2, list(sent)
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        raw.execute("SET enable_seqscan = off")
        plans = {sql: " | ".join(row[0] for row in raw.execute("EXPLAIN " + sql, params))
                 for sql, params in sent.items()}
    assert all("ix_inbound_mail_new_lane" in plan for plan in plans.values()), plans


@pytest.mark.postgresql
def test_a_lanes_claim_tries_its_lock_and_reads_its_mail_in_one_statement(
        pgcluster: PgCluster) -> None:
    """claim_lane tries the lane's lock and reads its new mail in one round trip (it was
    two); while another process holds the lock, it reads none and leaves the lane."""
    engine = open_database(pgcluster.new_database())
    upto = max(stored(engine, [5, 5, 6]))
    sent: list[str] = []

    def statement(conn, cursor, sql, *_) -> None:  # noqa: ANN001
        sent.append(sql.split(None, 1)[0])

    with Session(engine) as other:   # another worker is claiming lane 5 right now
        assert lane_claim(other, 5)
        assert lanes.claim_lane(engine, NOW, LEASE, 5, upto=upto) == ([], "a claim under way")
    event.listen(engine, "before_cursor_execute", statement)
    try:
        claimed, _ = lanes.claim_lane(engine, NOW, LEASE, 5, upto=upto)
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    assert len(claimed) == 2 and sent == ["SELECT", "UPDATE"]   # was SELECT, SELECT, UPDATE


@given(st.text(max_size=300))
def test_a_sender_lock_key_is_stable_and_an_int4(address: str) -> None:
    key = lock_key(address)
    assert -(2 ** 31) <= key < 2 ** 31
    assert key == lock_key(address)


@pytest.mark.postgresql
def test_the_outage_shift_moves_deadlines_on_postgresql_too(pgcluster: PgCluster,
                                                            tmp_path: Path) -> None:
    """On PostgreSQL the clock reads the last tick's time locked and takes the writer's lock
    alone only when the shift may move deadlines: a tick after a gap still moves them,
    once; short gaps move nothing."""
    clock = Clock()
    server = make_server(tmp_path, clock, outage_minutes=15,
                         database=pgcluster.new_database())
    started_game(server, "DEADLINE 24")
    assert server.referee.resolve_due() == 0      # the server runs: its last tick is noted
    clock.advance(minutes=10)
    assert server.referee.resolve_due() == 0      # a short gap: nothing moves
    assert game_row(server).deadline == T0 + timedelta(hours=24)
    clock.advance(hours=30)                       # down for 30 hours, past the deadline
    assert server.referee.resolve_due() == 0
    assert game_row(server).deadline == T0 + timedelta(hours=24 + 30)   # by the down time
    assert server.referee.resolve_due() == 0      # the same moment again: moved once
    assert game_row(server).turn == 1


@pytest.mark.postgresql
def test_a_tick_takes_mail_stored_while_it_runs_and_waits_its_turn_to_give_lanes(
        pgcluster: PgCluster, tmp_path: Path) -> None:
    """A worker whose tick began before another worker stored the rest of a burst takes
    that too (for a tick's interval), instead of leaving it to its next tick; and one
    that comes to give lanes while another worker is at it waits for it (it used to
    give up, find no lane yet, and end its tick)."""
    server = make_server(tmp_path, Clock(), database=pgcluster.new_database())
    referee = server.referee

    def store(n: int) -> None:
        assert storing.store_inbound(server.engine, mail(f"s{n}@strangers.test", "HELP"),
                                   now=NOW, max_bytes=100_000, source="smtp")
    for n in range(inbox.PAGE + 5):
        store(n)
    upto = inbox.newest_id(server.engine)
    given: list[int] = []
    routing = threading.Thread(target=lambda: given.append(referee.route(upto)))
    with Session(server.engine) as other:   # another worker is giving lanes: wait for it
        assert lane_claim(other, lanes.LANE_GIVING)
        routing.start()
        routing.join(0.5)
        assert routing.is_alive() and given == []
    routing.join(10)
    assert given == [inbox.PAGE + 5]     # then all of it, a page a commit
    assert referee.route(upto) == 0
    later = iter(range(1000, 1003))

    def meanwhile(tag: str) -> None:   # another worker stores mail as this one handles
        if tag == "mail<" and (n := next(later, None)) is not None:
            store(n)
    assert referee.process_pending(marks=meanwhile) == inbox.PAGE + 5 + 3
    with Session(server.engine) as session:
        assert set(session.exec(select(InboundMail.status))) == {"done"}


def unreadable(sender: str, in_reply_to: str | None) -> bytes:
    """A mail with no text to read (a PDF alone), replying to ``in_reply_to``."""
    replying = f"In-Reply-To: {in_reply_to}\r\n" if in_reply_to else ""
    raw = (f"From: {sender}\r\nTo: {SERVER}\r\nSubject: orders\r\n"
           f"Message-ID: <pdf-{in_reply_to is not None}@x.test>\r\n{replying}"
           "MIME-Version: 1.0\r\nContent-Type: application/pdf\r\n"
           "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n").encode()
    assert not read_message(raw, own_addresses=[SERVER]).readable
    return raw


def test_a_mails_lane_is_the_game_its_handling_finds(tmp_path: Path) -> None:
    """lane_of, on any database: a reply to our mail to a seat is that game's (read from
    its headers alone, even when its new text is too long to be read or there is none:
    its handling refuses it in that lane); a mail naming its game by a GAME line is that
    game's; the rest is NO_GAME. Each as named_game, which its handling asks, finds it."""
    server = make_server(tmp_path, Clock())
    started_game(server)
    started_game(server, name="g2")
    report = next(r for r in outbox_rows(server, PLAYERS[0]) if r.kind == "report")
    game = game_row(server)
    g2 = game_row(server, "g2")
    cases = {
        "a reply": (mail(PLAYERS[0], "B 2 3\n", in_reply_to=report.message_id), game.id),
        "a long reply": (mail(PLAYERS[0], "B 2 3\n" * (MAX_TEXT_LINES + 5),
                              in_reply_to=report.message_id), game.id),
        "a GAME line": (mail(PLAYERS[1], "GAME g2\nKEY x\nB 2 3\n"), g2.id),
        "a stranger": (mail("who@else.org", "HELP\n"), lanes.NO_GAME),
        "the referee": (mail(REFEREE, "GAME g1\nSTATUS g1\n"), lanes.NO_GAME),
        "an auto-reply": (b"Auto-Submitted: auto-replied\r\n" + mail(
            PLAYERS[0], "away\n", in_reply_to=report.message_id), lanes.NO_GAME),
        "an unreadable reply": (unreadable(PLAYERS[0], report.message_id), game.id),
        "an unreadable mail": (unreadable(PLAYERS[0], None), lanes.NO_GAME),
    }
    post = server.referee.post
    with Work(server.engine) as session:
        for what, (raw, lane) in cases.items():
            assert lane_of(session, post, raw, None, False) == lane, what
            if what not in ("a long reply", "the referee", "an auto-reply",
                            "an unreadable reply", "an unreadable mail"):
                msg = read_reply(session, read_message(raw, own_addresses=[SERVER]))
                found = named_game(session, msg)
                assert (found.id if found else lanes.NO_GAME) == lane, what
        assert lane_of(session, post, cases["a reply"][0], None, True) == lanes.NO_GAME


def test_a_page_of_mail_gets_its_lanes_with_one_read_of_the_mail_it_replies_to(
        tmp_path: Path) -> None:
    """lanes_of, as give_lanes asks it for a page: the lanes lane_of finds one by one, and
    the mails of ours the page replies to read in one statement (before: one a mail)."""
    server = make_server(tmp_path, Clock())
    started_game(server)
    started_game(server, name="g2")
    reports = [r for p in PLAYERS for r in outbox_rows(server, p) if r.kind == "report"]
    raws = [mail(PLAYERS[n % 5], "B 2 3\n", in_reply_to=r.message_id)
            for n, r in enumerate(reports)]
    raws += [mail(PLAYERS[1], "GAME g2\nKEY x\nB 2 3\n"), mail("who@else.org", "HELP\n")]
    reads = [lanes.LaneRead(n, raw, None, False) for n, raw in enumerate(raws)]
    post = server.referee.post
    statements: list[str] = []

    def seen(conn, cursor, sql, *rest) -> None:   # noqa: ANN001
        statements.append(sql)
    with Session(server.engine) as session:
        one_by_one = [lane_of(session, post, raw, None, False) for raw in raws]
        event.listen(server.engine, "before_cursor_execute", seen)
        try:
            together = lanes_of(session, post, reads)
        finally:
            event.remove(server.engine, "before_cursor_execute", seen)
    assert together == one_by_one
    assert len(set(together)) == 3 and lanes.NO_GAME in together   # two games, a stranger
    assert sum("seat IS NOT NULL" in sql for sql in statements) == 1
