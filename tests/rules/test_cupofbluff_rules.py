"""Tests of pbem.rules.cupofbluff (docs/rules.md section 5): examples and properties."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.rules.cupofbluff import (
    ACT,
    ANSWER,
    GIVE,
    OVER,
    TOKENS,
    TOTAL_ODDS,
    Announce,
    Answer,
    Claim,
    Claimed,
    CupState,
    Doublet,
    DoubletMade,
    GameEnded,
    Give,
    Given,
    Move,
    Revealed,
    Rolled,
    Steal,
    apply_move,
    has_double,
    move_from_json,
    new_game,
    points,
    replay,
    roll_label,
)
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.rules.errors import IllegalMove, MalformedMove
from pbem.rules.robot_cup import robot_move

STREAM = DiceStream(seed_from_number(61))


def position(*, players: int = 4, bluffer: int = 1, roll: Sequence[int] = (3, 4, 5),
             holdings: dict[int, Sequence[int]] | None = None, phase: str = ACT,
             claim: Claim | None = None, centre: Sequence[int] | None = None) -> CupState:
    """A hand-made position; the centre is every token nobody holds unless given."""
    held = {s: tuple(sorted((holdings or {}).get(s, ()))) for s in range(1, players + 1)}
    rest = tuple(t for t in TOKENS if all(t not in h for h in held.values()))
    return CupState(players, tuple(centre) if centre is not None else rest,
                    tuple(held[s] for s in range(1, players + 1)), bluffer, 1, phase,
                    tuple(roll), claim)


def play(state: CupState, *moves: tuple[int, Move]) -> CupState:
    for seat, move in moves:
        state, _ = apply_move(state, seat, move, STREAM)
    return state


def conserved(state: CupState) -> bool:
    return sorted(state.centre + sum(state.holdings, ())) == list(TOKENS)


# --- the table and the start ------------------------------------------------


# The points table is written out here on purpose, from docs/rules.md section 5, and not taken
# from pbem.rules.cupofbluff: the test checks the code's table against the rules, which a
# shared table could not do.
@pytest.mark.parametrize("token, value", [
    (3, 5), (18, 5), (4, 4), (17, 4), (5, 3), (6, 3), (15, 3), (16, 3),
    (7, 2), (8, 2), (13, 2), (14, 2), (9, 1), (10, 1), (11, 1), (12, 1)])
def test_points_table(token: int, value: int) -> None:
    assert points(token) == value


def test_totals_of_three_dice() -> None:
    assert sum(points(t) for t in TOKENS) == 42
    assert TOTAL_ODDS[3] == pytest.approx(1 / 216)
    assert TOTAL_ODDS[10] == pytest.approx(27 / 216)
    assert sum(TOTAL_ODDS.values()) == pytest.approx(1.0)


def test_new_game() -> None:
    state = new_game(STREAM, 3)
    assert state.centre == TOKENS and state.holdings == ((), (), ())
    assert state.bluffer == 1 and state.phase == ACT and list(state.due()) == [1]
    assert state.roll == STREAM.dice(roll_label(1), 3)
    assert all(1 <= d <= 6 for d in state.roll)
    for bad in (2, 6):
        with pytest.raises(ValueError):
            new_game(STREAM, bad)


# --- announce ---------------------------------------------------------------


@pytest.mark.parametrize("total, ok, winner", [
    (12, True, 2),    # true and believed: the Guesser was right
    (9, True, 1),     # a lie believed: the Bluffer fooled them
    (9, False, 2),    # a lie called: the Guesser was right
    (12, False, 1),   # the truth called a bluff: the Bluffer was right
])
def test_announce_outcomes(total: int, ok: bool, winner: int) -> None:
    state = position(roll=(3, 4, 5))
    state, events = apply_move(state, 1, Announce(total, 2), STREAM)
    assert state.phase == ANSWER and state.due().keys() == {2}
    assert events == [Claimed(1, 1, "announce", total, 2)]
    state, events = apply_move(state, 2, Answer(ok), STREAM)
    assert state.tokens(winner) == (total,) and total not in state.centre
    record = state.log[-1]
    assert (record.winner, record.roll, record.truthful) == (winner, (3, 4, 5), total == 12)
    assert isinstance(events[0], Revealed) and events[0].record == record
    assert events[-1] == Rolled(2, 2, STREAM.dice(roll_label(2), 3))
    assert state.bluffer == 2 and state.number == 2 and state.phase == ACT


def test_a_bluff_is_legal_when_the_true_total_is_gone() -> None:
    state = position(roll=(6, 6, 6), holdings={3: [18]})
    with pytest.raises(IllegalMove, match="token 18 is not in the centre"):
        state.check_move(1, Announce(18, 2))
    state.check_move(1, Announce(10, 3))


def test_announce_refusals() -> None:
    state = position(centre=(3, 4, 12), holdings={2: [5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16,
                                                      17, 18]})
    with pytest.raises(IllegalMove, match=r"token 9 is not in the centre; the centre holds "
                                          r"3, 4, 12$"):
        state.check_move(1, Announce(9, 2))
    with pytest.raises(IllegalMove, match="3 to 18"):
        state.check_move(1, Announce(19, 2))
    with pytest.raises(IllegalMove, match="another player"):
        state.check_move(1, Announce(12, 1))
    with pytest.raises(IllegalMove, match=r"no player 5 \(players 1 to 4\)"):
        state.check_move(1, Announce(12, 5))


# --- steal ------------------------------------------------------------------


@pytest.mark.parametrize("roll, ok, fooled", [
    ((4, 4, 4), True, False), ((1, 2, 3), True, True),
    ((1, 2, 3), False, False), ((4, 4, 4), False, True)])
def test_steal_outcomes(roll: tuple[int, ...], ok: bool, fooled: bool) -> None:
    state = position(roll=roll, holdings={1: [3, 9], 2: [12, 15]})
    state = play(state, (1, Steal(12, 2)), (2, Answer(ok)))
    if fooled:
        assert state.tokens(1) == (3, 9, 12) and state.tokens(2) == (15,)
        assert state.bluffer == 2
        return
    # not fooled: the Guesser keeps 12 and the Bluffer chooses a gift
    assert state.phase == GIVE and state.due().keys() == {1}
    assert state.tokens(2) == (12, 15)
    with pytest.raises(IllegalMove, match="you do not own token 12; you hold 3, 9"):
        state.check_move(1, Give(12))
    state, events = apply_move(state, 1, Give(9), STREAM)
    assert state.tokens(1) == (3,) and state.tokens(2) == (9, 12, 15)
    assert events[0] == Given(1, 1, 2, 9) and state.log[-1].given == 9
    assert state.bluffer == 2 and state.phase == ACT


def test_failed_steal_with_one_token_gives_it_at_once() -> None:
    state = position(roll=(1, 2, 3), holdings={1: [17], 3: [6]})
    # the roll shows 6: "OK" on the truth, the Guesser was right
    state, events = apply_move(play(state, (1, Steal(6, 3))), 3, Answer(True), STREAM)
    assert state.tokens(1) == () and state.tokens(3) == (6, 17)
    assert [type(e) for e in events] == [Revealed, Given, Rolled]
    assert state.bluffer == 2 and state.log[-1].given == 17


def test_steal_refusals() -> None:
    state = position(holdings={2: [12]})
    with pytest.raises(IllegalMove, match="you have none yet"):
        state.check_move(1, Steal(12, 2))
    state = position(holdings={1: [5], 2: [12]})
    with pytest.raises(IllegalMove, match="player 3 owns no token"):
        state.check_move(1, Steal(12, 3))
    with pytest.raises(IllegalMove, match="player 2 does not own token 11; they hold 12"):
        state.check_move(1, Steal(11, 2))
    with pytest.raises(IllegalMove, match="another player"):
        state.check_move(1, Steal(5, 1))


# --- doublet ----------------------------------------------------------------


def test_doublet_rulebook_example() -> None:
    state = position(roll=(2, 2, 5), holdings={1: [8, 13], 2: [3]})
    state, events = apply_move(state, 1, Doublet(4, (8, 13)), STREAM)
    assert state.tokens(1) == (4,) and {8, 13} <= set(state.centre) and 4 not in state.centre
    assert isinstance(events[0], DoubletMade) and events[0].record.returned == (8, 13)
    assert state.bluffer == 2 and conserved(state)


def test_doublet_refusals() -> None:
    state = position(roll=(1, 2, 3), holdings={1: [8, 13]})
    with pytest.raises(IllegalMove, match="no double"):
        state.check_move(1, Doublet(4, (8, 13)))
    state = position(roll=(6, 6, 6), holdings={1: [8]})
    with pytest.raises(IllegalMove, match="at least 2 tokens"):
        state.check_move(1, Doublet(9, (8,)))
    state = position(roll=(5, 1, 5), holdings={1: [8, 13, 9], 2: [4]})
    with pytest.raises(IllegalMove, match="token 4 is not in the centre"):
        state.check_move(1, Doublet(4, (8, 13)))
    with pytest.raises(IllegalMove, match="worth 3 points but token 3 is worth 5"):
        state.check_move(1, Doublet(3, (8, 9)))
    with pytest.raises(IllegalMove, match="at least two different"):
        state.check_move(1, Doublet(7, (9, 9)))
    with pytest.raises(IllegalMove, match="you do not own token 10"):
        state.check_move(1, Doublet(7, (9, 10)))
    assert has_double((5, 1, 5)) and has_double((2, 2, 2)) and not has_double((1, 2, 3))


def test_no_doublet_when_no_centre_token_matches() -> None:
    # 5 + 5 points exceed every token: nothing in the centre matches
    state = position(roll=(4, 4, 1), holdings={1: [3, 18]})
    assert not any(isinstance(m, Doublet) for m in state.legal_moves())
    with pytest.raises(IllegalMove, match="must be equal"):
        state.check_move(1, Doublet(4, (3, 18)))


# --- turn order, the end, standings -----------------------------------------


def test_only_the_due_seat_moves_and_in_its_phase() -> None:
    state = position()
    with pytest.raises(IllegalMove, match="not your move: player 1, the Bluffer"):
        state.check_move(2, Answer(True))
    with pytest.raises(IllegalMove, match="you are the Bluffer"):
        state.check_move(1, Answer(True))
    state = play(state, (1, Announce(10, 3)))
    with pytest.raises(IllegalMove, match="player 3 is to answer the claim of 10"):
        state.check_move(1, Announce(11, 2))
    with pytest.raises(IllegalMove, match="OK or BLUFF"):
        state.check_move(3, Give(4))


def test_bluffer_passes_clockwise() -> None:
    state = position(players=3, bluffer=3, roll=(1, 1, 1))
    state = play(state, (3, Announce(3, 1)), (1, Answer(True)))
    assert state.bluffer == 1 and state.tokens(1) == (3,)


def test_the_last_centre_token_ends_the_game() -> None:
    held = {1: [3, 4, 5, 6, 7], 2: [8, 9, 10, 11, 12], 3: [13, 14, 15, 16, 17]}
    state = position(players=3, roll=(6, 6, 6), holdings=held)
    assert state.centre == (18,)
    state, events = apply_move(play(state, (1, Announce(18, 2))), 2, Answer(False), STREAM)
    assert state.phase == OVER and state.game_over and state.due() == {}
    assert state.tokens(1)[-1] == 18 and state.centre == ()
    assert isinstance(events[-1], GameEnded) and events[-1].standings == state.standings()
    with pytest.raises(IllegalMove, match="game is over"):
        state.check_move(2, Announce(3, 1))


def test_standings_ties_go_to_fewer_tokens_then_share() -> None:
    # seat 1: 5 points in 1 token; seat 2: 5 points in 2; seat 3: 5 in 1; seat 4: 1 point
    state = position(holdings={1: [3], 2: [7, 15], 3: [18], 4: [9]})
    ranks = [(s.rank, s.seat, s.points, s.tokens) for s in state.standings()]
    assert ranks == [(1, 1, 5, 1), (1, 3, 5, 1), (3, 2, 5, 2), (4, 4, 1, 1)]


def test_moves_as_json() -> None:
    for move in (Announce(12, 3), Steal(5, 2), Doublet(4, (8, 13)), Answer(False), Give(9)):
        assert move_from_json(move.to_json()) == move
    for bad in ({"move": "dance"}, {"move": "give"}, {"move": "answer", "ok": 1},
                {"move": "announce", "total": "12", "guesser": 2},
                {"move": "doublet", "take": 4, "give": 8}):
        with pytest.raises(MalformedMove):
            move_from_json(bad)


# --- robot ------------------------------------------------------------------


def test_robot_tells_the_truth_when_it_can_and_bluffs_otherwise() -> None:
    rng = random.Random(1)
    move = robot_move(position(roll=(3, 4, 5)), 1, rng)
    assert isinstance(move, Announce) and move.total == 12 and move.guesser != 1
    state = position(roll=(3, 4, 5), holdings={2: [12]})
    move = robot_move(state, 1, rng)
    assert isinstance(move, Announce) and move.total in state.centre and move.total != 12
    state = position(roll=(1, 1, 1), holdings={1: [9], 2: [3]})
    assert robot_move(state, 1, rng) == Steal(3, 2)
    state = position(roll=(1, 1, 1), holdings={1: [9, 10, 11, 12], 2: [3]})
    move = robot_move(state, 1, rng)   # four 1-point tokens for a 4-point one
    assert isinstance(move, Doublet) and move.give == (9, 10, 11, 12) and move.take in (4, 17)
    state = position(holdings={1: [3, 12, 9]}, phase=GIVE, claim=Claim("steal", 5, 2, False))
    assert robot_move(state, 1, rng) == Give(9)
    state = position(phase=ANSWER, claim=Claim("announce", 10, 2))
    assert isinstance(robot_move(state, 2, rng), Answer)
    with pytest.raises(IllegalMove):
        robot_move(state, 1, rng)


def test_robot_guesser_believes_likely_totals_more() -> None:
    rng = random.Random(7)
    said_ok = {t: 0 for t in (3, 10)}
    for total in said_ok:
        state = position(phase=ANSWER, claim=Claim("announce", total, 2))
        said_ok[total] = sum(robot_move(state, 2, rng) == Answer(True) for _ in range(400))
    assert said_ok[10] > 4 * said_ok[3]


# --- properties -------------------------------------------------------------


def random_move(state: CupState, rng: random.Random) -> Move:
    """Uniform over the legal moves of a kind, the kinds weighted toward announcing."""
    moves = state.legal_moves()
    kinds: dict[type, list[Move]] = {}
    for m in moves:
        kinds.setdefault(type(m), []).append(m)
    weight = {Announce: 6, Steal: 2, Doublet: 1}
    kind = rng.choices(list(kinds), weights=[weight.get(k, 1) for k in kinds])[0]
    return rng.choice(kinds[kind])


def play_out(seed: int, players: int, robot: bool) -> tuple[CupState, list[tuple[int, Move]]]:
    stream, rng = DiceStream(seed_from_number(seed)), random.Random(seed)
    state = new_game(stream, players)
    moves: list[tuple[int, Move]] = []
    while not state.game_over:
        assert len(moves) < 3000, "the game did not end"
        due = state.due()
        assert len(due) == 1 and conserved(state)
        seat = next(iter(due))
        move = robot_move(state, seat, rng) if robot else random_move(state, rng)
        for other in set(state.seats) - {seat}:     # only the due seat may move
            with pytest.raises(IllegalMove):
                apply_move(state, other, move, stream)
        before = state
        state, events = apply_move(state, seat, move, stream)
        moves.append((seat, move))
        for e in events:
            if isinstance(e, Rolled):   # a finished turn: the Bluffer role moves clockwise
                assert e.bluffer == before.bluffer % players + 1 == state.bluffer
                assert e.number == before.number + 1 and e.roll == state.roll
    assert conserved(state) and state.centre == () and state.due() == {}
    return state, moves


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), players=st.integers(3, 5), robot=st.booleans())
def test_random_legal_play_ends_and_conserves_tokens(seed: int, players: int,
                                                     robot: bool) -> None:
    state, _ = play_out(seed, players, robot)
    assert [r.bluffer for r in state.log] == [
        (n - 1) % players + 1 for n in range(1, len(state.log) + 1)]
    ranks = state.standings()
    assert ranks[0].rank == 1 and sorted(s.seat for s in ranks) == list(state.seats)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), players=st.integers(3, 5))
def test_replay_gives_the_same_state(seed: int, players: int) -> None:
    state, moves = play_out(seed, players, robot=False)
    again = replay(DiceStream(seed_from_number(seed)), players, moves)
    assert again == state
    as_json = [(s, move_from_json(m.to_json())) for s, m in moves]
    assert replay(DiceStream(seed_from_number(seed)), players, as_json) == state
