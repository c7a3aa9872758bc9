"""The classic Bluff game kind (pbem.kinds.classic): options, orders, a whole game, views, report."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

import jinja2
import pytest

from pbem.kinds.classic import CLASSIC
from pbem.kinds.classic_options import SIX_KEY
from pbem.mail.text import BodyLine
from pbem.orders.commands import PLAYER_COMMANDS, Order
from pbem.orders.parsing import parse_text
from pbem.render.reports import Renderer
from pbem.rules import (
    CHALLENGE,
    STAR,
    Bid,
    BidMove,
    Cup,
    DiceStream,
    Die,
    ExactRule,
    RulesError,
    RuleSet,
    seed_from_number,
)
from pbem.rules.classic import ClassicState, Hand
from pbem.text.errors import Refusal

SEED = seed_from_number(77)
NAMES = ["Alice", "Bob", "Carol <c&d>", "Dan", "Eve", "Fay"]


def orders(*lines: str) -> list[Order]:
    parsed = parse_text([BodyLine(i + 1, t) for i, t in enumerate(lines)], PLAYER_COMMANDS)
    assert parsed.problems == []
    return parsed.orders


def start(words: tuple[str, ...] = (), players: int = 3) -> tuple[ClassicState, DiceStream]:
    stream = DiceStream(SEED)
    return CLASSIC.start(CLASSIC.parse_options(list(words)), stream, players), stream


def table(state: ClassicState, *faces: tuple[int, ...]) -> ClassicState:
    """Give every seat a hand-made cup of plain dice."""
    return replace(state, hands=tuple(Hand(len(f)) for f in faces),
                   cups=tuple(Cup(tuple(Die(x) for x in f)) for f in faces))


# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


def rules_of(*words: str) -> RuleSet:
    return RuleSet.from_json(CLASSIC.parse_options(list(words)))


def test_default_and_editions() -> None:
    assert CLASSIC.parse_options([]) == {**RuleSet().to_json(), SIX_KEY: None}
    assert rules_of("english") == RuleSet(expose=True)
    assert rules_of("GERMAN") == RuleSet(exact_rule=ExactRule.CHALLENGER, expose=False)
    assert rules_of("anniversary") == RuleSet(super_die=True, expose=False)
    czech = CLASSIC.parse_options(["czech"])
    assert czech["dice_per_player"] == 6 and czech[SIX_KEY] == 5 and czech["expose"] is False
    json.dumps(czech)


def test_options_on_top_of_an_edition() -> None:
    assert rules_of("german", "EXACT", "everyone").exact_rule is ExactRule.EVERYONE
    assert rules_of("anniversary", "expose", "on").expose is True
    assert rules_of("DICE", "4", "SUPER", "on", "STARS", "off") == RuleSet(
        dice_per_player=4, super_die=True, star_bids=False)
    assert rules_of("BOARD", "20").board_cap == 20 and rules_of("board", "off").board_cap is None
    assert rules_of("EXACT", "challenger-gives").exact_rule is ExactRule.CHALLENGER_GIVES
    # an explicit dice count replaces the Czech "5 with six players"
    assert CLASSIC.parse_options(["czech", "DICE", "4"])[SIX_KEY] is None


@pytest.mark.parametrize(("words", "message"), [
    (["fast"], "unknown option 'fast'"),
    (["DICE"], "DICE needs a value"),
    (["DICE", "many"], "DICE takes a number"),
    (["DICE", "11"], "DICE 11"),
    (["SUPER", "maybe"], "SUPER is on or off"),
    (["EXACT", "sometimes"], "EXACT sometimes"),
    (["DICE", "4", "german"], "name the edition (german) first"),
    (["english", "czech"], "name the edition (czech) first"),
])
def test_bad_options(words: list[str], message: str) -> None:
    with pytest.raises(Refusal) as caught:
        CLASSIC.parse_options(words)
    assert message in caught.value.message
    assert "english, german, czech, anniversary" in caught.value.hint and "EXPOSE" in caught.value.hint


def test_czech_deals_five_dice_with_six_players() -> None:
    assert start(("czech",), 5)[0].hands == (Hand(6),) * 5
    six, _ = start(("czech",), 6)
    assert six.hands == (Hand(5),) * 6 and six.rules.dice_per_player == 5
    assert "6 dice each (5 with six players)" in CLASSIC.describe_rules(
        CLASSIC.parse_options(["czech"]))


def test_describe_rules() -> None:
    text = CLASSIC.describe_rules(CLASSIC.parse_options(["anniversary"]))
    assert text == ("classic Bluff, Anniversary edition: 5 dice each, one of them the super die that counts twice; "
                    "exact bid: all but the bidder lose 1; star bids on; expose and re-roll off")


def test_kind_shape() -> None:
    assert (CLASSIC.name, CLASSIC.title, CLASSIC.min_players, CLASSIC.max_players) == (
        "classic", "classic Bluff", 2, 6)
    assert CLASSIC.report_template == "classic_report"
    by_name = {c.name: c for c in PLAYER_COMMANDS}
    assert all(c is by_name[c.name] for c in CLASSIC.commands)
    assert [c.name for c in CLASSIC.commands] == ["BID", "CHALLENGE", "EXPOSE"]


# --------------------------------------------------------------------------
# Orders
# --------------------------------------------------------------------------


def test_take_bid_with_exposes_that_add_up() -> None:
    state, _ = start()
    state = table(state, (3, 3, 1, 2, 3), (5, 5, 5, 5, 5), (1, 1, 1, 1, 1))
    taken = CLASSIC.take_order(state, 1, orders("BID 3 threes", "EXPOSE 3", "EXPOSE 3 3"))
    assert taken.move == BidMove(Bid(3, 3), (3, 3, 3))
    assert taken.summary == "BID 3 threes, EXPOSE 3 3 3 in round 1"
    assert [u.understood for u in taken.lines] == [
        "BID 3 threes in round 1", "expose 3, re-roll the rest", "expose 3 3, re-roll the rest"]
    odds = taken.lines[0].odds
    assert odds is not None and odds["holds"] == 1.0 and 0 < odds["exact"] < 1
    assert taken.lines[1].odds is None


def test_take_challenge() -> None:
    state, stream = start()
    state = CLASSIC.apply(state, {1: BidMove(Bid(2, 4))}, stream).state
    taken = CLASSIC.take_order(state, 2, orders("cups up"))
    assert taken.move == CHALLENGE
    assert taken.lines[0].understood == "CHALLENGE 2 fours (bid by player 1) in round 1"


@pytest.mark.parametrize(("seat", "lines", "message", "quoted"), [
    (1, ("I think so",), "I found no order", None),
    (1, ("EXPOSE 3",), "EXPOSE goes with a BID", "EXPOSE 3"),
    (1, ("BID 2 threes", "BID 3 threes"), "one move a turn", "BID 3 threes"),
    (1, ("CHALLENGE",), "you must BID", "CHALLENGE"),
    (2, ("BID 2 threes",), "player 1's move", "BID 2 threes"),
    (1, ("BID 99 threes",), "off the board", "BID 99 threes"),
    (1, ("BID 2 threes", "EXPOSE 4"), "cannot expose 1 x 4", "EXPOSE 4"),
    (1, ("BID 2 threes", "EXPOSE 3 3 1 2 3"), "at least one must stay hidden", "EXPOSE 3 3 1 2 3"),
])
def test_refused_orders_quote_the_line(seat: int, lines: tuple[str, ...], message: str,
                                       quoted: str | None) -> None:
    state, _ = start()
    state = table(state, (3, 3, 1, 2, 3), (5, 5, 5, 5, 5), (1, 1, 1, 1, 1))
    with pytest.raises(Refusal) as caught:
        CLASSIC.take_order(state, seat, orders(*lines))
    assert message in caught.value.message
    assert caught.value.problems[0].line == quoted   # the line quoted (None: the mail)


def test_expose_refused_when_the_rule_is_off() -> None:
    state, _ = start(("german",))
    with pytest.raises(Refusal, match="exposing dice is off") as caught:
        CLASSIC.take_order(state, 1, orders("BID 1 two", f"EXPOSE {state.cup(1).hidden[0].face}"))
    quoted = caught.value.problems[0]
    assert quoted.line_no == 2 and quoted.line is not None and quoted.line.startswith("EXPOSE")


def test_standing_orders() -> None:
    state, stream = start()
    assert CLASSIC.standing_move(state, 1, "CHALLENGE") is None   # nothing to challenge yet
    assert CLASSIC.standing_move(state, 1, "RAISE") == BidMove(Bid(1, 1))
    assert CLASSIC.standing_move(state, 2, "RAISE") is None       # not player 2's move
    state = CLASSIC.apply(state, {1: BidMove(Bid(7, 5))}, stream).state
    assert CLASSIC.standing_move(state, 2, "CHALLENGE") == CHALLENGE
    assert CLASSIC.standing_move(state, 2, "RAISE") == BidMove(Bid(4, STAR))
    top = CLASSIC.apply(state, {2: BidMove(state.ladder.top)}, stream).state
    assert CLASSIC.standing_move(top, 3, "RAISE") == CHALLENGE   # the only move left


def test_apply_refuses_a_seat_that_is_not_due() -> None:
    state, stream = start()
    with pytest.raises(RulesError):
        CLASSIC.apply(state, {2: BidMove(Bid(1, 1))}, stream)
    with pytest.raises(ValueError):
        CLASSIC.apply(state, {}, stream)
    with pytest.raises(RulesError):
        CLASSIC.check(state, 2, BidMove(Bid(1, 1)))


# --------------------------------------------------------------------------
# A whole game through the adapter only
# --------------------------------------------------------------------------


def robot_game(words: tuple[str, ...], players: int, seed: int
               ) -> tuple[Any, list[Any], list[str]]:
    stream, rng = DiceStream(seed_from_number(seed)), random.Random(seed)
    state = CLASSIC.start(CLASSIC.parse_options(list(words)), stream, players)
    moves: list[tuple[int, Any]] = []
    notes: list[str] = []
    while not CLASSIC.over(state):
        assert len(moves) < 3000
        due = CLASSIC.due(state)
        assert len(due) == 1
        (seat,) = due
        move = CLASSIC.robot_move(state, seat, rng)
        CLASSIC.check(state, seat, move)
        data = json.loads(json.dumps(CLASSIC.move_to_json(move)))
        assert CLASSIC.move_from_json(data) == move
        resolution = CLASSIC.apply(state, {seat: move}, stream)
        state, notes = resolution.state, notes + resolution.notes
        moves.append((seat, move))
    return state, moves, notes


@pytest.mark.parametrize(("words", "players", "seed"), [
    ((), 2, 1), (("anniversary", "EXPOSE", "on"), 4, 2), (("czech",), 6, 3),
    (("german", "EXACT", "challenger-gives"), 3, 4), (("EXACT", "everyone", "STARS", "off"), 5, 5),
])
def test_robots_play_a_whole_game(words: tuple[str, ...], players: int, seed: int) -> None:
    state, moves, notes = robot_game(words, players, seed)
    standings = CLASSIC.standings(state)
    assert [s["seat"] for s in standings if s["rank"] == 1] == [state.winner]
    assert sorted(s["seat"] for s in standings) == list(range(1, players + 1))
    assert CLASSIC.due(state) == {}
    assert notes[-1] == f"Player {state.winner} wins: the last player with dice."
    history = CLASSIC.history(state)
    assert len(history) == len(moves) + sum(len(e.out) for e in state.finished)
    view = CLASSIC.view(state, None)
    assert view["game_over"] and view["winner"] == state.winner and view["standings"]
    json.dumps(view)


# --------------------------------------------------------------------------
# Views
# --------------------------------------------------------------------------


def test_view_hides_other_players_dice() -> None:
    state, stream = start(("EXPOSE", "on"))
    state = table(state, (3, 3, 1, 2, 3), (5, 4, 5, 4, 5), (1, 2, 1, 2, 1))
    state = CLASSIC.apply(state, {1: BidMove(Bid(3, 3), (3, 3))}, stream).state
    mine = CLASSIC.view(state, 2)
    assert mine["your_dice"]["hidden"] == [5, 4, 5, 4, 5]
    assert mine["players"][0]["exposed"] == [3, 3] and mine["players"][0]["hidden"] == 3
    assert mine["current_bid"] == {"quantity": 3, "face": 3} and mine["bidder"] == 1
    assert mine["to_move"] == 2 and mine["odds"] is not None
    hidden_of_1 = [d.face for d in state.cup(1).hidden]
    public = CLASSIC.view(state, None)
    assert public["your_dice"] is None and public["odds"] is None
    text = json.dumps(public)
    assert "[5, 4, 5, 4, 5]" not in text and "[1, 2, 1, 2, 1]" not in text
    assert str(hidden_of_1) not in json.dumps(CLASSIC.view(state, 3)["players"])
    # after the challenge every cup of the round is shown
    state = CLASSIC.apply(state, {2: CHALLENGE}, stream).state
    reveal = CLASSIC.view(state, None)["last_round"]
    assert reveal["cups"][1] == {"seat": 2, "dice": [5, 4, 5, 4, 5], "super": None, "counted": 0}
    assert reveal["actual"] == sum(c["counted"] for c in reveal["cups"])
    assert CLASSIC.history(state)[0] == "Round 1: player 1 bid 3 threes, exposing 3 3"


# --------------------------------------------------------------------------
# The report templates
# --------------------------------------------------------------------------


def context(state: ClassicState, you: int | None, notes: list[str]) -> dict[str, Any]:
    standings = None
    if CLASSIC.over(state):
        standings = [dict(s, name=NAMES[s["seat"] - 1]) for s in CLASSIC.standings(state)]
    return {"view": CLASSIC.view(state, you), "game": "tavern", "turn": 12, "you": you,
            "players": [{"number": i + 1, "name": NAMES[i]} for i in range(state.players)],
            "key": "k3y-9", "deadline": "2026-12-01T18:00:00Z", "deadline_relative": "in 2 days",
            "notes": notes, "talk": [{"from": "Bob (player 2)", "text": "cups <up>!"}],
            "your_due": CLASSIC.due(state).get(you) if you is not None else None,
            "standings": standings, "server_address": "bluff@example.org",
            "commitment": "ab" * 32, "seed": "cd" * 32 if CLASSIC.over(state) else None,
            "game_url": None, "private_link": None,
            "bid_charts": (CLASSIC.bid_charts(state, you)
                           if you is not None and not CLASSIC.over(state) else []),
            "course": None, "timezone": None,
            "record_file": "table-1-record.json" if CLASSIC.over(state) else None}


def positions() -> list[tuple[ClassicState, list[str]]]:
    stream, rng = DiceStream(SEED), random.Random(5)
    state = CLASSIC.start(CLASSIC.parse_options(["anniversary", "EXPOSE", "on"]), stream, 4)
    seen: list[tuple[ClassicState, list[str]]] = [(state, [])]
    while not CLASSIC.over(state):
        (seat,) = CLASSIC.due(state)
        result = CLASSIC.apply(state, {seat: CLASSIC.robot_move(state, seat, rng)}, stream)
        state = result.state
        seen.append((state, result.notes))
    return seen[::7] + [seen[-1]]


def test_reports_render_for_players_and_observers() -> None:
    renderer = Renderer(None)
    for state, notes in positions():
        for you in (None, *state.seats):
            text, html = renderer.render("classic_report", context(state, you, notes))
            assert [line for line in text.splitlines() if len(line) > 72] == []
            assert html.lstrip().startswith("<!DOCTYPE html>")
            assert "Carol <c&d>" in text and "Carol &lt;c&amp;d&gt;" in html
            assert "cups &lt;up&gt;!" in html
            if you is not None and state.to_move == you:
                assert "You must" in text and "KEY k3y-9" in text


def test_report_content() -> None:
    seen = positions()
    running = next(s for s, _ in seen if s.finished and not s.game_over and s.to_move)
    you = running.to_move
    assert you is not None
    text, _ = Renderer(None).render("classic_report", context(running, you, ["a note"]))
    assert f"You must {CLASSIC.due(running)[you]}." in " ".join(text.split())
    on_table = sum(h.count for h in running.hands)   # a super die is one die, worth two
    worth = f" (worth {running.dice_in_play})" if on_table != running.dice_in_play else ""
    assert f"ROUND {running.round} -- {on_table} dice in play{worth} --" in text
    assert f"ROUND {running.round - 1} -- CUPS UP" in text and "Cups up:" in text
    assert "Orange" in text and "* a note" in text and "GAME tavern" in text
    final, notes = seen[-1]
    text, html = Renderer(None).render("classic_report", context(final, None, notes))
    assert "THE GAME IS OVER" in text and "FINAL STANDINGS" in text and "cd" * 32 in text
    assert "You must" not in text and "HOW TO ORDER" not in text and "Final standings" in html


def test_report_needs_every_key() -> None:
    state, notes = positions()[1]
    ctx = context(state, state.to_move, notes)
    for key in ctx:
        broken = dict(ctx)
        del broken[key]
        with pytest.raises(jinja2.UndefinedError):
            Renderer(None).render("classic_report", broken)
