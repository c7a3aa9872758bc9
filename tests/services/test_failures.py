"""A failure on our side (here: a report template that reads a key its context lacks, the
bug of issue 11 item 1) reaches the referee at once, with what failed, the mail and the
game; the game's players hear that the turn is delayed; the turn waits instead of
playing for the player whose order failed; `RETRY <mail id>` handles the mail again after
the fix; PROCESS says what failed instead of a traceback; the clock tells once, not at
every tick. With the composer ([server] compose_apart) the turn is played first and its
reports written after it: they fail, the referee is told, the players hear that the turn
is delayed (once), the deadline waits, and `RETRY <game>` writes them after the fix and
tells the players it goes on. Over the real mail stack (Dovecot IMAP in, SMTP out)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.services.clock import clock_tick
from pbem.services.post import Post
from pbem.store.models import InboundMail
from pbem.store.paths import packaged_dir
from pbem.store.work import Work
from testkit.e2e import Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3"]
GAME = "fail-1"


@pytest.fixture(params=[(False, 1), (True, 1), (True, 1000)],
                ids=["reports-with-the-turn", "compose-apart", "composer-not-started"])
def table(mailstack: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Table]:
    """compose_apart on: the composer's process renders with the referee's templates
    folder (templates_dir), which break_reports changes under it; or, a tick of fewer
    turns than composer_from_turn, the tick's thread makes the reports with their turn,
    no draft, and a failure is the turn's mail's, as without a composer."""
    compose_apart, from_turn = request.param
    folder = tmp_path / "templates"
    folder.mkdir()
    write_reports(folder, broken=False)
    with Table(mailstack, tmp_path, PLAYERS,
               settings={"compose_apart": compose_apart, "composer_from_turn": from_turn,
                         "templates_dir": folder}) as made:
        assert (made.server.composer is not None) == compose_apart
        yield made


def composing(table: Table) -> bool:
    """Whether the composer makes the turns' reports: on, from a tick's first turn."""
    return table.server.composer is not None and table.server.settings.composer_from_turn <= 1


def write_reports(folder: Path, *, broken: bool) -> None:
    """The report templates as they are, or (``broken``) as they were before the fix:
    talk entries read as t["name"]. A renderer of the folder (the server's, the
    composer's) reloads them (Jinja2's auto_reload of an override folder)."""
    for part in ("txt", "html"):
        good = (packaged_dir("templates") / f"classic_report.{part}.j2").read_text()
        assert 't["from"]' in good
        (folder / f"classic_report.{part}.j2").write_text(
            good.replace('t["from"]', 't["name"]') if broken else good)


def break_reports(table: Table) -> None:
    write_reports(table.tmp_path / "templates", broken=True)


def mend_reports(table: Table) -> None:
    write_reports(table.tmp_path / "templates", broken=False)


def referee_mail(table: Table) -> list[str]:
    return [f"{m['Subject']}\n{text_of(m)}" for m in table.referee.new_mail()]


def told(table: Table, subject: str) -> dict[str, int]:
    """How many notices with ``subject`` in their subject each player has had."""
    table.collect()
    return {u: sum(subject in str(a["Subject"]) for a in table.answers[u]) for u in PLAYERS}


def test_a_failure_is_told_the_turn_waits_and_retry_mends_it(table: Table,
                                                              tmp_path: Path) -> None:
    table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED 3 DEADLINE 24 RULES classic "
                                           "DICE 2"))
    table.server.tick()
    referee_mail(table)
    seat_of = table.first_reports_in()
    user_at = {s: u for u, s in seat_of.items()}
    opener = user_at[table.latest["p1"][1]["to_move"]]
    other = next(u for u in PLAYERS if u != opener)
    table.reply(other, ["SAY Hello all"])       # table talk for the next report
    table.server.tick()
    table.collect()
    break_reports(table)

    # the bid completes the turn; its reports fail to render
    table.reply(opener, ["SAY Sorry Bob, I never bluff.", "BID 1 threes"])
    table.server.tick()
    table.collect()
    if composing(table):
        reports_fail_and_retry_game_mends_them(table, opener)
        return
    with Session(table.server.engine) as session:
        (failed,) = session.exec(select(InboundMail).where(InboundMail.status == "failed"))
        mail_id = failed.id
    told = referee_mail(table)
    (notice,) = [t for t in told if "could not be handled" in t]
    flat = " ".join(notice.split())
    assert f"Inbound mail #{mail_id}: an internal error (" in flat and "from p" in flat
    assert "UndefinedError" in flat and "classic_report" in flat and f"game {GAME}" in flat
    assert "> BID 1 threes" in notice and f"RETRY {mail_id}" in flat
    # how to handle it again is said once, with the mail
    assert flat.count("RETRY") == 2 and flat.count("handle the mail again") == 1
    for user in PLAYERS:      # everyone hears that the turn is delayed, once
        delayed = [a for a in table.answers[user] if "turn 1 is delayed" in str(a["Subject"])]
        assert len(delayed) == 1, user
    (sorry,) = [a for a in table.answers[opener] if a["In-Reply-To"] is not None]
    assert "turn 1" not in str(sorry["Subject"]) or "order received" not in str(sorry["Subject"])
    assert "went wrong on our side" in text_of(sorry)
    assert str(sorry["Subject"]).startswith(f"[bluff {GAME}] ")   # tagged with its game

    # the deadline passes: the turn waits for the failed mail (the opener's order is in it)
    post: Post = table.server.referee.post
    later = post.clock() + timedelta(hours=30)
    assert clock_tick(table.server.engine, post, later) == 0
    with Session(table.server.engine) as session:
        game = find_game(session, GAME)
        assert game.turn == 1 and game.status == "running"

    # PROCESS says what failed (no traceback) and the referee hears it once
    with pytest.raises(Exception, match="failed on our side.*UndefinedError"):
        table.server.referee.admin(["PROCESS", GAME])
    table.server.tick()
    assert [t for t in referee_mail(table) if "turn 1 is stuck" in t]
    table.collect()
    assert all(len([a for a in table.answers[u] if "delayed" in str(a["Subject"])]) == 1
               for u in PLAYERS)

    # RETRY is a command the referee's HELP lists
    assert any(line.startswith("RETRY <mail id>")
               for line in "\n".join(table.server.referee.admin(["HELP"])).splitlines())

    # the fix, then RETRY by referee mail: the order is taken, the turn resolves, talk shown
    mend_reports(table)
    table.referee_sends(f"RETRY {mail_id}")
    table.server.tick()
    assert any(f"mail #{mail_id} will be handled again" in t for t in referee_mail(table))
    table.server.tick()
    table.collect()
    for user in PLAYERS:
        msg, view = table.latest[user]
        assert view["turn"] == 2
        assert "Sorry Bob, I never bluff." in text_of(msg)
        assert "sent no order in time" not in text_of(msg)
    assert any("order received" in str(a["Subject"]) for a in table.answers[opener])


def reports_fail_and_retry_game_mends_them(table: Table, opener: str) -> None:
    """The composer's flow: the turn was played, its reports (a draft) failed; the referee
    hears what failed and how to mend it, the players that the turn is delayed (once),
    the deadline plays nothing meanwhile, and RETRY <game> after the fix sends the
    reports and tells the players the turn goes on."""
    with Session(table.server.engine) as session:
        assert session.exec(select(InboundMail).where(InboundMail.status == "failed")).all() \
            == []
        assert find_game(session, GAME).turn == 2
    (notice,) = [t for t in referee_mail(table) if "were not written" in t]
    flat = " ".join(notice.split())
    assert "UndefinedError" in flat and "has no attribute 'name'" in flat and GAME in flat
    assert f"RETRY {GAME}" in flat
    assert all(view["turn"] == 1 for _msg, view in table.latest.values())
    # everyone hears that the turn is delayed, once, as without the composer
    assert told(table, "turn 2 is delayed") == dict.fromkeys(PLAYERS, 1)
    # the deadline passes: the turn whose reports nobody has seen plays nothing
    post: Post = table.server.referee.post
    assert clock_tick(table.server.engine, post, post.clock() + timedelta(hours=30)) == 0
    with Session(table.server.engine) as session:
        assert find_game(session, GAME).turn == 2
    # RETRY <game> is said in the referee's HELP
    assert any(line.startswith("RETRY <mail id> | <game>")
               for line in "\n".join(table.server.referee.admin(["HELP"])).splitlines())
    # not mended yet: RETRY says why, and nothing changes
    table.referee_sends(f"RETRY {GAME}")
    table.server.tick()
    assert any("still cannot be written" in t and "UndefinedError" in t
               for t in referee_mail(table))
    assert told(table, "is delayed") == dict.fromkeys(PLAYERS, 1)   # not again
    assert told(table, "goes on") == dict.fromkeys(PLAYERS, 0)
    # the fix, then RETRY <game>: the reports go out, the talk in them
    mend_reports(table)
    table.referee_sends(f"RETRY {GAME}")
    table.server.tick()
    assert any("are written and sent" in t for t in referee_mail(table))
    table.collect()
    for user in PLAYERS:
        msg, view = table.latest[user]
        assert view["turn"] == 2
        assert "Sorry Bob, I never bluff." in text_of(msg)
    assert any("order received" in str(a["Subject"]) for a in table.answers[opener])
    assert told(table, "turn 2 goes on") == dict.fromkeys(PLAYERS, 1)
    (goes_on,) = [a for a in table.answers[opener] if "goes on" in str(a["Subject"])]
    assert "reports, which waited for the fix, are sent now" in " ".join(
        text_of(goes_on).split())
    table.referee_sends(f"RETRY {GAME}")   # nothing left to write
    table.server.tick()
    assert any("no reports that could not be written" in t for t in referee_mail(table))


def test_the_clock_tells_a_stuck_game_once(table: Table, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED 3 DEADLINE 24 RULES classic "
                                           "DICE 2"))
    table.server.tick()
    referee_mail(table)
    table.first_reports_in()
    table.reply("p2", ["SAY Hello all"])        # talk to show in the next report
    table.server.tick()
    table.collect()
    break_reports(table)
    post: Post = table.server.referee.post
    later = post.clock() + timedelta(hours=30)
    if composing(table):   # the clock plays the turn; the tick's end fails its reports
        # (a draft, as the clock work of a tick whose composer is at work makes them)
        assert clock_tick(table.server.engine, post, later, draft=True) == 1
        table.server.tick()
        table.server.tick()   # told once
        (notice,) = [t for t in referee_mail(table) if "were not written" in t]
        assert "UndefinedError" in notice and f"RETRY {GAME}" in " ".join(notice.split())
        assert told(table, "turn 2 is delayed") == dict.fromkeys(PLAYERS, 1)
        # the next deadline waits for the reports
        assert clock_tick(table.server.engine, post, later + timedelta(hours=30)) == 0
        mend_reports(table)
        table.referee_sends(f"RETRY {GAME}")
        table.server.tick()
        table.collect()
        assert all(view["turn"] == 2 for _msg, view in table.latest.values())
        assert told(table, "turn 2 goes on") == dict.fromkeys(PLAYERS, 1)
        assert told(table, "is delayed") == dict.fromkeys(PLAYERS, 1)
        return
    with caplog.at_level(logging.WARNING):
        for minute in range(3):               # the deadline passed; three ticks fail
            assert clock_tick(table.server.engine, post, later + timedelta(minutes=minute)) == 0
    table.server.tick()
    stuck = [t for t in referee_mail(table) if "is stuck" in t]
    assert len(stuck) == 1 and "UndefinedError" in stuck[0] and f"PROCESS {GAME}" in stuck[0]
    table.collect()
    for user in PLAYERS:
        assert len([a for a in table.answers[user] if "delayed" in str(a["Subject"])]) == 1
    assert sum("failed again" in r.getMessage() for r in caplog.records) == 2
    mend_reports(table)
    assert clock_tick(table.server.engine, post, later + timedelta(minutes=5)) == 1
    with Work(table.server.engine) as session:
        game = find_game(session, GAME)
        assert game.turn == 2 and pending_orders(session, game) == {}
