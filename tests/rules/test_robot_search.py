"""The strong robot's search: the replies it plays out are the bid readers' own."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.rules import beliefs, robot_search, robot_strong
from pbem.rules.bid_moves import BidMove
from pbem.rules.challenge import count_matching
from pbem.rules.dice import FACES
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.robot_choice import choose_strong
from pbem.rules.robot_search import (
    Player,
    Search,
    bystander_value,
    call_cost,
    holds,
    raise_options,
    reply,
    searchable,
    shortfall,
    tail,
)
from pbem.rules.robot_strong import Table, outcome_value
from pbem.rules.ruleset import ExactRule
from testkit.robot_play import after_raise, postal_played

BENCH = Path(__file__).resolve().parents[2] / "bench"

dists = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12).filter(
    lambda d: sum(d) > 1e-6).map(lambda d: tuple(p / sum(d) for p in d))


def brute_reply(player: Player, current: Bid | None, ladder: Ladder, seen: dict[int, int],
                exact_cost: float) -> Bid | None:
    """bench/readers.py's reader_move, without a bluff, over the player's dists."""
    raises = ladder.raises(current)
    if not raises:
        return None

    def odds(bid: Bid) -> float:
        dist = player.dists[bid.face]
        return sum(pr for c, pr in enumerate(dist) if c + seen[bid.face] >= bid.quantity)

    best = max((odds(b), -i, b) for i, b in enumerate(raises[:40]))[2]
    if current is not None:
        dist = player.dists[current.face]
        need = current.quantity - seen[current.face]
        call = sum(pr * (c - need) for c, pr in enumerate(dist) if c > need)
        call += (dist[need] if 0 <= need < len(dist) else 0.0) * exact_cost
        mine = player.dists[best.face]
        want = best.quantity - seen[best.face]
        short = sum(pr * (want - c) for c, pr in enumerate(mine) if c < want)
        if call < player.fear * short:
            return None
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(dists, min_size=6, max_size=6), st.lists(st.integers(0, 4), min_size=6,
                                                           max_size=6),
       st.integers(0, 80), st.sampled_from([0.25, 1.0]), st.sampled_from([0.0, 1.0]))
def test_a_reply_is_the_readers_move(made: list[tuple[float, ...]], seen_counts: list[int],
                                     position: int, fear: float, exact_cost: float) -> None:
    """The reply weighs only each face's lowest raise, and still picks what the reader
    picks from every raise: the likeliest to hold (the lowest of equals), or a call."""
    ladder = Ladder(20)
    bids = ladder.bids
    current = None if position >= len(bids) else bids[position]
    player = Player(dict(zip(FACES, made)), fear)
    seen = dict(zip(FACES, seen_counts))
    got = reply(player, current, raise_options(ladder, current), seen_counts, False,
                exact_cost)
    expected = brute_reply(player, current, ladder, seen, exact_cost)
    if got != expected and got is not None and expected is not None:   # a tie, summed apart
        assert holds(player.tails[got.face], got.quantity - seen[got.face]) == pytest.approx(
            holds(player.tails[expected.face], expected.quantity - seen[expected.face]))
    else:
        assert got == expected


@given(dists, st.integers(-3, 14))
def test_costs_and_odds_agree_with_the_distribution(dist: tuple[float, ...], need: int) -> None:
    tails = tail(dist)
    assert holds(tails, need) == pytest.approx(
        sum(pr for c, pr in enumerate(dist) if c >= need), abs=1e-9)
    mean = sum(c * pr for c, pr in enumerate(dist))
    # short less over is what the count falls short of the bid by, on average
    over = call_cost(dist, need, 0.0)
    assert shortfall(dist, need) - over == pytest.approx(need - mean, abs=1e-9)


@given(st.integers(0, 20), st.integers(1, 20), st.sampled_from(list(ExactRule)),
       st.integers(3, 6))
def test_a_bystander_loses_only_on_an_exact_count_that_costs_all(
        actual: int, quantity: int, rule: ExactRule, players: int) -> None:
    value = bystander_value(actual, quantity, rule, players)
    if actual == quantity and rule is ExactRule.ALL_BUT_BIDDER:
        assert value == pytest.approx(-1.0 / (players - 1))
    else:
        assert value >= 0.0
        if actual != quantity:
            assert value == pytest.approx(0.5 * abs(actual - quantity) / (players - 1))


@pytest.mark.parametrize("seed", [3, 11, 40])
def test_the_next_readers_reply_is_bench_readers(seed: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """After the robot's raise, the search's reader at the next seat answers as
    bench/readers.py's reader does, seeing that seat's dice (without a bluff)."""
    monkeypatch.syspath_prepend(str(BENCH))
    from readers import reader_move  # bench/readers.py

    state = postal_played(seed, 4)
    checked = 0
    for seat, number in sorted(state.due().items()):
        view = state.seat_view(seat, number)
        raise_ = view.ladder.raises(view.current)[1]
        search = Search(view, lambda bid: 0.0, lambda bid: 0.0, lambda a, q, b: 0.0,
                        random.Random(seed))
        player = search._reader_player(view.next_seat or 0, raise_.face)
        nxt_view = after_raise(state, seat, raise_, seed).seat_view(view.next_seat, number)
        assert nxt_view.current == raise_
        seen = {f: count_matching(nxt_view.known, Bid(1, f)) for f in FACES}
        rng = random.Random(0)   # its first draw, 0.84, is no bluff
        expected = reader_move(nxt_view, rng)
        got = reply(player, raise_, raise_options(view.ladder, raise_),
                    [seen[f] for f in FACES], False, search.exact_cost)
        assert (got is None) == (not isinstance(expected, BidMove))
        if got is not None:   # the same bid, or one as likely (a tie summed apart)
            assert isinstance(expected, BidMove)
            odds = [holds(player.tails[b.face], b.quantity - seen[b.face])
                    for b in (got, expected.bid)]
            assert expected.bid == got or odds[0] == pytest.approx(odds[1])
        checked += 1
    assert checked == len(state.due()) > 0


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 5000), st.integers(0, 25), st.integers(2, 4), st.integers(0, 1))
def test_a_searched_move_is_repeatable_and_bounded(seed: int, turns: int,
                                                   candidates: int, standings: int) -> None:
    """The search draws from the move's stream: the same view and seed give the same
    move (its outcomes weighed by the standings or not); a raise's searched value lies
    between the worst loss and the best gain; the search adds no posterior of the
    other seats beyond the view's own."""
    state = postal_played(seed, turns)
    for seat, number in sorted(state.due().items()):
        view = state.seat_view(seat, number)
        assert searchable(view)
        old, robot_search.CANDIDATES = robot_search.CANDIDATES, candidates
        old_standings, robot_strong.SEARCH_STANDINGS = robot_strong.SEARCH_STANDINGS, standings
        try:
            move = choose_strong(view, random.Random(seed))
            assert choose_strong(view, random.Random(seed)) == move
        finally:
            robot_search.CANDIDATES = old
            robot_strong.SEARCH_STANDINGS = old_standings
        table = Table(view)
        values = {b: table.raise_value(b) for b in view.ladder.raises(view.current)[:40]}
        beliefs.hand_weights.cache_clear()
        rule = view.rules.exact_rule
        search = Search(view, lambda b, found=values: found.get(b, float("-inf")),
                        table.bid_challenge_value,
                        lambda a, q, bidder, rule=rule: outcome_value(a, q, bidder, rule, 5),
                        random.Random(seed))
        for bid in list(values)[:5]:   # the worst: 25 dice lost, the first whole, half after
            assert -13.0 <= search.value(bid) <= 1.0
        assert beliefs.hand_weights.cache_info().misses <= len(view.others)
