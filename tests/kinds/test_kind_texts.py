"""Every text a kind shows comes from that kind: Cup of Bluff's standing orders, HELP note
and player hints are its own, and a Guesser may be named (ANNOUNCE 5 TO Finn)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.commands.context import with_seats
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.commands import SeatByName
from pbem.orders.parsing import parse_text
from pbem.rules.cupofbluff import Announce, Steal
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.text.errors import Refusal

CUP = KINDS["cup"]
NAMES = {1: "Ann", 2: "Finn Olsen", 3: "Fay"}


def read(line: str):  # type: ignore[no-untyped-def]
    parsed = parse_text([BodyLine(1, line)], CUP.commands)
    assert parsed.problems == [], parsed.problems
    return parsed.orders


@pytest.mark.parametrize(("line", "move"), [
    ("ANNOUNCE 5 TO Finn Olsen", Announce(5, 2)),
    ("announce five to finn olsen!", Announce(5, 2)),
    ("ANNOUNCE 5 TO Finn", Announce(5, 2)),          # a unique start of a name
    ("ANNOUNCE 5 TO Ann", Announce(5, 1)),
    ("STEAL 15 FROM Fay.", Steal(15, 3)),
    ("ANNOUNCE 5 TO 3", Announce(5, 3)),
])
def test_a_guesser_by_name_or_number(line: str, move: object) -> None:
    (order,) = with_seats(read(line), NAMES, "cup-1")
    assert order.args == move


def test_a_name_that_fits_no_one_or_two_is_refused_with_the_players() -> None:
    with pytest.raises(Refusal) as caught:
        with_seats(read("ANNOUNCE 5 TO Bob"), NAMES, "cup-1")
    problem = caught.value.problems[0]
    assert "no player of game cup-1 is called Bob" in problem.message
    assert "1 Ann, 2 Finn Olsen, 3 Fay" in problem.hint and problem.line_no == 1
    with pytest.raises(Refusal):                       # "F" starts Finn and Fay
        with_seats(read("ANNOUNCE 5 TO F"), NAMES, "cup-1")
    assert SeatByName("Fi", Announce.__call__).seat_for(NAMES) == 2


def test_cup_texts_are_cup_texts() -> None:
    assert "star" not in CUP.help_note and "tokens" in CUP.help_note
    assert "RAISE" not in CUP.standing_orders and "BLUFF" in CUP.standing_orders["CHALLENGE"]
    assert "bid" not in " ".join(map(str, CUP.standing_orders.values()))
    for name in ("postal", "classic"):
        assert "star" in KINDS[name].help_note
        assert "bid" in KINDS[name].standing_orders["CHALLENGE"]
    (announce,) = [c for c in CUP.commands if c.name == "ANNOUNCE"]
    assert "name" in announce.usage
    problems = parse_text([BodyLine(1, "ANNOUNCE 5 TO 9")], CUP.commands).problems
    assert "1 to 5" not in problems[0].hint and "name" in problems[0].hint


# --- the notes of a move speak to their reader ------------------------------------------


def mentions(line: str, seat: int) -> bool:
    return re.search(rf"\bplayer {seat}\b", line, re.IGNORECASE) is not None


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["postal", "classic", "cup"]), seed=st.integers(0, 10_000),
       players=st.integers(2, 6))
def test_each_player_reads_you_for_their_own_seat(kind: str, seed: int, players: int) -> None:
    """Every move's notes, as told to seat s, say "you" where the public notes say "player
    s", and are the public notes word for word in every line that does not name s."""
    game = KINDS[kind]
    players = 5 if kind == "postal" else max(game.min_players, min(players, game.max_players))
    stream, rng = DiceStream(seed_from_number(seed)), random.Random(seed)
    state = game.start(game.parse_options([]), stream, players)
    told_you = 0
    for _ in range(60 if kind == "postal" else 150):
        if game.over(state):
            break
        moves = {s: game.robot_move(state, s, rng) for s in game.due(state)}
        resolution = game.apply(state, moves, stream)
        assert set(resolution.seat_notes) == set(range(1, players + 1))
        for seat, lines in resolution.seat_notes.items():
            assert len(lines) == len(resolution.notes)
            for public, mine in zip(resolution.notes, lines, strict=True):
                assert not mentions(mine, seat), mine
                if mentions(public, seat):
                    assert re.search(r"\byou\b", mine, re.IGNORECASE), (public, mine)
                    told_you += 1
                else:
                    assert mine == public
        state = resolution.state
    assert told_you > 0
