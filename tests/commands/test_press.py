"""Press (NEWGAME PRESS public | private | none): who hears table talk. With private
press SAY TO reaches one player and the referee, and only their reports show it; the
web pages never do. Through the registry and the turn's real reports, on SQLite."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from pbem.games.records import find_game
from pbem.runner.server import Server
from pbem.store.models import TalkMessage
from pbem.text.errors import Refusal
from pbem.web.queries import talk_of
from testkit.desk import PLAYERS, REFEREE, last_text, outbox, seat_of, subjects, text_of
from testkit.deskrun import player, referee

ANN = PLAYERS[0]


def game(server: Server, press: str) -> None:
    referee(server, f"NEWGAME g1 SEED 3 PRESS {press}",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), "START g1")


def reports_after(server: Server) -> dict[str, str]:
    before = {p: len(outbox(server, p)) for p in PLAYERS}
    referee(server, "PROCESS g1")
    return {p: " ".join(text_of(m) for m in outbox(server, p)[before[p]:]) for p in PLAYERS}


def test_private_press_reaches_one_player_and_the_referee_only(server: Server) -> None:
    game(server, "private")
    to = next(p for p in PLAYERS[1:] if seat_of(server, p) == 3)
    heard_before = {p: len(outbox(server, p)) for p in PLAYERS}
    out = player(server, ANN, "SAY TO 3 Shall we both", "SAY challenge player 2?", game="g1")
    assert out[0] == f"{ANN} said 33 characters to seat 3 in g1"
    told = [p for p in PLAYERS if len(outbox(server, p)) > heard_before[p]]
    assert sorted(told) == sorted([ANN, to])                 # the speaker's answer, and 3
    assert "says to you only: Shall we both challenge player 2?" in last_text(server, to)
    assert "private press" in subjects(server, REFEREE)[-1]
    with Session(server.engine) as session:
        (talk,) = session.exec(select(TalkMessage)).all()
        assert talk.to_seat == 3 and talk.text == "Shall we both\nchallenge player 2?"
        assert talk_of(session, find_game(session, "g1")) == []     # never on the web
    reports = reports_after(server)
    ann_seat = seat_of(server, ANN)
    assert "to player 3 only" in reports[ANN] and "challenge player 2?" in reports[ANN]
    assert "to you only" in reports[to]
    for other in set(PLAYERS) - {ANN, to}:
        assert "challenge player 2?" not in reports[other], other
    assert ann_seat != 3


def test_public_press_refuses_say_to_and_tells_everyone(server: Server) -> None:
    game(server, "public")
    with pytest.raises(Refusal) as refused:
        player(server, ANN, "SAY TO 3 psst", game="g1")
    assert "SAY TO is for games with private press" in refused.value.message
    player(server, ANN, "SAY Hello all", game="g1")
    reports = reports_after(server)
    assert all("Hello all" in reports[p] for p in PLAYERS)


def test_no_press_refuses_every_say(server: Server) -> None:
    game(server, "none")
    with pytest.raises(Refusal) as refused:
        player(server, ANN, "SAY Hello", game="g1")
    assert "has no table talk" in refused.value.message


@pytest.mark.parametrize("line", ["SAY TO 9 hi", "SAY TO Nobody hi", "SAY TO 3"])
def test_say_to_nobody_at_the_table_is_refused(server: Server, line: str) -> None:
    game(server, "private")
    with pytest.raises(Refusal) as refused:
        player(server, ANN, line, game="g1")
    assert "say it to another player by seat or first name" in refused.value.message


def test_press_is_a_newgame_option_shown_in_the_rules(server: Server) -> None:
    with pytest.raises(AssertionError, match="kind of press"):
        referee(server, "NEWGAME g2 PRESS loud")
    out = referee(server, "NEWGAME g3 PRESS private")
    assert "private press" in " ".join(out)


def test_the_referee_may_publish_the_private_press_once_the_game_is_over(
        server: Server) -> None:
    game(server, "private")
    player(server, ANN, "SAY TO 3 Let us both challenge.", game="g1")
    with pytest.raises(Refusal, match="is running: cannot publish the private press"):
        referee(server, "PUBLISH g1")
    with Session(server.engine) as session:
        g1 = find_game(session, "g1")
        g1.status = "over"                 # as its last turn would leave it
        session.add(g1)
        session.commit()
        assert talk_of(session, g1) == []          # over, not published: still private
    assert referee(server, "PUBLISH g1") == ["game g1: its private press is public now"]
    with Session(server.engine) as session:
        (line,) = talk_of(session, find_game(session, "g1"))
        assert line["from"].endswith(", to player 3 only")
        assert line["text"] == "Let us both challenge."
