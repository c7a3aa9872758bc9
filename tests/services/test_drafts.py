"""A turn's reports as a draft (pbem.services.drafts) made into mails by the composer
(pbem.runner.composer): the draft is committed with the turn, its mails replace it in
one transaction, once; a draft that cannot be made is marked failed and the referee told;
a composer that dies leaves its drafts to the tick, which makes them itself; a tick
under the composer's threshold writes no draft at all. On SQLite, with the desk's server
(the .eml outbox)."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from pbem.demo.robot_client import parse_mail
from pbem.games.records import find_game
from pbem.runner.composer import finish_tick, queue_in_pages
from pbem.runner.server import Server
from pbem.services.draft_data import FORMAT
from pbem.services.drafts import DRAFT, make_waiting
from pbem.services.reports import compose_draft
from pbem.services.turns import TurnChange, settle
from pbem.store.models import OutboundBody
from pbem.store.work import Work
from testkit.desk import (
    PLAYERS,
    REFEREE,
    Clock,
    game_turn,
    key_of,
    mail,
    make_server,
    order,
    outbox_rows,
    raise_line,
    seat_of,
    started_game,
    text_of,
)
from testkit.stored import count_drafts_written, drafts_written


def _all_but_last(server: Server) -> None:
    """Every player but the last orders for the turn in play."""
    for email in PLAYERS[:-1]:
        assert "are accepted" in order(server, email, raise_line(server, seat_of(server, email)))


def _turn_played(server: Server) -> None:
    """The game started, four players order for turn 1, and the referee's PROCESS plays it
    with its reports as a draft, as a tick whose composer is at work has them
    (pbem.services.turns.settle's ``draft``, told by the tick's hand-off)."""
    started_game(server)
    _drafted_turn(server)
    assert game_turn(server) == 2


def _drafted_turn(server: Server) -> None:
    _all_but_last(server)
    turn = game_turn(server)
    with Work(server.engine) as work:
        played = settle(work, server.referee.post,
                        TurnChange(find_game(work, "g1"), "process"), draft=True)
        assert played is not None and len(work.drafts) == 1
        work.commit()
    assert game_turn(server) == turn + 1


def _turn_played_by_a_tick(server: Server) -> None:
    """The game started, four players order for turn 1, and the fifth order's mail is
    handled by a tick (its hand-off: the composer's when the server has one)."""
    started_game(server)
    _all_but_last(server)
    last = PLAYERS[-1]
    body = "\n".join(["GAME g1", f"KEY {key_of(server, last)}",
                      raise_line(server, seat_of(server, last))])
    assert server.referee.store_inbound(mail(last, body), source="smtp")
    server.tick()
    assert game_turn(server) == 2


def _reports(server: Server, turn: int) -> list[Any]:
    return [r for r in outbox_rows(server) if r.kind == "report" and r.turn == turn]


def _drafts(server: Server) -> list[Any]:
    return [r for r in outbox_rows(server) if r.kind == DRAFT]


def _compose(server: Server) -> Any:
    post = server.referee.post
    return lambda session, draft: compose_draft(session, post, draft)


def test_a_turn_is_committed_with_one_draft_which_becomes_its_reports_once(
        tmp_path: Path, clock: Clock) -> None:
    server = make_server(tmp_path, clock, compose_apart=True)
    _turn_played(server)
    # the turn's transaction queued a draft, not the reports: nothing to send yet
    (draft,) = _drafts(server)
    assert draft.status == DRAFT and draft.turn == 2 and _reports(server, 2) == []
    made = make_waiting(server.engine, _compose(server), limit=10)
    assert [m.draft_id for m in made] == [draft.id] and len(made[0].mails or []) == 5
    done = queue_in_pages(server.engine, made, None)
    assert (done.drafts, done.mails, done.failed) == (1, 5, 0)
    reports = _reports(server, 2)
    assert _drafts(server) == []
    assert sorted(json.loads(r.rcpts_json)[0] for r in reports) == sorted(PLAYERS)
    assert {r.inbound_id for r in reports} == {draft.inbound_id}
    for row in reports:
        mail = parse_mail(row.raw)
        assert "turn 2 report" in str(mail["Subject"])
        (attachment,) = [p for p in mail.iter_attachments()
                         if p.get_filename() == "report.json"]
        view = json.loads(attachment.get_content())
        assert view["turn"] == 2 and view["you"] == row.seat
    # the same drafts made again (a composer that made them too) queue nothing twice
    again = queue_in_pages(server.engine, made, None)
    assert (again.drafts, again.mails) == (0, 0)
    assert len(_reports(server, 2)) == 5


def test_a_draft_that_cannot_be_made_is_marked_failed_and_the_referee_told(
        tmp_path: Path, clock: Clock) -> None:
    server = make_server(tmp_path, clock, compose_apart=True)
    _turn_played(server)

    def broken(session: Session, turn: object) -> list[dict[str, object]]:
        raise ValueError("a template that cannot be rendered")

    made = make_waiting(server.engine, broken, limit=10)
    assert made[0].mails is None and "cannot be rendered" in (made[0].error or "")
    done = queue_in_pages(server.engine, made, None, server._draft_told)
    assert (done.drafts, done.failed) == (0, 1)
    (draft,) = _drafts(server)
    assert draft.status == "failed" and "ValueError" in draft.last_error
    (told,) = [parse_mail(r.raw) for r in outbox_rows(server, REFEREE)
               if "were not written" in str(parse_mail(r.raw)["Subject"])]
    assert "g1" in str(told["Subject"])
    body = told.get_body(("plain",))
    assert body is not None and "cannot be rendered" in body.get_content()
    # a failed draft is not made again by itself
    assert make_waiting(server.engine, _compose(server), limit=10) == []


def test_a_tick_with_a_composer_sends_every_report_and_leaves_no_draft(
        tmp_path: Path, clock: Clock) -> None:
    server = make_server(tmp_path, clock, compose_apart=True)
    assert server.composer is not None
    try:
        _turn_played(server)
        report = server.tick()
        assert report.sent >= 5
        assert _drafts(server) == []
        assert {r.status for r in _reports(server, 2)} == {"sent"}
        assert len(_reports(server, 2)) == 5
    finally:
        server.close()


def test_a_composer_killed_leaves_its_drafts_to_the_tick(
        tmp_path: Path, clock: Clock) -> None:
    """The composer dies (SIGKILL) with a draft waiting: the tick's end makes it itself."""
    server = make_server(tmp_path, clock, compose_apart=True)
    composer = server.composer
    assert composer is not None
    _turn_played(server)
    assert len(_drafts(server)) == 1
    composer.start()
    os.kill(composer._process.pid, signal.SIGKILL)
    composer._process.join(5)
    done = finish_tick(server.engine, composer, composer.compose, None)
    assert (done.drafts, done.mails) == (1, 5)
    assert _drafts(server) == [] and len(_reports(server, 2)) == 5
    # the next tick, without a draft, starts no composer again; it sends all
    server.tick()
    try:
        assert not composer.running
        assert {r.status for r in _reports(server, 2)} == {"sent"}
    finally:
        server.close()


def test_a_tick_starts_its_composer_at_its_first_draft(tmp_path: Path, clock: Clock) -> None:
    """An idle tick starts no composer process (a one-shot ``pbem tick`` would wait for it
    and pay the other core's second and a half); the tick whose mail plays a turn does,
    and its end queues the turn's reports."""
    server = make_server(tmp_path, clock, compose_apart=True)
    composer = server.composer
    assert composer is not None
    try:
        started_game(server)
        server.tick()
        assert composer._process is None and not composer.running
        for email in PLAYERS[:-1]:
            order(server, email, raise_line(server, seat_of(server, email)))
        server.tick()
        assert composer._process is None
        last = PLAYERS[-1]
        body = "\n".join(["GAME g1", f"KEY {key_of(server, last)}",
                          raise_line(server, seat_of(server, last))])
        assert server.referee.store_inbound(mail(last, body), source="smtp")   # the tick's
        server.tick()
        assert composer.running
        assert game_turn(server) == 2 and _drafts(server) == []
        assert len(_reports(server, 2)) == 5
    finally:
        server.close()


def test_a_composer_whose_server_closed_its_pipes_ends_quietly(
        tmp_path: Path, clock: Clock, capfd: pytest.CaptureFixture[str]) -> None:
    """The server's ends of the pipes closed without a word (a Server dropped unclosed, its
    process ending): the composer ends cleanly, no traceback on stderr (it printed
    EOFError's and exited with 1)."""
    server = make_server(tmp_path, clock, compose_apart=True)
    composer = server.composer
    assert composer is not None
    try:
        composer.start()
        assert composer.finish(timeout=60) == []   # up, and waiting between ticks
        process = composer._process
        assert composer._ask is not None and composer._conn is not None
        composer._ask.close()
        composer._conn.close()
        process.join(10)
        assert process.exitcode == 0
        assert "Traceback" not in capfd.readouterr().err
    finally:
        server.close()


def test_the_composer_makes_a_drafts_mails_in_its_own_process(
        tmp_path: Path, clock: Clock) -> None:
    """The composer's process (its own engine and templates) makes the draft itself."""
    server = make_server(tmp_path, clock, compose_apart=True)
    composer = server.composer
    assert composer is not None
    try:
        _turn_played(server)
        composer.start()
        made = composer.finish(timeout=60)
        assert [len(m.mails or []) for m in made] == [5]
        assert made[0].mails == [m for m in made[0].mails or [] if m.values["kind"] == "report"]
    finally:
        server.close()


def test_a_composer_started_while_another_thread_renders_makes_the_reports(
        tmp_path: Path, clock: Clock) -> None:
    """Another thread of the server holds the template cache's lock (it is rendering) as
    the composer starts: the composer, a new interpreter, has none of it. A forked one
    would have the lock as it was, held for ever (its holder not copied), and hang at its
    first report."""
    server = make_server(tmp_path, clock, compose_apart=True)
    composer = server.composer
    assert composer is not None
    try:
        _turn_played(server)
        cache: Any = server.referee.renderer.environment("en").cache
        lock = cache._wlock   # Jinja2's LRUCache's, taken by every get_template
        held, done = threading.Event(), threading.Event()

        def rendering() -> None:
            with lock:
                held.set()
                done.wait(10)

        thread = threading.Thread(target=rendering)
        thread.start()
        assert held.wait(10)
        try:
            composer.start()
        finally:
            done.set()
            thread.join()
        made = composer.finish(timeout=30)
        assert [len(m.mails or []) for m in made] == [5]
    finally:
        server.close()


def test_without_compose_apart_a_turn_queues_its_reports_at_once(
        tmp_path: Path, clock: Clock) -> None:
    server = make_server(tmp_path, clock, compose_apart=False)
    assert server.composer is None
    count_drafts_written(server.engine)
    try:
        _turn_played_by_a_tick(server)
    finally:
        server.close()
    assert _drafts(server) == [] and len(_reports(server, 2)) == 5
    assert drafts_written(server.engine) == 0


@pytest.mark.parametrize(("from_turn", "written"), [(100, 0), (1, 1)],
                         ids=["under-the-threshold", "at-it"])
def test_a_tick_under_the_composers_threshold_writes_no_draft(
        tmp_path: Path, clock: Clock, from_turn: int, written: int) -> None:
    """A tick of fewer turns than composer_from_turn makes a turn's reports with it: no
    draft written (and read back and deleted) on the way; at the threshold the turn's
    draft is what the composer makes them of."""
    server = make_server(tmp_path, clock, compose_apart=True, composer_from_turn=from_turn)
    composer = server.composer
    assert composer is not None
    count_drafts_written(server.engine)
    try:
        _turn_played_by_a_tick(server)
        assert composer.running == bool(written)
    finally:
        server.close()
    assert drafts_written(server.engine) == written
    assert _drafts(server) == [] and len(_reports(server, 2)) == 5


def _set_bytes(server: Server, draft_id: int, raw: bytes) -> None:
    with Session(server.engine) as session:
        body = session.get(OutboundBody, draft_id)
        assert body is not None
        body.raw = raw
        session.commit()


def _views(mails: list[Any]) -> list[tuple[str, str, Any]]:
    """Each mail's recipient, subject and report.json."""
    out = []
    for m in mails:
        mail = parse_mail(bytes(m.values["raw"]))
        (view,) = [json.loads(p.get_content()) for p in mail.iter_attachments()
                   if p.get_filename() == "report.json"]
        out.append((m.values["rcpts_json"], str(mail["Subject"]), view))
    return out


def test_a_draft_is_stored_as_json_with_its_format(tmp_path: Path, clock: Clock) -> None:
    """Not pickled: a draft a crash left is read by the next version of pbem too."""
    server = make_server(tmp_path, clock, compose_apart=True)
    _turn_played(server)
    (draft,) = _drafts(server)
    data = json.loads(draft.raw)
    assert data["format"] == FORMAT == "pbem.draft/1"
    assert data["game"]["turn"] == 2 and len(data["moves"]) == 5


@pytest.mark.parametrize("raw", [b'{"format": "pbem.draft/99", "game": {}}',
                                 b"\x80\x05\x95 not a draft this version reads"],
                         ids=["a-newer-format", "not-json"])
def test_a_draft_it_cannot_read_is_made_again_from_the_stored_game(
        tmp_path: Path, clock: Clock, raw: bytes) -> None:
    """The game still stands at the draft's turn: its reports are made from the stored game
    (as the draft would have made them, but for the turn's notes)."""
    server = make_server(tmp_path, clock, compose_apart=True)
    _turn_played(server)
    (draft,) = _drafts(server)
    (known,) = make_waiting(server.engine, _compose(server), limit=10)
    _set_bytes(server, draft.id, raw)
    (made,) = make_waiting(server.engine, _compose(server), limit=10)
    assert made.error is None and made.mails is not None
    assert _views(made.mails) == _views(known.mails or [])
    assert known.remade is None and made.remade is not None
    done = queue_in_pages(server.engine, [made], None, server._draft_told)
    assert (done.drafts, done.mails, done.failed) == (1, 5, 0)
    assert {r.inbound_id for r in _reports(server, 2)} == {draft.inbound_id}
    # the referee hears that the turn's notes are not in them, and why
    (told,) = [parse_mail(r.raw) for r in outbox_rows(server, REFEREE)
               if "without their notes" in str(parse_mail(r.raw)["Subject"])]
    assert "turn 2" in str(told["Subject"]) and "g1" in str(told["Subject"])
    assert "could not be read" in " ".join(text_of(told).split())


def test_a_draft_it_cannot_read_of_a_game_gone_on_is_marked_failed(
        tmp_path: Path, clock: Clock) -> None:
    """The game has played on since (its next turn): what the draft reported is not the
    stored game's any more; the draft is failed and the referee told, as a draft that
    cannot be made. The next turn's draft is made."""
    server = make_server(tmp_path, clock, compose_apart=True)
    _turn_played(server)
    _drafted_turn(server)
    assert game_turn(server) == 3
    first, second = _drafts(server)
    _set_bytes(server, first.id, b'{"format": "pbem.draft/99"}')
    made = make_waiting(server.engine, _compose(server), limit=10)
    assert [m.mails is None for m in made] == [True, False]
    assert "moved on from turn 2" in (made[0].error or "")
    done = queue_in_pages(server.engine, made, None, server._draft_told)
    assert (done.drafts, done.failed) == (1, 1)
    assert len(_reports(server, 3)) == 5 and _reports(server, 2) == []
    assert [d.status for d in _drafts(server)] == ["failed"]
    assert any("were not written" in str(parse_mail(r.raw)["Subject"])
               for r in outbox_rows(server, REFEREE))


def test_a_server_with_one_core_starts_no_composer(tmp_path: Path, clock: Clock) -> None:
    """compose_apart on, one core: the reports are made at once, no draft."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        server = make_server(tmp_path, clock, compose_apart=True)
    finally:
        os.sched_setaffinity(0, cpus)
    assert server.composer is None
    _turn_played_by_a_tick(server)
    server.close()
    assert _drafts(server) == [] and len(_reports(server, 2)) == 5


def test_a_server_without_a_composer_makes_the_drafts_a_crash_left(
        tmp_path: Path, clock: Clock) -> None:
    """Drafts left by a server that composed apart, read by one that does not (the setting
    turned off, one core): its first tick makes and sends them."""
    server = make_server(tmp_path, clock, compose_apart=True)
    _turn_played(server)
    assert len(_drafts(server)) == 1
    server.close()
    again = make_server(tmp_path, clock, compose_apart=False)
    assert again.composer is None
    try:
        again.tick()
        assert _drafts(again) == []
        assert [r.status for r in _reports(again, 2)] == ["sent"] * 5
    finally:
        again.close()
