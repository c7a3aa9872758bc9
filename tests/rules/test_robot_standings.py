"""The strong robot weighs a postal outcome by its share of first place over the game."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.kinds import KINDS
from pbem.rules import robot_strong
from pbem.rules.challenge import resolve_challenge
from pbem.rules.dice import DiceStream, Die, seed_from_number
from pbem.rules.ladder import Bid
from pbem.rules.robot_standings import ENDINGS, first_share, share_after, unit
from pbem.rules.robot_strong import Table, challenge_losses, outcome_value, standings_weight
from pbem.rules.ruleset import ExactRule
from testkit.robot_play import postal_played

BENCH = Path(__file__).resolve().parents[2] / "bench"
SEATS = (1, 2, 3, 4, 5)
scores = st.lists(st.integers(0, 5), min_size=5, max_size=5).map(
    lambda v: dict(zip(SEATS, v)))
later = st.lists(st.sampled_from(sorted(ENDINGS)), max_size=3)


def test_endings_are_distributions() -> None:
    for exact, losses in ENDINGS.values():
        assert exact + sum(losses) == pytest.approx(1.0, abs=0.002)


@given(rivals=st.lists(st.integers(-3, 3), min_size=4, max_size=4))
def test_with_no_game_left_the_share_is_the_standings(rivals: list[int]) -> None:
    got = first_share(tuple(sorted(rivals)), ())
    if max(rivals) > 0:
        assert got == 0.0
    else:
        assert got == pytest.approx(1 / (1 + rivals.count(0)))


@settings(max_examples=60, deadline=None)
@given(scores=scores, later=later)
def test_the_seats_shares_add_to_one(scores: dict[int, int], later: list[int]) -> None:
    """Shares of first place are a split of one first place (within the clamp at SPREAD)."""
    total = sum(share_after(scores, seat, {}, later) for seat in SEATS)
    assert total == pytest.approx(1.0, abs=1e-3)


@settings(max_examples=60, deadline=None)
@given(scores=scores, later=later, me=st.sampled_from(SEATS), other=st.sampled_from(SEATS),
       lost=st.integers(1, 4))
def test_a_die_lost_costs_the_robot_and_one_a_rival_loses_helps(
        scores: dict[int, int], later: list[int], me: int, other: int, lost: int) -> None:
    now = share_after(scores, me, {}, later)
    assert share_after(scores, me, {me: lost}, later) <= now + 1e-12
    if other != me:
        assert share_after(scores, me, {other: lost}, later) >= now - 1e-12


def test_the_leader_plays_safer_and_the_last_takes_risks() -> None:
    """A die lost costs a leader more than a seat behind; an exact count of its own is
    worth more than a die lost costs to a seat behind."""
    later = (3, 2, 1)
    ahead = {1: 5, 2: 4, 3: 4, 4: 4, 5: 4}
    behind = {1: 4, 2: 5, 3: 5, 4: 5, 5: 5}

    def shift(scores: dict[int, int], losses: dict[int, int]) -> float:
        return (share_after(scores, 1, losses, later)
                - share_after(scores, 1, {}, (*later, 4))) / unit()

    exact = {2: 1, 3: 1, 4: 1, 5: 1}
    assert shift(ahead, {1: 1}) < shift(behind, {1: 1}) < 0
    assert shift(behind, exact) > -shift(behind, {1: 1})
    assert unit() > 0


@settings(max_examples=200, deadline=None)
@given(actual=st.integers(0, 10), quantity=st.integers(1, 10),
       bidder=st.sampled_from(SEATS), step=st.integers(1, 4),
       rule=st.sampled_from(list(ExactRule)), scores=scores)
def test_the_losses_are_the_referee_s(actual: int, quantity: int, bidder: int, step: int,
                                      rule: ExactRule, scores: dict[int, int]) -> None:
    challenger = (bidder + step - 1) % 5 + 1
    table = {seat: () for seat in SEATS}
    table[1] = tuple(Die(2) for _ in range(actual))   # twos match a bid of twos
    result = resolve_challenge(Bid(quantity, 2), bidder, challenger, table, rule,
                               bidder_at_max=scores[bidder] >= 5)
    assert challenge_losses(actual, quantity, bidder, challenger, scores, rule) == result.losses


def postal_view(seed: int, turns: int):   # type: ignore[no-untyped-def]
    kind = KINDS["postal"]
    state = postal_played(seed, turns)
    if kind.over(state):
        return None
    seat, number = next(iter(state.due().items()))
    return state.seat_view(seat, number)


@contextmanager
def weights(leading: float, behind: float, level: float = -1.0,
            exact: float = 1.0, reads: float = 0.0) -> Iterator[None]:
    """The robot's standings weights set for a test (the arena's --tune does the same)."""
    names = ("STANDINGS", "STANDINGS_BEHIND", "STANDINGS_LEVEL", "STANDINGS_EXACT",
             "STANDINGS_READS")
    old = [getattr(robot_strong, name) for name in names]
    for name, value in zip(names, (leading, behind, level, exact, reads)):
        setattr(robot_strong, name, value)
    try:
        yield
    finally:
        for name, value in zip(names, old):
            setattr(robot_strong, name, value)


@given(dice=st.lists(st.integers(-3, 5), min_size=5, max_size=5),
       seat=st.sampled_from(SEATS), level=st.sampled_from([-1.0, 0.0, 0.3]))
def test_the_weight_follows_the_robot_s_place(dice: list[int], seat: int,
                                              level: float) -> None:
    """Ahead alone: STANDINGS; level with the most: STANDINGS_LEVEL (STANDINGS when
    negative); behind: STANDINGS_BEHIND."""
    with weights(0.5, 0.25, level):
        got = standings_weight(tuple(dice), seat)
    mine, top = dice[seat - 1], max(dice)
    if mine < top:
        assert got == 0.25
    elif dice.count(top) == 1 or level < 0:
        assert got == 0.5
    else:
        assert got == level


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), turns=st.integers(0, 10),
       actual=st.integers(0, 12), quantity=st.integers(1, 12), bidder=st.booleans(),
       leading=st.sampled_from([0.0, 0.5, 1.0]), behind=st.sampled_from([0.25, 0.5]),
       level=st.sampled_from([-1.0, 0.0, 0.75]), exact=st.sampled_from([1.0, 0.0, 0.5]),
       reads=st.sampled_from([0.0, 0.5, 1.0]))
def test_the_outcome_is_the_share_of_first_place(seed: int, turns: int, actual: int,
                                                 quantity: int, bidder: bool,
                                                 leading: float, behind: float,
                                                 level: float, exact: float,
                                                 reads: float) -> None:
    view = postal_view(seed, turns)
    if view is None:
        return
    with weights(leading, behind, level, exact, reads):
        table = Table(view)
        got = table.outcome(actual, quantity, bidder)
    assert table.standings
    me, nxt, prev = view.seat, view.seat % 5 + 1, (view.seat - 2) % 5 + 1
    scores = dict(enumerate(view.virtual_dice, start=1))
    losses = challenge_losses(actual, quantity, me if bidder else prev, nxt if bidder else me,
                              scores, view.rules.exact_rule)
    shift = (share_after(scores, me, losses, view.later)
             - share_after(scores, me, {}, (*view.later, len(view.own.dice)))) / unit()
    plain = outcome_value(actual, quantity, bidder, view.rules.exact_rule, 5)
    top = max(scores.values())
    is_level = scores[me] == top and list(scores.values()).count(top) > 1
    weight = behind if scores[me] < top else level if level >= 0 and is_level else leading
    if is_level:   # towards how much the next seat reads as a reader
        weight *= 1 - reads + reads * max(0.0, 2 * table.reader - 1)
    if bidder and actual == quantity:
        weight *= exact
    assert got == pytest.approx(weight * shift + (1 - weight) * plain)


def test_without_standings_the_outcome_is_the_one_move_robot_s() -> None:
    """A view without virtual dice (classic Bluff) scores as the one-move robot."""
    view = postal_view(3, 4)
    assert view is not None
    with weights(0.0, 0.0):   # off: the one-move robot's scoring in postal too
        assert not Table(view).standings
    with weights(0.5, 0.5):
        table = Table(replace(view, virtual_dice=(), later=()))
    assert not table.standings
    for actual in range(8):
        assert table.outcome(actual, 4, True) == outcome_value(
            actual, 4, True, view.rules.exact_rule, 5)


@pytest.mark.parametrize("preset", ["english", "german", "czech", "anniversary"])
def test_classic_bluff_has_no_standings_to_weigh(preset: str) -> None:
    """Classic Bluff's view carries no virtual dice: its robot scores as before."""
    kind = KINDS["classic"]
    stream = DiceStream(seed_from_number(5))
    state = kind.start(kind.parse_options([preset]), stream, 5)
    seat = next(iter(kind.due(state)))
    view = state.seat_view(seat)
    assert view.virtual_dice == () and not Table(view).standings


def test_the_arena_counts_how_the_mini_games_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/robot_arena.py --endings: the figures ENDED holds, every mini-game once."""
    monkeypatch.syspath_prepend(str(BENCH))
    import robot_arena  # bench/robot_arena.py

    endings: Counter[tuple[int, int]] = Counter()
    robot_arena.run("postal", "strong", "odds", 3, 700_000, endings)
    assert sum(endings.values()) == 3 * 5
    assert {dice for dice, _ in endings} <= set(ENDINGS)
    assert all(sum(n for (d, _), n in endings.items() if d == dice) == 3 for dice in ENDINGS)


def test_the_arena_counts_the_tested_seat_s_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench/robot_arena.py --roles: every mini-game once, by the tested seat's role, and
    its dice lost there are the dice it lost in the game."""
    monkeypatch.syspath_prepend(str(BENCH))
    import robot_arena  # bench/robot_arena.py

    roles: Counter[tuple[str, str]] = Counter()
    result = robot_arena.run("postal", "wary", "strong", 3, 700_000, None, roles)
    outcomes = ("short", "exact", "over")
    assert sum(roles[(r, o)] for r in ("bidder", "caller", "aside") for o in outcomes) == 15
    lost = sum(roles[(r, o + " dice")] for r in ("bidder", "caller", "aside") for o in outcomes)
    assert lost == sum(5 - score for score in result.score)
    assert roles[("bidder", "exact dice")] == 0
    assert "| bidder |" in robot_arena.roles_table(roles, 3)


def test_the_arena_times_the_collector_s_passes(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """bench/robot_arena.py --collector: each pass the collector makes over a line-up is
    timed by generation, a full one (gen 2) too, and it stops listening after."""
    monkeypatch.syspath_prepend(str(BENCH))
    import robot_arena  # bench/robot_arena.py

    collector = robot_arena.Collector()
    gc.callbacks.append(collector)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(collector)
    assert len(collector.passes[2]) == 1 and collector.passes[2][0] >= 0.0
    assert robot_arena.main(["--games", "2", "--collector", "postal:strong:odds"]) == 0
    out = capsys.readouterr().out
    assert "collector passes, CPU ms median / worst: gen 0 " in out
    assert not any(isinstance(c, robot_arena.Collector) for c in gc.callbacks)


def test_two_saved_arena_runs_compare_game_by_game(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    """bench/robot_arena.py --save and bench/robot_paired.py: the same seeds give the
    same games, so a run against itself differs by exactly 0; another seed base is
    paired apart and pooled."""
    monkeypatch.syspath_prepend(str(BENCH))
    import robot_arena  # bench/robot_arena.py
    import robot_paired  # bench/robot_paired.py

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (a, b):
        for base in ("700000", "710000"):
            assert robot_arena.main(["--games", "3", "--seed-base", base, "--save", str(path),
                                     "postal:strong:odds"]) == 0
    runs = robot_paired.load(a)
    assert set(runs) == {("postal:strong:odds", 700_000), ("postal:strong:odds", 710_000)}
    assert all(len(fair) == 3 for fair in runs.values())
    capsys.readouterr()
    assert robot_paired.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| postal:strong:odds | 700000 | 3 |" in out
    assert "| postal:strong:odds | pooled | 6 |" in out
    assert out.count("+0.0 ± 0.0") == 3
    assert robot_paired.paired([0.0, 1.0], [1.0, 1.0])[2] == 0.5
