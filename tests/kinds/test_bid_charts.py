"""GameKind.bid_charts: what a report draws for a bid its reader must answer, checked
over whole games the kinds' robots play (postal, classic editions, Cup of Bluff)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.kinds.base import GameKind
from pbem.kinds.classic import CLASSIC
from pbem.kinds.cup import CUP
from pbem.kinds.postal import POSTAL
from pbem.rules import seed_from_number
from pbem.rules.dice import DiceStream

GAMES: list[tuple[GameKind[Any, Any], tuple[str, ...], int]] = [
    (POSTAL, (), 5), (CLASSIC, ("english", "DICE", "3"), 4),
    (CLASSIC, ("anniversary", "EXPOSE", "on"), 3), (CLASSIC, ("czech",), 6), (CUP, (), 4)]


def standing_bid(kind: GameKind[Any, Any], state: Any, seat: int) -> int | None:
    """The quantity (or claimed total) seat must answer now, read from its own view."""
    view = kind.view(state, seat)
    if kind is POSTAL:
        number = view["to_move"]
        game = next((g for g in view["minigames"] if g["number"] == number), None)
        bid = game and game["current_bid"]
        return bid["quantity"] if bid else None
    if kind is CLASSIC:
        bid = view["current_bid"]
        return bid["quantity"] if bid and seat in kind.due(state) else None
    claim = view.get("claim")
    answering = claim and claim.get("answer") is None and claim.get("guesser") == seat \
        and view.get("phase") == "answer"
    return claim["total"] if answering else None


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(range(len(GAMES))), st.integers(1, 10_000))
def test_a_chart_for_each_bid_its_reader_answers_and_for_nothing_else(game: int,
                                                                       seed: int) -> None:
    kind, words, players = GAMES[game]
    stream, rng = DiceStream(seed_from_number(seed)), random.Random(seed)
    state = kind.start(kind.parse_options(list(words)), stream, players)
    charts_seen = 0
    for _ in range(400):
        if kind.over(state):
            break
        due = kind.due(state)
        for seat in range(1, players + 1):
            charts = kind.bid_charts(state, seat)
            wanted = standing_bid(kind, state, seat) if seat in due else None
            if wanted is None:
                assert charts == [], (seat, charts)
                continue
            (chart,) = charts
            charts_seen += 1
            assert chart["quantity"] == wanted
            counts = [c for c, _ in chart["bars"]]
            assert counts == sorted(counts) and len(set(counts)) == len(counts)
            assert abs(sum(p for _, p in chart["bars"]) - 1) < 1e-9
            assert all(0 <= p <= 1 for _, p in chart["bars"])
            assert chart["rule"] == ("exactly" if kind is CUP else "at_least")
            if kind is not CUP:
                # the count can be no less than the dice the seat sees matching the bid
                assert min(counts) >= 0
        moves = {seat: kind.robot_move(state, seat, rng) for seat in due}
        state = kind.apply(state, moves, stream).state
    assert charts_seen > 0
