"""Mail in the order it is meant to be read, over the real mail stack (Dovecot IMAP in,
SMTP out): the confirmation of the order that ends a turn arrives before the turn's
report it says follows; an order in reply to the table talk (or to a confirmation) of the
turn counts for the turn it is read in, even when the mail that carried the talk ended
the turn before;
the players told that a turn is delayed hear that it goes on once the referee RETRYs the
mail that held it, and hear again if it is delayed again."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from pbem.demo.robot_client import report_view
from pbem.games.records import find_game
from pbem.store import faults
from pbem.store.models import InboundMail
from testkit.e2e import Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3"]
GAME = "order-1"


@pytest.fixture
def table(mailstack: Any, tmp_path: Path) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS) as made:
        made.referee_sends(*made.setup(GAME, f"NEWGAME {GAME} SEED 3 DEADLINE 24 RULES "
                                             "classic DICE 2"))
        made.server.tick()
        made.referee.new_mail()
        made.first_reports_in()
        yield made


def to_move(table: Table) -> str:
    view = next(iter(table.views().values()))
    return next(u for u, v in table.views().items() if v["you"] == view["to_move"])


def arrived(table: Table, user: str) -> list[tuple[str, EmailMessage]]:
    """user's new mail in the order it arrived: ("report", msg) or ("answer", msg) (the
    answers to their mail), ("mail", msg) for the rest; reports are kept as the latest."""
    found = []
    for msg in table.clients[user].new_mail():
        view = report_view(msg)
        if view is not None and msg["In-Reply-To"] is None:
            table.latest[user] = (msg, view)
            found.append(("report", msg))
        else:
            found.append(("answer" if msg["In-Reply-To"] is not None else "mail", msg))
    return found


def test_the_confirmation_comes_before_the_report_it_announces(table: Table) -> None:
    opener = to_move(table)
    table.reply(opener, ["BID 1 threes"])     # the only order due: it ends turn 1
    table.server.tick()
    mails = arrived(table, opener)
    assert [kind for kind, _ in mails] == ["answer", "report"], mails
    answer, report = mails[0][1], mails[1][1]
    assert "order received" in str(answer["Subject"])
    assert report_view(report)["turn"] == 2


def test_an_order_in_reply_to_the_talk_counts_for_the_turn_now(table: Table) -> None:
    opener = to_move(table)
    # the talk and the order that ends turn 1 in one mail: the talk is read in turn 2
    table.reply(opener, ["SAY Nobody ever bluffs here.", "BID 1 threes"])
    table.server.tick()
    mails = {user: arrived(table, user) for user in PLAYERS}
    nxt = to_move(table)
    assert nxt != opener and table.views()[nxt]["turn"] == 2
    (talk,) = [m for _, m in mails[nxt] if "table talk from" in str(m["Subject"])]
    table.reply(nxt, ["BID 2 threes"], to=talk)   # "reply to this mail", as the talk says
    table.server.tick()
    (answer,) = [m for kind, m in arrived(table, nxt) if kind == "answer"]
    assert "order received" in str(answer["Subject"]), text_of(answer)
    with Session(table.server.engine) as session:
        assert find_game(session, GAME).turn == 3


def failed_mail(table: Table) -> int:
    with Session(table.server.engine) as session:
        row = session.exec(select(InboundMail).where(InboundMail.status == "failed")
                           .order_by(col(InboundMail.id).desc())).first()
        assert row is not None and row.id is not None
        return row.id


def subjects(table: Table, user: str) -> list[str]:
    return [str(m["Subject"]) for _, m in arrived(table, user)]


def test_the_players_told_of_a_delay_hear_that_it_is_over(table: Table) -> None:
    opener = to_move(table)
    other = next(u for u in PLAYERS if u != opener)
    faults.arm_failures("inbound-read")     # our bug: the talk fails, and holds the turn
    try:
        table.reply(other, ["SAY Hello all"])
        table.server.tick()
    finally:
        faults.arm_failures(None)
    mail_id = failed_mail(table)
    for user in PLAYERS:
        assert any("turn 1 is delayed" in s for s in subjects(table, user)), user
    table.referee_sends(f"RETRY {mail_id}")
    table.server.tick()
    table.server.tick()
    for user in PLAYERS:
        said = subjects(table, user)
        assert any("turn 1 goes on" in s for s in said), (user, said)
    with Session(table.server.engine) as session:
        assert session.get(InboundMail, mail_id).status == "done"

    # delayed again in the same turn: told again, and again that it is over
    faults.arm_failures("inbound-read")
    try:
        table.reply(other, ["SAY Hello again"])
        table.server.tick()
    finally:
        faults.arm_failures(None)
    for user in PLAYERS:
        assert any("turn 1 is delayed" in s for s in subjects(table, user)), user
    table.referee_sends(f"RETRY {failed_mail(table)}")
    table.server.tick()
    for user in PLAYERS:
        assert any("turn 1 goes on" in s for s in subjects(table, user)), user
