"""Tests of pbem.kinds.cup: orders, the adapter, views, history and the report templates."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from pbem.kinds.base import GameKind
from pbem.kinds.cup import CUP
from pbem.mail.text import BodyLine
from pbem.orders.commands import PLAYER_COMMANDS
from pbem.orders.parsing import parse_text
from pbem.render.reports import Renderer
from pbem.rules.cupofbluff import (
    ANSWER,
    GIVE,
    TOKENS,
    Announce,
    Answer,
    Claim,
    CupState,
    Doublet,
    Give,
    Steal,
)
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.rules.errors import IllegalMove
from pbem.text.errors import Refusal

GENERIC = tuple(c for c in PLAYER_COMMANDS if c.name not in ("BID", "CHALLENGE", "EXPOSE"))
NAMES = ["Ann", "Bob", "Carl", "Dora", "Eve"]


def parse(*lines: str) -> Any:
    return parse_text([BodyLine(i, t) for i, t in enumerate(lines, 1)], CUP.commands + GENERIC)


def position(*, roll: tuple[int, ...] = (3, 4, 5), holdings: dict[int, list[int]] | None = None,
             phase: str = "act", claim: Claim | None = None, bluffer: int = 1) -> CupState:
    held = tuple(tuple(sorted((holdings or {}).get(s, ()))) for s in range(1, 5))
    centre = tuple(t for t in TOKENS if all(t not in h for h in held))
    return CupState(4, centre, held, bluffer, 1, phase, roll, claim)


# --- the order lines --------------------------------------------------------


@pytest.mark.parametrize("line, move", [
    ("ANNOUNCE 12 TO 3", Announce(12, 3)),
    ("announce twelve to player 3.", Announce(12, 3)),
    ("Announce 18 TO P2", Announce(18, 2)),
    ("STEAL 15 FROM 2", Steal(15, 2)),
    ("steal 15 from player 4!", Steal(15, 4)),
    ("DOUBLET TAKE 4 GIVE 8 13", Doublet(4, (8, 13))),
    ("doublet take 3 give 8, 13,9", Doublet(3, (8, 13, 9))),
    ("- DOUBLET TAKE 4 GIVE 8 and 13", Doublet(4, (8, 13))),
    ("OK", Answer(True)), ("OK!", Answer(True)), ("okay", Answer(True)),
    ("BLUFF", Answer(False)), ("Bluff you!", Answer(False)), ("bluff!", Answer(False)),
    ("GIVE 9", Give(9)),
])
def test_good_order_lines(line: str, move: Any) -> None:
    parsed = parse(line)
    assert not parsed.problems and [o.args for o in parsed.orders] == [move]


@pytest.mark.parametrize("line, message", [
    ("ANNOUNCE 19 TO 3", "'19' is not a token or total"),
    ("ANNOUNCE 12 3", "'TO' is missing"),
    ("ANNOUNCE 12 TO 7", "'7' is not a player number"),
    ("ANNOUNCE 12 TO 3x", "'3x' is not a player number"),   # a name is found by the shell
    ("ANNOUNCE 12 13 TO 2", "expected one token or total"),
    ("STEAL 15", "'FROM' is missing"),
    ("DOUBLET 4 GIVE 8 13", "'TAKE' is missing"),
    ("DOUBLET TAKE 4 GIVE", "name the tokens you give back"),
    ("DOUBLET TAKE 4 GIVE 8 two", "'two' is not a token"),
    ("OK maybe", "takes nothing after it"),
    ("GIVE 9 10", "expected one token"),
    ("ANOUNCE 12 TO 3", "'ANOUNCE' is not an order"),
])
def test_bad_order_lines(line: str, message: str) -> None:
    parsed = parse(line)
    assert not parsed.orders and len(parsed.problems) == 1
    problem = parsed.problems[0]
    assert message in problem.message and problem.hint and problem.line == line


def test_prose_and_generic_orders_are_kept_apart() -> None:
    parsed = parse("Hello all,", "GAME cup-3", "KEY abc", "ANNOUNCE 9 TO 2", "cheers")
    assert [o.name for o in parsed.orders] == ["GAME", "KEY", "ANNOUNCE"]
    assert [p.text for p in parsed.prose] == ["Hello all,", "cheers"]


def test_command_names_do_not_clash() -> None:
    ours = {s for c in CUP.commands for s in c.spellings}
    theirs = {s for c in PLAYER_COMMANDS for s in c.spellings}
    assert not ours & theirs
    assert {c.name for c in CUP.commands} == {"ANNOUNCE", "STEAL", "DOUBLET", "OK", "BLUFF",
                                               "GIVE"}


def test_the_kind_has_every_member_of_the_protocol() -> None:
    wanted = {n for n in dir(GameKind) if not n.startswith("_")}
    wanted |= set(GameKind.__annotations__)
    assert not {n for n in wanted if not hasattr(CUP, n)}
    assert (CUP.name, CUP.title, CUP.min_players, CUP.max_players, CUP.report_template) == (
        "cup", "Cup of Bluff", 3, 5, "cup_report")


def test_options() -> None:
    assert CUP.parse_options([]) == {"version": 1}
    with pytest.raises(Refusal, match="no options yet, so 'fast'"):
        CUP.parse_options(["fast"])
    assert "Cup of Bluff" in CUP.describe_rules({"version": 1})
    with pytest.raises(ValueError):
        CUP.start({"version": 99}, DiceStream(seed_from_number(1)), 3)


# --- take_order -------------------------------------------------------------


def test_take_order_accepts_one_legal_move() -> None:
    state = position()
    parsed = parse("GAME cup-1", "Announce 12 to player 3")
    taken = CUP.take_order(state, 1, parsed.orders)
    assert taken.move == Announce(12, 3) and taken.summary == "ANNOUNCE 12 TO player 3"
    assert [u.order.line_no for u in taken.lines] == [2]


@pytest.mark.parametrize("seat, lines, message, line_no", [
    (1, ["GAME cup-1"], "no move in your mail", None),
    (1, ["ANNOUNCE 12 TO 3", "STEAL 9 FROM 2"], "one move a mail", 2),
    (1, ["ANNOUNCE 9 TO 3"], "token 9 is not in the centre; the centre holds", 1),
    (1, ["OK"], "you are the Bluffer", 1),
    (2, ["OK"], "it is not your move: player 1, the Bluffer", 1),
    (1, ["STEAL 9 FROM 2"], "you have none yet", 1),
    (1, ["DOUBLET TAKE 4 GIVE 8 13"], "no double", 1),
])
def test_take_order_refusals(seat: int, lines: list[str], message: str,
                             line_no: int | None) -> None:
    state = position(holdings={2: [9]})
    with pytest.raises(Refusal) as info:
        CUP.take_order(state, seat, parse(*lines).orders)
    assert message in info.value.message and info.value.hint
    assert info.value.problems[0].line_no == line_no   # the line quoted (None: the mail)


def test_standing_orders() -> None:
    state = position(phase=ANSWER, claim=Claim("announce", 10, 3))
    assert CUP.standing_move(state, 3, "CHALLENGE") == Answer(False)
    assert CUP.standing_move(state, 3, "RAISE") is None
    assert CUP.standing_move(position(), 1, "CHALLENGE") is None


def test_describe_and_json() -> None:
    for move, text in [(Announce(12, 3), "ANNOUNCE 12 TO player 3"),
                       (Steal(5, 2), "STEAL token 5 FROM player 2"),
                       (Doublet(4, (8, 13)), "DOUBLET: take token 4, give back 8, 13"),
                       (Answer(True), "OK (you believe the claim)"),
                       (Answer(False), "BLUFF (you do not believe it)"), (Give(9), "GIVE token 9")]:
        assert CUP.describe_move(move) == text
        assert CUP.move_from_json(json.loads(json.dumps(CUP.move_to_json(move)))) == move


# --- a whole game through the adapter -----------------------------------------


def play_game(seed: int, players: int) -> list[tuple[Any, list[str]]]:
    """(state, notes) after every resolution, from the adapter's methods only."""
    stream, rng = DiceStream(seed_from_number(seed)), random.Random(seed)
    state = CUP.start(CUP.parse_options([]), stream, players)
    out: list[tuple[Any, list[str]]] = [(state, [])]
    while not CUP.over(state):
        due = CUP.due(state)
        assert len(due) == 1 and len(out) < 2000
        seat = next(iter(due))
        move = CUP.move_from_json(CUP.move_to_json(CUP.robot_move(state, seat, rng)))
        CUP.check(state, seat, move)
        resolution = CUP.apply(state, {seat: move}, stream)
        state = resolution.state
        for s, dice in resolution.extras.items():   # a new roll, recorded for its Bluffer
            assert s == state.bluffer and tuple(dice) == state.roll
        out.append((state, resolution.notes))
    return out


@pytest.mark.parametrize("seed, players", [(1, 3), (2, 4), (3, 5)])
def test_a_robot_game_to_the_end(seed: int, players: int) -> None:
    states = play_game(seed, players)
    final = states[-1][0]
    assert CUP.due(final) == {} and final.centre == ()
    standings = CUP.standings(final)
    assert sorted(s["seat"] for s in standings) == list(range(1, players + 1))
    assert standings[0]["rank"] == 1
    assert sum(s["score"] for s in standings) == 42
    history = CUP.history(final)
    assert len(history) >= len(final.log) * 1 and history[0].startswith("Round 1:")
    assert "the game is over" in states[-1][1][-1]
    with pytest.raises(IllegalMove):
        CUP.apply(states[-2][0], {99: Answer(True)}, DiceStream(seed_from_number(seed)))


def test_views_hide_the_roll_from_everyone_but_the_bluffer() -> None:
    for state, notes in play_game(4, 4):
        for seat in (None, 1, 2, 3, 4):
            view = CUP.view(state, seat)
            json.dumps(view)
            mine = seat == state.bluffer and not state.game_over
            assert view["your_roll"] == (list(state.roll) if mine else None)
            assert view["shown_roll"] == (list(state.roll) if state.phase == GIVE else None)
        # every roll in the public texts is of a finished round (or a failed steal's)
        shown = sum("the dice show" in line or "shows a doublet" in line
                    for line in CUP.history(state))
        assert shown == len(state.log) + (state.phase == GIVE)
        if state.phase == ANSWER:   # the claim is out, the dice are not
            assert not any("dice" in n for n in notes)
        assert CUP.view(state, None)["can_doublet"] is False


def test_history_is_public_and_one_line_per_move() -> None:
    state = position(roll=(1, 2, 3), holdings={1: [3, 9], 2: [12, 15]})
    stream = DiceStream(seed_from_number(5))
    state = CUP.apply(state, {1: Steal(12, 2)}, stream).state
    assert CUP.history(state) == [
        "Round 1: player 1 tries to steal token 12 from player 2, claiming a total of 12."]
    state = CUP.apply(state, {2: Answer(False)}, stream).state   # a lie called: Guesser right
    assert state.phase == GIVE
    assert CUP.history(state)[-1] == (
        "Player 2 says BLUFF; the dice show 1 2 3 = 6, a bluff: player 2 was right, keeps "
        "token 12 and gets a token from player 1.")
    resolution = CUP.apply(state, {1: Give(9)}, stream)
    assert resolution.notes[0] == "Player 1 gives token 9 to player 2."
    assert len(CUP.history(resolution.state)) == 3


# --- the report templates ---------------------------------------------------


def context(state: CupState, seat: int | None, **extra: Any) -> dict[str, Any]:
    players = [{"number": s, "name": NAMES[s - 1]} for s in state.seats]
    standings = None
    if CUP.over(state):
        standings = [dict(s, name=NAMES[s["seat"] - 1]) for s in CUP.standings(state)]
    ctx = {"view": CUP.view(state, seat), "game": "cup-7", "turn": 9, "you": seat,
           "players": players, "key": "k3y" if seat else None,
           "deadline": "2026-12-01T18:00:00Z", "deadline_relative": "in 2 days",
           "notes": ["Round 2: player 2 is the Bluffer."],
           "talk": [{"from": "Ann (player 1)", "text": "Good luck <all>"}],
           "your_due": CUP.due(state).get(seat) if seat else None, "standings": standings,
           "server_address": "bluff@pbem.example.org", "commitment": "ab" * 32,
           "seed": "cd" * 32 if standings else None, "game_url": None, "private_link": None,
           "bid_charts": CUP.bid_charts(state, seat) if seat and not standings else [],
           "course": None, "timezone": None,
           **CUP.report_extras(state, seat),
           "record_file": "cup-7-record.json" if standings else None}
    ctx.update(extra)
    return ctx


def test_reports_render_for_every_seat_and_phase() -> None:
    renderer = Renderer(None)
    states = [s for s, _ in play_game(6, 5)]
    phases = {s.phase: s for s in states}
    phases.setdefault(GIVE, position(roll=(1, 2, 3), holdings={1: [3, 9], 2: [12]}, phase=GIVE,
                                     claim=Claim("steal", 12, 2, False)))
    for state in phases.values():
        for seat in (None, *state.seats):
            text, html = renderer.render("cup_report", context(state, seat))
            assert all(len(line) <= 72 for line in text.splitlines()), text
            assert "Good luck &lt;all&gt;" in html and "<all>" not in html
            if seat != state.bluffer or state.game_over:
                assert "Your dice" not in text and "Your dice" not in html


def test_report_content() -> None:
    renderer = Renderer(None)
    state = position(roll=(2, 2, 5), holdings={1: [8, 13], 2: [3]})
    text, html = renderer.render("cup_report", context(state, 1))
    assert "You are the Bluffer: ANNOUNCE a total" in text
    assert re.search(r"Your dice \(secret\): \S+ \S+ \S+  \(2 2 5 = 9\)", text)
    assert "DOUBLET" in text and "KEY k3y" in text and "(2 2 5 = 9)" in html
    guess = position(phase=ANSWER, claim=Claim("announce", 10, 3))
    text, _ = renderer.render("cup_report", context(guess, 3))
    assert "answer OK or BLUFF" in text and "total of 10 with three dice is 12%" in text
    final = position(holdings={1: [3], 2: [18], 3: list(range(4, 18))})
    final = CupState(4, (), final.holdings, 1, 30, "over", ())
    text, html = renderer.render("cup_report", context(final, 2))
    assert "THE GAME IS OVER" in text and "Winner: player 3 (Carl)" in text
    assert "HOW TO ORDER" not in text and "cd" * 32 in text and "Final standings" in html
