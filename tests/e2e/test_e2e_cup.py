"""A whole game of Cup of Bluff over the real mail stack: Dovecot IMAP in, SMTP out.

Four robot players read their reports from their own IMAP mailboxes and answer
them by replying over SMTP with the orders pbem.demo.robot_client writes from
report.json alone (the Bluffer from its own roll, the Guesser from the claim).
On the way: a wrong order and an order out of turn are answered with polite
errors that change nothing; every player gets one report after every move,
and only the Bluffer ever sees the roll before it is shown; every mail is
answered once; the final standings equal a recount from the rounds in the
reports; the export follows the generic schema and passes `pbem verify`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from testkit.e2e import Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4"]
GAME = "cup-of-bluff-1"
SEED = 247   # a short game (35 moves) with a steal that fails and a GIVE
# docs/rules.md section 5, written out on purpose (not pbem.rules.cupofbluff's table): the
# recount below must not lean on the referee's own code
POINTS = {3: 5, 18: 5, 4: 4, 17: 4, 5: 3, 6: 3, 15: 3, 16: 3,
          7: 2, 8: 2, 13: 2, 14: 2, 9: 1, 10: 1, 11: 1, 12: 1}


def check_view(user: str, msg: EmailMessage, view: dict[str, Any]) -> None:
    assert view["format"] == "pbem.cup.view/1"
    # the roll is the Bluffer's secret until the dice are shown
    if view["you"] == view["bluffer"]:
        assert len(view["your_roll"]) == 3
    else:
        assert view["your_roll"] is None and "Your dice (secret)" not in text_of(msg)


@pytest.fixture
def table(mailstack: Any, tmp_path: Path, database: str) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS, check=check_view, rounds_key="last_turn",
               database=database) as made:
        yield made


def recount(rounds: dict[int, dict[str, Any]], seats: list[int]) -> list[dict[str, int]]:
    """The tokens and standings from the rounds as the reports showed them (docs/rules.md section 5):
    who was right follows from the shown dice and the answer alone."""
    held: dict[int, set[int]] = {s: set() for s in seats}
    centre = set(POINTS)
    for number in sorted(rounds):
        r = rounds[number]
        b, g, total, roll = r["bluffer"], r["guesser"], r["total"], r["roll"]
        if r["action"] == "doublet":
            assert len(set(roll)) < 3 and len(r["returned"]) >= 2
            assert sum(POINTS[t] for t in r["returned"]) == POINTS[total]
            assert set(r["returned"]) <= held[b] and total in centre
            held[b] -= set(r["returned"])
            centre |= set(r["returned"])
            centre.remove(total)
            held[b].add(total)
            continue
        guesser_right = (r["answer"] == "OK") == (sum(roll) == total)
        winner = g if guesser_right else b
        assert r["winner"] == winner, r
        if r["action"] == "announce":
            centre.remove(total)
            held[winner].add(total)
        elif winner == b:
            held[g].remove(total)
            held[b].add(total)
        else:
            assert r["given"] in held[b], r
            held[b].remove(r["given"])
            held[g].add(r["given"])
    assert not centre, "the game ends when the centre is empty"
    key = {s: (-sum(POINTS[t] for t in held[s]), len(held[s])) for s in seats}
    ordered = sorted(seats, key=lambda s: (key[s], s))
    return [{"rank": 1 + sum(1 for o in seats if key[o] < key[s]), "seat": s,
             "score": -key[s][0], "tokens": key[s][1]} for s in ordered]


def test_whole_cup_of_bluff_game_over_dovecot(table: Table) -> None:
    server, latest = table.server, table.latest
    table.referee_sends("NEWGAME cup-bad RULES cup FAST")
    table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED {SEED} RULES cup"))
    server.tick()
    notices = table.referee.new_mail()
    assert len(notices) == 2
    assert "NEWGAME cup-bad RULES cup FAST" in text_of(notices[0])
    assert "Cup of Bluff has no options" in text_of(notices[0])
    assert "Cup of Bluff" in text_of(notices[1]) and "started" in text_of(notices[1])

    rng = random.Random(5)
    moves: Counter[str] = Counter()
    seat_of = table.first_reports_in()
    user_at = {s: u for u, s in seat_of.items()}

    # turn 1: the Bluffer cannot be their own Guesser, a player out of turn cannot
    # answer; both get a polite error and nothing changes
    bluffer = user_at[latest["p1"][1]["bluffer"]]
    waiter = user_at[latest["p1"][1]["bluffer"] % 4 + 1]
    table.reply(bluffer, [f"ANNOUNCE 10 TO {seat_of[bluffer]}"])
    table.reply(waiter, ["BLUFF"])
    texts = table.refused_on_turn_1(GAME, bluffer, waiter)
    assert len(texts) == 2
    assert f"ANNOUNCE 10 TO {seat_of[bluffer]}" in texts[0]
    assert "must be another player" in texts[0]
    assert "BLUFF" in texts[1] and "no move this turn" in texts[1]

    # the robot client's orders between a greeting and a thank-you
    for _, lines in table.robot_turns(rng, ["Hi,"], ["thanks"], limit=120):
        moves[lines[0].split()[0]] += 1
    assert {"ANNOUNCE", "OK", "BLUFF", "STEAL", "GIVE"} <= set(moves), moves
    table.check_the_mail(refusals=2)

    # the standings equal a recount from the rounds the players saw
    final = latest["p1"][1]
    table.assert_rounds_numbered()
    counted = recount(table.rounds, [1, 2, 3, 4])
    assert [{k: s[k] for k in ("rank", "seat", "score")} for s in final["standings"]] == [
        {k: s[k] for k in ("rank", "seat", "score")} for s in counted]
    assert {h["seat"]: h["count"] for h in final["holdings"]} == {
        s["seat"]: s["tokens"] for s in counted}
    assert "THE GAME IS OVER" in text_of(latest["p2"][0])

    # the export follows the schema and verifies with the real command line
    out = table.verified_export(GAME, counted)
    assert out.startswith(f"OK: game {GAME} (Cup of Bluff)")
