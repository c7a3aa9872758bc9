"""What handling a mail costs the database, and that the shortcuts change nothing.

- stored mail is claimed a page at a time (one commit for the page), so a mail costs
  one commit (its handling transaction), not two;
- each attempt is counted before it begins, never for a mail of the page that was not
  begun (pbem.runner.inbox: the cut-short count must not grow for mail a crash never reached);
- a game's state is kept under a digest of its seed, rules and moves: the kept state is
  always the replayed one, through turns, a ROLLBACK and other moves for the same turn;
- the players and orders a transaction memoises follow what its writers do, and end with it;
- the clock work of a tick opens a transaction only for the games that may have clock
  work (a deadline or grace passed, a reminder due, a player away over the deadline).
"""

from __future__ import annotations

import contextlib
import random
import re
from datetime import timedelta
from pathlib import Path

from sqlalchemy import event
from sqlmodel import Session, col, select

from pbem.commands.context import CommandContext
from pbem.commands.registry import referee_commands, run
from pbem.games import states as replayed_states
from pbem.games.lifecycle import add_player, remove_entrant
from pbem.games.records import active_players, find_game, players_of, seated, update_players
from pbem.games.states import load_state, moves_before
from pbem.games.turn_in_play import drop_orders, pending_orders, record_order
from pbem.kinds import kind_of
from pbem.orders.parsing import parse_text
from pbem.runner import inbox
from pbem.runner.server import Server
from pbem.services import clock as clock_module
from pbem.services.clock import clock_candidates
from pbem.services.turns import resolve_turn
from pbem.store.models import Absence, InboundMail
from pbem.store.work import Work
from testkit.desk import (
    PLAYERS,
    Clock,
    admin,
    by_seat,
    mail,
    make_server,
    new_game,
    started_game,
)
from testkit.deskrun import lines_of


def server_at(tmp_path: Path) -> tuple[Server, Clock]:
    clock = Clock()
    return make_server(tmp_path, clock), clock


def test_a_page_of_mail_costs_one_commit_a_mail(tmp_path: Path) -> None:
    server, _ = server_at(tmp_path)
    started_game(server)
    for n in range(12):
        assert server.referee.store_inbound(mail(PLAYERS[n % 5], "HELP"), source="smtp")
    commits = []
    event.listen(server.engine, "commit", lambda conn: commits.append(1))
    assert server.referee.process_pending() == 12
    assert len(commits) <= 12 + 2    # the mails, the page's claim, the failures' flush


def test_a_tick_reads_its_pages_of_mail_and_no_empty_one_after(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """The page that reaches the newest stored mail is the last: no read of an empty page
    to learn so (before: one more claim read each tick)."""
    server, _ = server_at(tmp_path)
    started_game(server)
    reads: list[int] = []
    real_claim = inbox.claim_page

    def claim_page(*args, **kwargs):   # noqa: ANN002, ANN003, ANN202
        page, after = real_claim(*args, **kwargs, size=page_size)
        reads.append(len(page))
        return page, after
    monkeypatch.setattr(inbox, "claim_page", claim_page)
    for page_size, expected in ((inbox.PAGE, [12]), (5, [5, 5, 2]), (4, [4, 4, 4])):
        reads.clear()
        for n in range(12):
            assert server.referee.store_inbound(mail(PLAYERS[n % 5], f"HELP {page_size} {n}"),
                                                source="smtp")
        assert server.referee.process_pending() == 12
        assert reads == expected


def test_an_attempt_is_counted_only_for_mail_about_to_be_handled(tmp_path: Path) -> None:
    server, clock = server_at(tmp_path)
    for n in range(4):
        assert server.referee.store_inbound(mail(PLAYERS[n], "HELP"), source="smtp")
    page, last = inbox.claim_page(server.engine, clock(), timedelta(minutes=5))
    assert len(page) == 4 and last == page[-1]

    def attempts() -> list[int]:
        with Session(server.engine) as session:
            return [r.attempts for r in session.exec(select(InboundMail)
                                                     .order_by(col(InboundMail.id)))]
    assert attempts() == [1, 0, 0, 0]     # a crash now: only the first was begun
    assert server.referee.handle_claimed(page[0], page[1])
    assert attempts() == [1, 1, 0, 0]     # the first done, the second about to begin
    # the next tick takes up the page where it was left: nothing held against the rest
    assert server.referee.process_pending() == 3
    with Session(server.engine) as session:
        assert {r.status for r in session.exec(select(InboundMail))} == {"done"}
    assert attempts() == [1, 2, 1, 1]     # the second's attempt cut short once, as it was


def states(server: Server) -> tuple[object, object]:
    """The state as loaded (kept states allowed) and as replayed from the seed."""
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        kept = load_state(session, game)
        replayed_states._states.clear()
        return kept, load_state(session, game)


def test_a_kept_state_is_the_replayed_state_through_turns_and_rollbacks(
        tmp_path: Path) -> None:
    server, clock = server_at(tmp_path)
    started_game(server, "DEADLINE 48")
    seen = []
    for step in ("PROCESS g1", "PROCESS g1", "ROLLBACK g1", "PROCESS g1", "ROLLBACK g1",
                 "ROLLBACK g1", "PROCESS g1", "PROCESS g1"):
        load_state_now = states(server)
        assert load_state_now[0] == load_state_now[1]
        if step.startswith("PROCESS") and len(seen) == 3:   # other moves for a turn played
            holder = by_seat(server)[1]
            admin(server, f"ORDER g1 {holder.seat} CHALLENGE")
        clock.advance(hours=1)
        admin(server, step)
        kept, replayed = states(server)
        assert kept == replayed, step
        seen.append(kept)
    assert seen[2] == seen[0]        # a rollback brings back the state before the turn


def test_a_transaction_reads_a_games_moves_once_a_turn(tmp_path: Path) -> None:
    """load_state reads the game's moves once a transaction and turn (the memo's, kept
    under the turn): a turn played moves the game on, and the moves it recorded join
    those read before it under the next turn (pbem.games.states.record_moves: no read
    after a turn); a savepoint rolled back forgets them. Each state is the one replayed
    in a transaction of its own, and the memo's moves the ones a fresh read finds."""
    server, clock = server_at(tmp_path)
    started_game(server, "DEADLINE 48")
    admin(server, "PROCESS g1")
    reads: list[str] = []

    def count(conn, cursor, statement: str, *_) -> None:   # noqa: ANN001
        if re.search(r"\bFROM move\b", statement):
            reads.append(statement)

    event.listen(server.engine, "before_cursor_execute", count)
    try:
        with Work(server.engine) as session:
            game = find_game(session, "g1")
            first = load_state(session, game)
            assert load_state(session, game) == first and len(reads) == 1
            turn = game.turn
            with contextlib.suppress(LookupError), session.savepoint():
                resolve_turn(session, game, clock())
                assert game.turn == turn + 1
                after = load_state(session, game)
                assert len(reads) == 1 and after != first
                raise LookupError
            assert load_state(session, game) == first and len(reads) == 2
            resolve_turn(session, game, clock())
            after = load_state(session, game)
            assert load_state(session, game) == after and len(reads) == 2
            kept = moves_before(session, game)
            session.commit()
    finally:
        event.remove(server.engine, "before_cursor_execute", count)
    replayed_states._states.clear()
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        assert load_state(session, game) == after
        assert [tuple(m) for m in moves_before(session, game)] == kept


def test_the_memo_follows_what_the_writers_of_players_do(tmp_path: Path) -> None:
    """The functions that add, delete or change a player keep the memo right themselves
    (no Session event does): add_player, remove_entrant, update_players (written at once,
    the memo's rows the changed ones); a rollback forgets what was read."""
    server, clock = server_at(tmp_path)
    new_game(server, players=PLAYERS[:3])
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        first = players_of(session, game)
        assert len(first) == 3 and players_of(session, game) == first
        first = update_players(session, game, {first[0].id: {"active": False}})
        assert not first[0].active and players_of(session, game) == first
        assert first[0] not in active_players(session, game)
        newcomer = add_player(session, game, "new@example.org", "New")
        assert newcomer.id in [p.id for p in players_of(session, game)]
        remove_entrant(session, game, first[1])
        assert first[1] not in players_of(session, game)
        assert [p.entrant for p in players_of(session, game)] == [1, 2, 3]
        session.rollback()
        assert len(players_of(session, game)) == 3


def test_the_memo_is_its_transactions_and_outlives_a_savepoint_released(
        tmp_path: Path) -> None:
    """What a Work memoises is its transaction's (the Work asks its session which one that
    is, by get_transaction: no listener): a savepoint released is no commit (the memo
    stays), a savepoint rolled back, a commit and a rollback forget all of it."""
    server, _ = server_at(tmp_path)
    started_game(server)
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        first = players_of(session, game)
        with session.savepoint():
            first = update_players(session, game, {first[0].id: {"name": "Renamed"}})
        assert ("players", game.id) in session.memo and players_of(session, game) == first
        assert first[0].name == "Renamed"
        with contextlib.suppress(LookupError), session.savepoint():
            update_players(session, game, {first[0].id: {"name": "Gone"}})
            raise LookupError
        assert session.memo == {}
        players_of(session, game)
        session.commit()
        assert session.memo == {}
        players_of(session, game)
        assert ("players", game.id) in session.memo
        session.rollback()
        assert session.memo == {}
        again = players_of(session, game)
        assert again is not first and len(again) == 5


def test_an_order_recorded_forgets_the_orders_and_keeps_the_players(tmp_path: Path) -> None:
    """A mail's order is recorded after its sender was found among the players: the players
    are not read again for it (they were, once a mail, before), the orders are current, and
    what the memo holds of them is what a fresh read finds."""
    server, clock = server_at(tmp_path)
    started_game(server)
    player_reads: list[str] = []

    def count(conn, cursor, statement: str, *_) -> None:   # noqa: ANN001
        if statement.startswith("SELECT player."):
            player_reads.append(statement)

    with Work(server.engine) as session:
        game = find_game(session, "g1")
        holder = seated(session, game)[1]
        event.listen(server.engine, "before_cursor_execute", count)
        try:
            assert pending_orders(session, game) == {}
            move = kind_of(game).robot_move(load_state(session, game), 1, random.Random(1))
            record_order(session, game, 1, move, now=clock(), inbound_id=None)
            assert set(pending_orders(session, game)) == {1}
            assert seated(session, game)[1] is holder
            session.forget()                        # as read anew
            assert set(pending_orders(session, game)) == {1}
            drop_orders(session, game, [1])
            assert pending_orders(session, game) == {}
            session.forget()
            assert pending_orders(session, game) == {}
        finally:
            event.remove(server.engine, "before_cursor_execute", count)
        assert player_reads == []


def test_the_clock_looks_only_at_games_with_clock_work(tmp_path: Path) -> None:
    server, clock = server_at(tmp_path)
    for name in ("g1", "g2", "g3"):                   # reminders 12 hours before
        new_game(server, "DEADLINE 48", name=name,
                 players=[p.replace("@", f".{name}@") for p in PLAYERS])
        admin(server, f"START {name}")

    def candidates() -> list[str]:
        with Session(server.engine) as session:
            return [find_game(session, f"g{i}").name
                    for i in (1, 2, 3)
                    if find_game(session, f"g{i}").id in set(clock_candidates(server.engine,
                                                                              clock()))]
    commits = []
    event.listen(server.engine, "commit", lambda conn: commits.append(1))
    assert candidates() == [] and server.referee.resolve_due() == 0
    assert len(commits) == 1                          # the tick's own record, no game's
    clock.advance(hours=37)                           # the reminders are due
    assert candidates() == ["g1", "g2", "g3"]
    server.referee.resolve_due()
    assert candidates() == []                         # reminded once
    with Work(server.engine) as session:           # a player of g2 away over its deadline
        game = find_game(session, "g2")
        assert game.deadline is not None
        session.add(Absence(email=seated(session, game)[1].email, starts=clock(),
                            ends=game.deadline + timedelta(days=1), created_at=clock()))
        session.commit()
    assert candidates() == ["g2"]
    server.referee.resolve_due()                      # the deadline moves past the absence
    assert candidates() == []
    clock.advance(hours=12)                           # g1 and g3 reach their deadlines
    assert candidates() == ["g1", "g3"]
    assert server.referee.resolve_due() == 2


def test_the_clock_reads_its_pages_of_games_and_no_empty_one_after(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """A short page of running games is the last: no read of an empty one to learn so
    (before: one more read each tick)."""
    server, clock = server_at(tmp_path)
    for name in ("g1", "g2", "g3"):
        new_game(server, "DEADLINE 48", name=name,
                 players=[p.replace("@", f".{name}@") for p in PLAYERS])
        admin(server, f"START {name}")
    clock.advance(hours=37)                           # the reminders are due: all three
    reads: list[str] = []
    event.listen(server.engine, "before_cursor_execute",
                 lambda conn, cursor, statement, *rest: reads.append(statement)
                 if "deadline IS NOT NULL" in statement else None)
    for page, expected in ((2, 2), (3, 2), (4, 1)):   # a full page may not be the last
        monkeypatch.setattr(clock_module, "CANDIDATES_PAGE", page)
        reads.clear()
        assert len(list(clock_candidates(server.engine, clock()))) == 3
        assert len(reads) == expected


def test_looking_up_a_sender_among_the_players_uses_an_index(tmp_path: Path) -> None:
    """Every mail from a person asks whether its address plays anywhere: no table scan."""
    server, _ = server_at(tmp_path)
    with server.engine.connect() as conn:
        plan = " ".join(str(row[-1]) for row in conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT player.id FROM player WHERE player.email = ?",
            ("p1@example.org",)))
    assert "ix_player_email" in plan, plan


def test_a_reply_reads_its_senders_bounce_state_with_the_mail_it_answers(
        tmp_path: Path) -> None:
    """The mail of ours a reply answers and whether its sender's bounce state is to be
    cleared are one statement (pbem.services.post.replied_mail): no look of its own at
    bounce_state, and a failing address that replies is cleared all the same."""
    from sqlmodel import select as orm_select

    from pbem.store.models import BounceState, OutboundMail
    from testkit.desk import deliver, outbox_rows
    from testkit.desk import mail as desk_mail
    server, _ = server_at(tmp_path)
    started_game(server)
    for address, failing in ((PLAYERS[0], True), (PLAYERS[1], False)):
        with Session(server.engine) as session:
            session.add(BounceState(address=address, failing=failing, hard_bounces=1))
            session.commit()
        report = [r for r in outbox_rows(server, address) if r.kind == "report"][-1]
        statements: list[str] = []

        def listener(conn, cursor, statement: str, *args,   # noqa: ANN001, ANN002
                     seen: list[str] = statements) -> None:
            seen.append(statement)
        event.listen(server.engine, "before_cursor_execute", listener)
        deliver(server, desk_mail(address, "HELP", in_reply_to=report.message_id))
        event.remove(server.engine, "before_cursor_execute", listener)
        looks = [s for s in statements if "bounce_state.soft_bounces >" in s]
        assert len(looks) == 1 and "JOIN outbound_mail" in looks[0], looks
        with Session(server.engine) as session:
            state = session.exec(orm_select(BounceState).where(
                BounceState.address == address)).one()
            assert not state.failing
            answered = session.exec(orm_select(OutboundMail).where(
                OutboundMail.kind != "report")).all()
            assert answered


def test_a_turn_played_again_in_one_transaction_reads_the_moves_it_recorded(
        tmp_path: Path) -> None:
    """PROCESS, ROLLBACK, another order for the seat and PROCESS again, in one referee
    transaction: the moves the transaction then holds for the game's turn are the ones
    stored (pbem.games.states.record_moves sets the next turn's, or drops them), not the
    ones the first PROCESS left under that turn."""
    server, clock = server_at(tmp_path)
    started_game(server, "DEADLINE 48")
    admin(server, "PROCESS g1")
    clock.advance(hours=1)
    holder = by_seat(server)[1]
    lines = ["PROCESS g1", "ROLLBACK g1", f"ORDER g1 {holder.seat} CHALLENGE", "PROCESS g1"]
    parsed = parse_text(lines_of(*lines), referee_commands())
    with Work(server.engine) as session:
        ctx = CommandContext(session, server.referee.post, server.referee.clock(),
                             by_referee=True)
        run(ctx, parsed.orders)
        game = find_game(session, "g1")
        assert game.turn == 3
        held = [tuple(m) for m in moves_before(session, game)]
        session.forget()
        assert held == [tuple(m) for m in moves_before(session, game)]
        session.commit()
