"""A whole postal game over the real mail stack: Dovecot IMAP in, SMTP out.

Five player clients read their reports from their own IMAP mailboxes and
answer them by replying over SMTP, as people would. On the way the test
sends a wrong order, a stale order and an expose, and checks that every
mail is answered once, every player gets one report a turn, the final
standings match a recount from the dice in the last reports, and the
exported record passes `pbem verify`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from pbem.games.records import find_game
from pbem.kinds.bidding import order_lines
from pbem.kinds.postal import choose_order
from pbem.rules.bid_moves import BidMove
from pbem.rules.challenge import count_matching
from pbem.rules.dice import Die, face_from_json
from pbem.rules.ladder import Bid
from pbem.rules.postal import minigame_of
from pbem.rules.postal_record import GameRecord
from pbem.services.export import export_json
from testkit.e2e import Table, pbem_verify, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]


@pytest.fixture
def table(mailstack: Any, tmp_path: Path, database: str) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS, database=database) as made:
        yield made


def recount(final_view: dict[str, Any]) -> dict[str, int]:
    """Virtual dice from the reveals in the final report alone (docs/rules.md section 2)."""
    virtual = {str(p["number"]): 5 for p in final_view["players"]}
    for mg in final_view["minigames"]:
        c = mg["challenge"]
        last = mg["bids"][-1]
        bid = Bid(last["quantity"], face_from_json(last["face"]))
        table = [Die(face_from_json(f)) for dice in c["dice"].values() for f in dice]
        actual = count_matching(table, bid)
        assert actual == c["actual"]
        bidder, challenger = str(last["player"]), str(c["player"])
        if actual < bid.quantity:
            virtual[bidder] -= bid.quantity - actual
        elif actual > bid.quantity:
            virtual[challenger] -= actual - bid.quantity
        else:
            for seat in virtual:
                if seat != bidder:
                    virtual[seat] -= 1
    return virtual


def test_whole_postal_game_over_dovecot(mailstack: Any, table: Table, tmp_path: Path) -> None:
    server, latest = table.server, table.latest
    table.referee_sends(*table.setup("cup-1", "NEWGAME cup-1 SEED 20261129"))
    server.tick()
    notices = table.referee.new_mail()
    assert len(notices) == 1 and "started" in text_of(notices[0])

    rng = random.Random(5)
    did: Counter[str] = Counter()
    table.first_reports_in()

    for turn, _ in table.turns(limit=60):
        for user, (msg, view) in sorted(latest.items()):
            seat = view["you"]
            if view["to_move"] is None:
                continue
            assert view["to_move"] == minigame_of(seat, turn)
            move = choose_order(view, rng)
            assert move is not None
            if turn == 1 and not did["wrong"]:
                # the opener may not challenge: an error answer, nothing applied
                table.reply(user, ["CHALLENGE"], msg)
                did["wrong"] += 1
            if turn == 2 and not did["stale"]:
                table.reply(user, ["BID 25 5"], table.first_reports[user])
                did["stale"] += 1
            if isinstance(move, BidMove) and not move.expose and not did["expose"]:
                mg = view["minigames"][view["to_move"] - 1]
                hidden = mg["your_dice"]["hidden"]
                if len(hidden) >= 2:
                    move = BidMove(move.bid, (face_from_json(hidden[0]),))
                    did["expose"] += 1
            table.reply(user, ["Hello referee,", *order_lines(move), "Cheers", "-- ", "BID 99 5"],
                        msg)

    assert did == Counter(wrong=1, stale=1, expose=1)
    texts = table.check_the_mail(refusals=2)
    assert any("CHALLENGE" in t and "must BID" in t for t in texts)
    assert any("resolved already" in t and "BID 25 5" in t for t in texts)

    # an expose shows up in the reports: the exposed die stays face up
    final = table.views()
    assert any(b.get("exposed") for mg in final["p1"]["minigames"] for b in mg["bids"])

    # the standings match an independent recount from the last reports' reveals
    any_view = final["p1"]
    counted = recount(any_view)
    assert {str(p["number"]): p["virtual_dice"] for p in any_view["players"]} == counted
    ranks = {s["number"]: s["rank"] for s in any_view["standings"]}
    for s in any_view["standings"]:
        assert s["rank"] == 1 + sum(1 for v in counted.values() if v > s["virtual_dice"])
    assert len(ranks) == 5

    # the export verifies, with the real command line
    with Session(server.engine) as session:
        record = GameRecord.from_json(export_json(session, find_game(session, "cup-1")))
    pbem_verify(record.to_json(), tmp_path / "cup-1.json")
    # processed mail was moved out of the inbox into pbem-done
    assert mailstack.fetch_all("bluff") == []
    assert len(mailstack.fetch_all("bluff", "pbem-done")) == 1 + sum(
        len(v) for v in table.sent_ids.values())
