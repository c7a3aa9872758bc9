"""The looks of a turn and of START use an index that fits them, not the one on an outbox
row's status: every mail not sent yet (thousands in a big tick) would be read each time.
What SQLite's planner chose is read back with EXPLAIN QUERY PLAN from the statements
the real code sends."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine

from testkit.desk import Clock, admin, make_server, new_game, send


def plans_of(server, run) -> dict[str, str]:
    """statement -> SQLite's query plan, for each SELECT/UPDATE/DELETE that ``run`` sends."""
    sent: dict[str, object] = {}

    def capture(conn, cursor, statement, params, context, executemany) -> None:
        if not executemany and statement.lstrip().split()[0].upper() in (
                "SELECT", "UPDATE", "DELETE"):
            sent.setdefault(statement, params)

    event.listen(Engine, "before_cursor_execute", capture)
    try:
        run()
    finally:
        event.remove(Engine, "before_cursor_execute", capture)
    with server.engine.connect() as conn:
        raw = conn.connection.driver_connection
        return {s: " | ".join(str(row[-1]) for row in
                              raw.execute("EXPLAIN QUERY PLAN " + s, p).fetchall())
                for s, p in sent.items()}


def test_start_and_a_strangers_mail_use_the_indexes_that_fit(tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock())
    new_game(server)
    for n in range(3):   # other mail waiting in the outbox
        admin(server, f"NEWGAME other{n}")
    plans = plans_of(server, lambda: admin(server, "START g1"))
    welcomes = [p for s, p in plans.items() if "outbound_mail.kind = ?" in s
                and "outbound_mail.game_id = ?" in s]
    assert welcomes and all("ix_outbound_mail_game_kind" in p for p in welcomes), welcomes

    plans = plans_of(server, lambda: send(server, "stranger@elsewhere.test", "HELP"))
    counts = [p for s, p in plans.items() if "FROM sender_event" in s
              and "sender_event.address = ?" in s]
    assert counts and all("ix_sender_event_address_kind_at" in p for p in counts), counts


def test_the_status_look_counts_failed_games_by_the_action_index(tmp_path: Path) -> None:
    """`pbem status`, /healthz and /metrics count the failed games on each look: by the
    index on the audit entries' action, not by reading every game's whole history."""
    from datetime import UTC, datetime

    from pbem.services.health import read_status

    server = make_server(tmp_path, Clock())
    new_game(server)
    plans = plans_of(server, lambda: read_status(
        server.engine, datetime.now(UTC), late_after=60.0, stuck_after=60.0))
    failed = [p for s, p in plans.items() if "FROM audit_entry" in s]
    assert failed and all("ix_audit_entry_action" in p for p in failed), failed


def test_the_send_budget_counts_the_mail_sent_by_a_range_of_an_index(tmp_path: Path) -> None:
    """Each drain under a send budget counts the mail sent in the last minute and day: by
    the range of (status, sent_at), not by every mail the outbox ever sent."""
    from datetime import UTC, datetime

    from pbem.outbox.table import Budget, budget_left

    server = make_server(tmp_path, Clock())
    new_game(server)
    plans = plans_of(server, lambda: budget_left(
        server.engine, Budget(per_minute=20, per_day=500), datetime.now(UTC)))
    counts = [p for s, p in plans.items() if "FROM outbound_mail" in s
              and "outbound_mail.sent_at > ?" in s]
    assert counts and all("ix_outbound_mail_status_sent_at (status=? AND sent_at>?)" in p
                          for p in counts), counts


def test_the_outbox_finds_the_mail_it_claims_and_marks_by_their_ids(tmp_path: Path) -> None:
    """A claim or a mark of outbox mail by their ids (a handling transaction's claim of the
    mail it queued and mark of the mail written before it, a drain's marks, a release)
    finds those rows by the ids, not by walking every pending mail: a backlog of
    thousands when the outbox lags. SQLite's planner, without statistics, took the
    (status, sent_at) index for four ids or more."""
    from datetime import UTC, datetime

    from pbem.outbox.table import mark_sent, marking, release
    from testkit.desk import PLAYERS, mail

    server = make_server(tmp_path, Clock())
    new_game(server)
    for n in range(5):   # five answers: claimed by their five ids
        assert server.referee.store_inbound(mail(PLAYERS[n], "HELP"), source="smtp")

    def outbox_work() -> None:
        server.tick()
        conn = marking(server.engine)
        mark_sent(conn, [1, 2, 3, 4, 5], datetime.now(UTC))
        conn.close()
        release(server.engine, [1, 2, 3, 4, 5])
    plans = plans_of(server, outbox_work)
    by_ids = [p for s, p in plans.items() if s.startswith("UPDATE outbound_mail")
              and "outbound_mail.id IN (?, ?, ?, ?" in s]
    assert len(by_ids) >= 3 and all(p.startswith("SEARCH outbound_mail USING INTEGER "
                                                 "PRIMARY KEY") for p in by_ids), by_ids


def test_a_turn_moves_its_games_pending_answers_on_by_the_games_index(tmp_path: Path) -> None:
    """A turn played moves the game's answers not sent yet to the next turn
    (pbem.services.post.read_in_turn): by the game's index, not by every pending mail."""
    from testkit.desk import PLAYERS, key_of, raise_line, seat_of, started_game

    server = make_server(tmp_path, Clock())
    started_game(server)

    def turn() -> None:
        for email in PLAYERS:
            send(server, email, f"GAME g1\nKEY {key_of(server, email)}\n"
                                f"{raise_line(server, seat_of(server, email))}\n")
    plans = plans_of(server, turn)
    moved = [p for s, p in plans.items() if s.startswith("UPDATE outbound_mail SET turn")]
    assert moved and all("ix_outbound_mail_game_kind (game_id=?)" in p for p in moved), moved


GAME_TABLES = ("move", "pendingorder", "outbound_mail")   # their game_id indexes (0018)


def test_a_turns_reads_by_game_find_their_rows_by_the_longer_game_indexes(
        tmp_path: Path) -> None:
    """move, pendingorder and outbound_mail keep no index on game_id alone (schema 0018:
    it was written with every order, move and mail, and read by nothing the longer index
    beginning with game_id does not serve). A turn played: every
    statement of those tables by game_id searches an index, none walks the table."""
    from sqlalchemy import inspect

    from testkit.desk import PLAYERS, key_of, raise_line, seat_of, started_game

    server = make_server(tmp_path, Clock())
    started_game(server)
    for other in ("g2", "g3"):   # other games' rows beside the one played
        started_game(server, name=other)
    indexes = inspect(server.engine)
    for table in GAME_TABLES:
        alone = [i["name"] for i in indexes.get_indexes(table) if i["column_names"] == ["game_id"]]
        assert alone == [], (table, alone)

    def turn() -> None:
        for email in PLAYERS:
            send(server, email, f"GAME g1\nKEY {key_of(server, email)}\n"
                                f"{raise_line(server, seat_of(server, email))}\n")
    plans = plans_of(server, turn)
    by_game = {s: p for s, p in plans.items()
               if any(f"{t}.game_id = " in s or f"{t}.game_id IN" in s for t in GAME_TABLES)}
    assert {t for t in GAME_TABLES if any(f"FROM {t}" in s or f"UPDATE {t}" in s
                                          for s in by_game)} >= {"move", "outbound_mail"}
    scans = {s: p for s, p in by_game.items()
             if any(f"SCAN {t}" in p and f"SCAN {t} USING" not in p for t in GAME_TABLES)}
    assert scans == {}, scans


def test_a_verp_bounce_finds_its_mail_by_the_tokens_index(tmp_path: Path) -> None:
    """The index of the bounce tokens holds those not null alone (schema 0019: a mail
    queued without VERP has none); a bounce's token = value is served by it, not by
    walking every mail."""
    from sqlmodel import Session

    from pbem.config.settings import SmtpSettings
    from pbem.mail.bounces import Bounce
    from pbem.services.bounces import bounced_mail
    from testkit.desk import started_game

    server = make_server(tmp_path, Clock(), smtp=SmtpSettings(host="127.0.0.1", verp=True))
    started_game(server)

    def look() -> None:
        with Session(server.engine) as session:
            assert bounced_mail(session, Bounce(frozenset({"p@example.org"}), frozenset(),
                                                verp_tokens=("00aa11bb22cc33dd",))) is None
    plans = plans_of(server, look)
    by_token = [p for s, p in plans.items() if "outbound_mail.bounce_token = " in s]
    assert by_token and all("USING INDEX ix_outbound_mail_bounce_token" in p
                            for p in by_token), plans
