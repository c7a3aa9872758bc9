"""A whole game of classic Bluff over the real mail stack: Dovecot IMAP in, SMTP out.

Four robot players read their reports from their own IMAP mailboxes and answer
them by replying over SMTP with the orders pbem.demo.robot_client writes from
report.json alone. On the way: NEWGAME with a bad option and an unknown kind
is refused quoting the line; a wrong order and an order out of turn are
answered with polite errors that change nothing; every player gets one report
after every move, their own dice only; every mail is answered once; the
final standings equal a recount from the reveals in the reports; the export
follows the generic schema and passes `pbem verify`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from testkit.e2e import Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4"]
GAME = "classic-1"
DICE = 2
SEED = 4   # a short game: 4 players with 2 dice each


def check_view(user: str, msg: EmailMessage, view: dict[str, Any]) -> None:
    assert view["format"] == "pbem.classic.view/1"
    # your own dice, never another player's hidden ones
    assert view["your_dice"] is not None or view["game_over"]
    assert all(set(p) >= {"hidden", "exposed"} and isinstance(p["hidden"], int)
               for p in view["players"])


@pytest.fixture
def table(mailstack: Any, tmp_path: Path, database: str) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS, check=check_view, rounds_key="last_round",
               database=database) as made:
        yield made


def matches(face: Any, bid_face: Any) -> bool:
    """docs/rules.md section 1: a number bid counts its face and the stars; a star bid stars."""
    return face == "*" if bid_face == "*" else face in (bid_face, "*")


def recount(rounds: dict[int, dict[str, Any]], seats: list[int]) -> list[dict[str, int]]:
    """The standings from the reveals alone (English rules: an exact bid costs everyone
    but the bidder a die; no super die): still in by dice, out by the round they went
    out in, later is better."""
    dice = {s: DICE for s in seats}
    out: dict[int, int] = {}
    for number in sorted(rounds):
        r = rounds[number]
        bid = r["bid"]
        actual = sum(1 for c in r["cups"] for f in c["dice"] if matches(f, bid["face"]))
        assert r["actual"] == actual, r
        if actual < bid["quantity"]:
            lost = {r["bidder"]: bid["quantity"] - actual}
        elif actual > bid["quantity"]:
            lost = {r["challenger"]: actual - bid["quantity"]}
        else:
            lost = {s: 1 for s in seats if s != r["bidder"] and dice[s] > 0}
        paid = {s: min(n, dice[s]) for s, n in lost.items()}
        assert {x["seat"]: x["lost"] for x in r["losses"]} == paid, r
        for s, n in paid.items():
            dice[s] -= n
            if dice[s] == 0:
                out[s] = number
        assert sorted(r["out"]) == sorted(s for s in paid if dice[s] == 0)
    key = {s: (1, dice[s]) if s not in out else (0, out[s]) for s in seats}
    ordered = sorted(seats, key=lambda s: (-key[s][0], -key[s][1], s))
    return [{"rank": 1 + sum(1 for o in seats if key[o] > key[s]), "seat": s, "score": dice[s]}
            for s in ordered]


def test_whole_classic_game_over_dovecot(table: Table) -> None:
    server, latest = table.server, table.latest

    # NEWGAME with a bad option or an unknown kind: a polite error quoting the line
    table.referee_sends("NEWGAME bad-1 RULES classic DICE 99")
    table.referee_sends("NEWGAME bad-2 RULES chess")
    table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED {SEED} RULES classic DICE {DICE}"))
    server.tick()
    notices = table.referee.new_mail()
    assert len(notices) == 3
    refused = [text_of(n) for n in notices[:2]]
    assert "nothing was applied" in str(notices[0]["Subject"]).lower()
    assert "NEWGAME bad-1 RULES classic DICE 99" in refused[0] and "DICE 99" in refused[0]
    assert "NEWGAME bad-2 RULES chess" in refused[1] and "unknown game kind" in refused[1]
    started = text_of(notices[2])
    assert "classic Bluff" in started and "started" in started

    rng = random.Random(5)
    seat_of = table.first_reports_in()
    user_at = {s: u for u, s in seat_of.items()}

    # turn 1: the opener may not challenge, a player out of turn may not bid;
    # both get a polite error and nothing changes
    opener = user_at[latest["p1"][1]["to_move"]]
    waiter = user_at[latest["p1"][1]["to_move"] % 4 + 1]
    table.reply(opener, ["CHALLENGE"])
    table.reply(waiter, ["BID 2 threes"])
    texts = table.refused_on_turn_1(GAME, opener, waiter)
    assert len(texts) == 2
    assert "CHALLENGE" in texts[0] and "must BID" in texts[0]
    assert "BID 2 threes" in texts[1] and "no move this turn" in texts[1]

    # the robot client's orders between a greeting and a signature (the CHALLENGE below
    # "-- " is not read)
    for mover, _ in table.robot_turns(rng, ["Hello referee,"], ["-- ", "CHALLENGE"], limit=80):
        assert "You must" in text_of(latest[mover][0])
    table.check_the_mail(refusals=2)

    # the standings equal a recount from the reveals the players saw
    final = latest["p1"][1]
    table.assert_rounds_numbered()
    assert len(table.rounds) >= 3
    counted = recount(table.rounds, [1, 2, 3, 4])
    assert [{k: s[k] for k in ("rank", "seat", "score")} for s in final["standings"]] == counted
    assert final["winner"] == counted[0]["seat"]
    assert "THE GAME IS OVER" in text_of(latest["p2"][0])

    # the export follows the schema and verifies with the real command line
    out = table.verified_export(GAME, counted)
    assert out.startswith(f"OK: game {GAME} (classic Bluff)")
