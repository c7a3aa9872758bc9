"""Property tests of pbem.rules (hypothesis)."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pbem.rules import (
    CHALLENGE,
    STAR,
    Bid,
    BidMove,
    ChallengeMove,
    DiceStream,
    Die,
    ExactRule,
    GameRecord,
    IllegalMove,
    Ladder,
    PostalState,
    RecordedMove,
    RuleSet,
    apply_turn,
    commitment,
    is_raise,
    minigame_of,
    mover,
    new_game,
    replay,
    resolve_challenge,
    seed_from_number,
    verify,
)
from pbem.rules.bid_moves import Move
from pbem.rules.dice import FACES
from pbem.rules.postal import BidPlaced, ChallengeResolved, Event
from pbem.rules.postal_record import draw_seats, result_json

SEATS = (1, 2, 3, 4, 5)
FORCE_CHALLENGE_AFTER = 20   # keeps hypothesis-driven games short

rule_sets = st.builds(
    RuleSet,
    super_die=st.booleans(),
    exact_rule=st.sampled_from(list(ExactRule)),
    star_bids=st.booleans(),
    expose=st.booleans(),
    board_cap=st.sampled_from([None, None, 20, 12]),
)


# --------------------------------------------------------------------------
# The ladder
# --------------------------------------------------------------------------


@st.composite
def ladder_and_bids(draw: st.DrawFn, n: int = 3) -> tuple[Ladder, list[Bid]]:
    ladder = Ladder(draw(st.integers(1, 40)), star_bids=draw(st.booleans()),
                    board_cap=draw(st.sampled_from([None, 20])))
    bids = [draw(st.sampled_from(ladder.bids)) for _ in range(n)]
    return ladder, bids


@settings(max_examples=150, deadline=None)
@given(ladder_and_bids())
def test_ladder_is_a_strict_total_order(case: tuple[Ladder, list[Bid]]) -> None:
    ladder, (a, b, c) = case
    assert not is_raise(a, a)                                   # irreflexive
    if a != b:
        assert is_raise(a, b) != is_raise(b, a)                 # total and asymmetric
    else:
        assert not is_raise(a, b) and not is_raise(b, a)
    if is_raise(a, b) and is_raise(b, c):
        assert is_raise(a, c)                                   # transitive
    order = ladder.bids
    assert is_raise(a, b) == (order.index(a) < order.index(b))  # agrees with the track order
    assert ladder.raises(a) == [x for x in order if is_raise(a, x)]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.booleans(), st.sampled_from([None, 20]))
def test_ladder_bids_are_sorted_and_unique(dice: int, stars: bool, cap: int | None) -> None:
    ladder = Ladder(dice, star_bids=stars, board_cap=cap)
    bids = ladder.bids
    assert all(is_raise(x, y) for x, y in itertools.pairwise(bids))
    assert len(set(bids)) == len(bids)
    top = min(dice, cap or dice)
    assert ladder.top == Bid(top, 5)
    assert sum(b.is_star for b in bids) == (top // 2 if stars else 0)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 30), st.sampled_from(FACES), st.integers(1, 30), st.sampled_from(FACES))
def test_raise_rule_in_words(q1: int, f1: int, q2: int, f2: int) -> None:
    """A raise is the same number space with a higher face, or any later space."""
    old, new = Bid(q1, f1), Bid(q2, f2)
    same_space = old.position == new.position
    assert is_raise(old, new) == ((same_space and new.face > old.face)
                                  or new.position > old.position)
    if same_space:
        assert old.is_star == new.is_star   # a star never shares a number space


# --------------------------------------------------------------------------
# Challenges
# --------------------------------------------------------------------------

dice_lists = st.lists(st.builds(Die, st.sampled_from(FACES), st.booleans()), max_size=6)


@settings(max_examples=150, deadline=None)
@given(st.lists(dice_lists, min_size=2, max_size=6), st.integers(1, 20),
       st.sampled_from(FACES), st.data(), st.sampled_from(list(ExactRule)), st.booleans())
def test_challenge_losses_match_the_table(tables: list[list[Die]], quantity: int, face: int,
                                          data: st.DataObject, rule: ExactRule,
                                          at_max: bool) -> None:
    table = {s: tuple(d) for s, d in enumerate(tables, start=1)}
    bidder = data.draw(st.sampled_from(sorted(table)))
    challenger = data.draw(st.sampled_from([s for s in table if s != bidder]))
    bid = Bid(quantity, face)
    result = resolve_challenge(bid, bidder, challenger, table, rule, bidder_at_max=at_max)
    actual = 0
    for dice in table.values():
        for d in dice:
            if d.face == STAR or (not bid.is_star and d.face == bid.face):
                actual += 2 if d.super else 1
    assert result.actual == actual
    if actual < quantity:
        assert result.outcome == "short" and result.losses == {bidder: quantity - actual}
    elif actual > quantity:
        assert result.outcome == "over" and result.losses == {challenger: actual - quantity}
    else:
        assert result.outcome == "exact"
        expected = {
            ExactRule.ALL_BUT_BIDDER: {s: 1 for s in table if s != bidder},
            ExactRule.NOBODY: {},
            ExactRule.CHALLENGER: {challenger: 1},
            ExactRule.EVERYONE: {s: 1 for s in table},
            ExactRule.CHALLENGER_GIVES: ({challenger: 1} if at_max
                                         else {challenger: 1, bidder: -1}),
        }[rule]
        assert result.losses == expected


# --------------------------------------------------------------------------
# Hypothesis-driven postal games
# --------------------------------------------------------------------------


@dataclass
class Played:
    rules: RuleSet
    number: int
    stream: DiceStream
    states: list[PostalState] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    moves: list[RecordedMove] = field(default_factory=list)

    @property
    def final(self) -> PostalState:
        return self.states[-1]


def choose(data: st.DataObject, state: PostalState, seat: int, k: int) -> Move:
    legal = state.legal_moves(k)
    bids = [m.bid for m in legal if isinstance(m, BidMove)]
    can_challenge = legal[-1] == CHALLENGE
    if can_challenge and (not bids or state.turn > FORCE_CHALLENGE_AFTER
                          or data.draw(st.integers(0, 5)) == 0):
        return CHALLENGE
    bid = bids[data.draw(st.integers(0, min(len(bids) - 1, 8)))]
    hidden = [d.face for d in state.minigame(k).cup(seat).hidden]
    if state.rules.expose and len(hidden) > 1 and data.draw(st.booleans()):
        shown = data.draw(st.permutations(hidden))[:data.draw(st.integers(1, len(hidden) - 1))]
        return BidMove(bid, tuple(shown))
    return BidMove(bid)


def play(data: st.DataObject, rules: RuleSet, number: int, *,
         check_each: bool = False) -> Played:
    stream = DiceStream(seed_from_number(number))
    game = Played(rules, number, stream, [new_game(stream, rules)])
    while not game.final.game_over:
        state = game.final
        if check_each:
            check_position(state)
        due = state.due()
        moves = {seat: choose(data, state, seat, k) for seat, k in sorted(due.items())}
        after, events = apply_turn(state, moves, stream)
        for seat, move in sorted(moves.items()):
            dealt = next((e.rerolled for e in events
                          if isinstance(e, BidPlaced) and e.seat == seat), ())
            game.moves.append(RecordedMove(state.turn, seat, due[seat], move, "player", dealt))
        game.states.append(after)
        game.events += events
    return game


def check_position(state: PostalState) -> None:
    """legal_moves: every move is a raise (or the challenge), every raise is there."""
    for k in range(1, 6):
        game = state.minigame(k)
        legal = state.legal_moves(k)
        if game.ended:
            assert legal == []
            continue
        current = game.current_bid
        ladder = state.ladder(k)
        bids = [m.bid for m in legal if isinstance(m, BidMove)]
        assert all(is_raise(current, b) and ladder.on_track(b) for b in bids)
        assert bids == [b for b in ladder.bids if is_raise(current, b)]
        assert (CHALLENGE in legal) == (current is not None)
        assert all(isinstance(m, (BidMove, ChallengeMove)) for m in legal)
        seat = state.mover(k)
        assert seat is not None
        for move in legal[:3] + legal[-3:]:
            assert state.check_move(seat, move) == k
        for below in [b for b in ladder.bids if not is_raise(current, b)][-3:]:
            try:
                state.check_move(seat, BidMove(below))
            except IllegalMove:
                pass
            else:
                raise AssertionError(f"{below} accepted over {current}")


games = st.tuples(rule_sets, st.integers(0, 10**6), st.data())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_legal_moves_are_exactly_the_raises(case: tuple[RuleSet, int, st.DataObject]) -> None:
    rules, number, data = case
    game = play(data, rules, number, check_each=True)
    assert game.final.game_over


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_replay_rebuilds_the_state(case: tuple[RuleSet, int, st.DataObject]) -> None:
    rules, number, data = case
    game = play(data, rules, number)
    stream = DiceStream(seed_from_number(number))   # a fresh stream: no hidden state
    assert replay(rules, stream, game.moves) == game.final
    t = data.draw(st.integers(1, len(game.states)))
    assert replay(rules, stream, game.moves, upto_turn=t) == game.states[t - 1]
    shuffled = data.draw(st.permutations(game.moves))   # the order of the list does not matter
    assert replay(rules, stream, shuffled) == game.final


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_virtual_dice_are_five_minus_the_losses(case: tuple[RuleSet, int, st.DataObject]
                                                ) -> None:
    rules, number, data = case
    game = play(data, rules, number)
    lost = {s: 0 for s in SEATS}
    resolved = [e for e in game.events if isinstance(e, ChallengeResolved)]
    assert sorted(e.minigame for e in resolved) == [1, 2, 3, 4, 5]   # one challenge each
    for e in resolved:
        for seat, n in e.result.losses.items():
            lost[seat] += n
    assert game.final.virtual_dice == tuple(5 - lost[s] for s in SEATS)
    assert max(game.final.virtual_dice) <= 5   # "challenger gives" stops at five


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_schedule_in_played_games(case: tuple[RuleSet, int, st.DataObject]) -> None:
    rules, number, data = case
    game = play(data, rules, number)
    for state in game.states:
        due = state.due()
        running = [g.number for g in state.minigames if not g.ended]
        assert sorted(due.values()) == running
        assert all(minigame_of(s, state.turn) == k for s, k in due.items())
        if len(running) == 5:
            assert sorted(due) == list(SEATS)
    for move in game.moves:
        assert move.minigame == minigame_of(move.seat, move.turn)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 10**6))
def test_schedule_gives_each_player_one_mini_game_per_turn(turn: int) -> None:
    assert sorted(mover(k, turn) for k in range(1, 6)) == list(SEATS)
    assert sorted(minigame_of(s, turn) for s in SEATS) == [1, 2, 3, 4, 5]
    for k in range(1, 6):
        assert minigame_of(mover(k, turn), turn) == k
        assert mover(k, turn) == (k + turn - 2) % 5 + 1
        assert mover(k, turn + 1) == mover(k, turn) % 5 + 1   # play goes round the table
    for s in SEATS:
        assert mover(minigame_of(s, turn), turn) == s


# --------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------


def honest_record(game: Played) -> GameRecord:
    seed = seed_from_number(game.number)
    names = ["Ann", "Bob", "Carl", "Dora", "Eve"]
    return GameRecord(game=f"prop-{game.number}", rules=game.rules,
                      commitment=commitment(seed), entrants=names,
                      seats=draw_seats(DiceStream(seed), len(names)), moves=list(game.moves),
                      seed=seed.hex(), result=result_json(game.final))


expose_rule_sets = rule_sets.map(lambda r: r.with_options(expose=True))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expose_rule_sets, st.integers(0, 10**6), st.data())
def test_verify_passes_honest_and_fails_tampered_records(rules: RuleSet, number: int,
                                                         data: st.DataObject) -> None:
    game = play(data, rules, number)
    record = honest_record(game)
    assert verify(record) == []
    assert verify(GameRecord.from_json(record.to_json())) == []

    def tampered(change: str) -> GameRecord | None:
        bad = copy.deepcopy(record)
        moves = bad.moves
        if change == "move":
            i = data.draw(st.integers(0, len(moves) - 1))
            m = moves[i]
            if isinstance(m.move, ChallengeMove):
                # the challenge turned into a bid: the lowest raise if any, else any bid
                before = replay(rules, game.stream, moves, upto_turn=m.turn)
                lowest = before.ladder(m.minigame).lowest_raise(
                    before.minigame(m.minigame).current_bid)
                moves[i] = RecordedMove(m.turn, m.seat, m.minigame,
                                        BidMove(lowest or Bid(1, 1)), m.by)
            else:
                moves[i] = RecordedMove(m.turn, m.seat, m.minigame, CHALLENGE, m.by)
        elif change == "mini-game":
            i = data.draw(st.integers(0, len(moves) - 1))
            m = moves[i]
            moves[i] = RecordedMove(m.turn, m.seat, m.minigame % 5 + 1, m.move, m.by,
                                    m.rerolled)
        elif change == "re-roll":
            exposes = [i for i, m in enumerate(moves) if m.rerolled]
            if not exposes:
                return None
            i = data.draw(st.sampled_from(exposes))
            m = moves[i]
            j = data.draw(st.integers(0, len(m.rerolled) - 1))
            faces = list(m.rerolled)
            faces[j] = data.draw(st.sampled_from([f for f in FACES if f != faces[j]]))
            moves[i] = RecordedMove(m.turn, m.seat, m.minigame, m.move, m.by, tuple(faces))
        elif change == "duplicate":
            # a second, different move for a seat in a turn (the last one listed wins a replay)
            i = data.draw(st.integers(0, len(moves) - 1))
            m = moves[i]
            other = BidMove(Bid(1, 1)) if isinstance(m.move, ChallengeMove) else CHALLENGE
            moves.insert(i, RecordedMove(m.turn, m.seat, m.minigame, other, m.by))
        elif change == "stray re-roll":
            plain = [i for i, m in enumerate(moves) if not m.rerolled]
            if not plain:
                return None
            i = data.draw(st.sampled_from(plain))
            m = moves[i]
            moves[i] = RecordedMove(m.turn, m.seat, m.minigame, m.move, m.by, (1,))
        elif change == "seed":
            bad.seed = seed_from_number(number + 1).hex()
        elif change == "seats":
            i, j = data.draw(st.permutations(range(5)))[:2]
            bad.seats[i], bad.seats[j] = bad.seats[j], bad.seats[i]
        elif change == "result":
            assert bad.result is not None
            seat = data.draw(st.sampled_from(["1", "2", "3", "4", "5"]))
            bad.result["virtual_dice"][seat] += data.draw(st.sampled_from([-2, -1, 1, 3]))
        return bad

    for change in ("move", "mini-game", "re-roll", "duplicate", "stray re-roll", "seed",
                   "seats", "result"):
        bad = tampered(change)
        if bad is not None:
            assert bad != record
            assert verify(bad) != [], change
