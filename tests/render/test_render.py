"""Tests of pbem.render.reports and the mail templates in templates/."""

from __future__ import annotations

import copy
import html as htmllib
import re
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.render.environment import packaged_template_dir
from pbem.render.filters import bid, dice, die, face_name, lookup, name_of, pct, plain, utc, wrap
from pbem.render.reports import Renderer, TemplateProblem
from pbem.text.usertext import shown

COMMITMENT = "9f2c" * 16
SEED = "51e5" * 16
SCRIPT = "<script>alert('x')</script>"


# --------------------------------------------------------------------------
# Builders of realistic contexts
# --------------------------------------------------------------------------


def example_view(you: int = 2) -> dict[str, Any]:
    """A view after turn 3 of 5-player postal Bluff, seen by ``you`` (default Bob, seat 2).

    Turn 4 is to be played: in turn t, mini-game k is moved by seat
    ((k + t - 2) mod 5) + 1, so seat 2 moves in mini-game 4.  Mini-game 2
    ended at turn 3 when Dora (seat 4) challenged Carl's 4 fours: 6 fours
    and stars were on the table, so Dora lost 2 virtual dice.
    """
    everyone = {
        # mini-game 2, all dice (the reveal)
        2: {
            "1": [4, "*", 1, 2],
            "2": [4, 4, 5, 3],
            "3": ["*", 2, 4, 1],
            "4": [3, 3, 5, 5],
            "5": [1, 2, 2, 5],
        },
    }
    mine = {
        1: {"hidden": [3, "*", 1, 1], "exposed": [3]},
        2: {"hidden": [4, 4, 5, 3], "exposed": []},
        3: {"hidden": [2, 5, "*"], "exposed": []},
        4: {"hidden": [5, 2], "exposed": []},
        5: {"hidden": [3], "exposed": []},
    }
    empty: dict[str, list[Any]] = {str(s): [] for s in range(1, 6)}
    view: dict[str, Any] = {
        "format": "pbem.bluff.view/1",
        "game": "cup-1",
        "turn": 4,
        "deadline": "2026-12-01T18:00:00Z",
        "you": you,
        "key": "k3y-7f3a9c",
        "to_move": 4,
        "players": [
            {"number": 1, "name": "Ann", "virtual_dice": 5},
            {"number": 2, "name": "Bob", "virtual_dice": 5},
            {"number": 3, "name": "Carl", "virtual_dice": 5},
            {"number": 4, "name": "Dora", "virtual_dice": 3},
            {"number": 5, "name": "Eve", "virtual_dice": 5},
        ],
        "minigames": [
            {
                "number": 1,
                "status": "active",
                "dice_per_player": 5,
                "to_move": 4,
                "your_dice": mine[1],
                "exposed": {**empty, "2": [3]},
                "bids": [
                    {"turn": 1, "player": 1, "quantity": 4, "face": 3},
                    {"turn": 2, "player": 2, "quantity": 5, "face": 3},
                    {"turn": 3, "player": 3, "quantity": 3, "face": "*"},
                ],
                "current_bid": {"quantity": 3, "face": "*"},
                "lowest_raise": {"quantity": 6, "face": 1},
                "challenge": None,
            },
            {
                "number": 2,
                "status": "ended",
                "dice_per_player": 4,
                "to_move": None,
                "your_dice": mine[2],
                "exposed": {**empty, "3": ["*"]},
                "bids": [
                    {"turn": 1, "player": 2, "quantity": 3, "face": 4},
                    {"turn": 2, "player": 3, "quantity": 4, "face": 4},
                ],
                "current_bid": {"quantity": 4, "face": 4},
                "lowest_raise": None,
                "challenge": {
                    "turn": 3,
                    "player": 4,
                    "actual": 6,
                    "losses": {"4": 2},
                    "dice": everyone[2],
                },
            },
            {
                "number": 3,
                "status": "active",
                "dice_per_player": 3,
                "to_move": 1,
                "your_dice": mine[3],
                "exposed": {**empty, "4": ["*"]},
                "bids": [
                    {"turn": 1, "player": 3, "quantity": 2, "face": 2},
                    {"turn": 2, "player": 4, "quantity": 2, "face": "*"},
                    {"turn": 3, "player": 5, "quantity": 5, "face": 1},
                ],
                "current_bid": {"quantity": 5, "face": 1},
                "lowest_raise": {"quantity": 5, "face": 2},
                "challenge": None,
            },
            {
                "number": 4,
                "status": "active",
                "dice_per_player": 2,
                "to_move": 2,
                "your_dice": mine[4],
                "exposed": {**empty, "1": [5]},
                "bids": [
                    {"turn": 1, "player": 4, "quantity": 1, "face": 5},
                    {"turn": 2, "player": 5, "quantity": 2, "face": 5},
                    {"turn": 3, "player": 1, "quantity": 3, "face": 5},
                ],
                "current_bid": {"quantity": 3, "face": 5},
                "lowest_raise": {"quantity": 2, "face": "*"},
                "challenge": None,
            },
            {
                "number": 5,
                "status": "active",
                "dice_per_player": 1,
                "to_move": 3,
                "your_dice": mine[5],
                "exposed": dict(empty),
                "bids": [
                    {"turn": 1, "player": 5, "quantity": 1, "face": 2},
                    {"turn": 2, "player": 1, "quantity": 1, "face": "*"},
                    {"turn": 3, "player": 2, "quantity": 2, "face": 3},
                ],
                "current_bid": {"quantity": 2, "face": 3},
                "lowest_raise": {"quantity": 2, "face": 4},
                "challenge": None,
            },
        ],
        "game_over": False,
    }
    return view


def final_view() -> dict[str, Any]:
    """The same game after its last challenge: every mini-game has ended."""
    view = example_view()
    view["turn"] = 9
    view["to_move"] = None
    view["deadline"] = None
    view["game_over"] = True
    # mini-game: (all dice, turn, actual, challenger, losses)
    reveals = {
        # 6 fours by Dora challenged by Eve: exactly 6, all but Dora lose 1
        1: (
            {
                "1": [3, 1, 4, "*", 2],
                "2": [3, 3, "*", 1, 1],
                "3": ["*", "*", 2, 5, 4],
                "4": [1, 1, 2, 3, 4],
                "5": [5, 5, 3, 2, 2],
            },
            5,
            6,
            5,
            {"1": 1, "2": 1, "3": 1, "5": 1},
        ),
        # 4 stars by Carl challenged by Dora: only 2 stars, Carl loses 2
        3: (
            {"1": [2, 2, 4], "2": [2, 5, "*"], "3": [1, 1, 3], "4": ["*", 4, 4], "5": [1, 5, 3]},
            7,
            2,
            4,
            {"3": 2},
        ),
        # 4 fives by Bob challenged by Carl: 3, Bob loses 1
        4: ({"1": [5, 5], "2": [5, 2], "3": [3, 1], "4": [3, 3], "5": [2, 4]}, 5, 3, 3, {"2": 1}),
        # 2 threes by Bob challenged by Carl: 3, Carl loses 1
        5: ({"1": ["*"], "2": [3], "3": [4], "4": [1], "5": [3]}, 4, 3, 3, {"3": 1}),
    }
    bids_after: dict[int, list[dict[str, Any]]] = {
        1: [{"turn": 4, "player": 4, "quantity": 6, "face": 4}],
        3: [
            {"turn": 4, "player": 1, "quantity": 5, "face": 2},
            {"turn": 5, "player": 2, "quantity": 3, "face": "*"},
            {"turn": 6, "player": 3, "quantity": 4, "face": "*"},
        ],
        4: [{"turn": 4, "player": 2, "quantity": 4, "face": 5}],
        5: [],
    }
    for mg in view["minigames"]:
        k = mg["number"]
        if k == 2:
            continue
        dice_, turn, actual, challenger, losses = reveals[k]
        mg["bids"] = mg["bids"] + bids_after[k]
        last = mg["bids"][-1]
        mg["current_bid"] = {"quantity": last["quantity"], "face": last["face"]}
        mg.update(
            status="ended",
            to_move=None,
            lowest_raise=None,
            challenge={
                "turn": turn,
                "player": challenger,
                "actual": actual,
                "losses": losses,
                "dice": dice_,
            },
        )
    view["players"] = [
        {"number": 1, "name": "Ann", "virtual_dice": 4},
        {"number": 2, "name": "Bob", "virtual_dice": 3},
        {"number": 3, "name": "Carl", "virtual_dice": 1},
        {"number": 4, "name": "Dora", "virtual_dice": 3},
        {"number": 5, "name": "Eve", "virtual_dice": 4},
    ]
    return view


def report_context(view: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    view = example_view() if view is None else view
    ctx: dict[str, Any] = {
        "view": view,
        "server_address": "bluff@pbem.example.org",
        "game_url": "https://pbem.example.org/games/cup-1",
        "private_link": {"url": "https://pbem.example.org/p/7.3.41.1798761600.AAAAAAAAAAAAAAAAAAAAAA",
                         "until": "2026-12-31T12:00:00Z"},
        "notes": ["Player 3 missed the deadline; the robot bid 3 stars for them"],
        "talk": [{"from": "Ann", "text": "Nobody believes Carl's stars, surely?"}],
        "commitment": COMMITMENT,
        "seed": None,
        "record_file": None,
        "odds": {
            1: {"holds": 0.4567, "exact": 0.2012},
            3: {"holds": 0.35, "exact": 0.21},
            4: {"holds": 0.3125, "exact": 0.2188},
            5: {"holds": 0.52, "exact": 0.31},
        },
        "deadline_relative": "in 2 days 3 hours",
        "standings": None,
        "how_to_order": True,
        "bid_charts": [{"title": "3 fours in mini-game 4", "quantity": 3, "rule": "at_least",
                        "question": "How many dice match it in all?",
                        "bars": [[1, 0.05], [2, 0.2], [3, 0.3], [4, 0.25], [5, 0.15],
                                 [6, 0.05]]}],
        "course": None,
        "timezone": None,
    }
    ctx.update(overrides)
    return ctx


def final_context(**overrides: Any) -> dict[str, Any]:
    standings = [
        {"rank": 1, "number": 1, "name": "Ann", "virtual_dice": 4},
        {"rank": 1, "number": 5, "name": "Eve", "virtual_dice": 4},
        {"rank": 3, "number": 2, "name": "Bob", "virtual_dice": 3},
        {"rank": 3, "number": 4, "name": "Dora", "virtual_dice": 3},
        {"rank": 5, "number": 3, "name": "Carl", "virtual_dice": 1},
    ]
    ctx = report_context(
        final_view(),
        seed=SEED,
        record_file="cup-1-record.json",
        standings=standings,
        odds={},
        deadline_relative=None,
        how_to_order=False,
        notes=[],
        talk=[],
        bid_charts=[],
        course={"label": "virtual dice", "turns": list(range(9)),
                "lines": [{"seat": s["number"], "name": s["name"],
                           "values": [5, 5, 5, 4, 4, 4, 4, 4, s["virtual_dice"]]}
                          for s in sorted(standings, key=lambda s: s["number"])]},
    )
    ctx.update(overrides)
    return ctx


def confirm_context(**overrides: Any) -> dict[str, Any]:
    ctx: dict[str, Any] = {
        "game": "cup-1",
        "turn": 4,
        "seat": 2,
        "accepted": [
            {
                "line_no": 3,
                "line": "BID 2 stars",
                "understood": "bid 2 stars in mini-game 4",
                "odds": {"holds": 0.2614, "exact": 0.1802},
            },
            {
                "line_no": 4,
                "line": "EXPOSE 5",
                "understood": "expose your 5 and re-roll your 2",
                "odds": None,
            },
        ],
        "ignored": [
            {"line_no": 1, "line": "Hi all,"},
            {"line_no": 6, "line": "Bob (sent from my phone)"},
        ],
        "left_out": ["the quoted report below your text", "the signature"],
        "replaced": "BID 3 stars",
        "pending": [1, 4, 5],
        "deadline": "2026-12-01T18:00:00Z",
        "timezone": None,
        "grace": False,
        "resolves_now": False,
    }
    ctx.update(overrides)
    return ctx


HELP_LINES = [
    {
        "usage": "BID <quantity> <face>",
        "summary": "Raise the bid in the mini-game you move in: "
        "BID 6 threes, BID 4 stars. The faces are 1 to 5 and the star.",
    },
    {"usage": "CHALLENGE", "summary": "Challenge the current bid: all cups are lifted."},
    {
        "usage": "EXPOSE <face> ...",
        "summary": "With a bid: show these hidden dice and re-roll "
        "the others; at least one die stays hidden.",
    },
    {"usage": "HELP", "summary": "Send this help."},
]
REFEREE_LINES = [
    {"usage": "PAUSE <game>", "summary": "Stop the clock of a game."},
    {"usage": "KICK <game> <seat>", "summary": "Let the robot play a seat from now on."},
]


def error_context(**overrides: Any) -> dict[str, Any]:
    ctx: dict[str, Any] = {
        "problems": [
            {
                "line_no": 3,
                "line": "BID 3 sixes",
                "message": "There is no six in Bluff.",
                "hint": "The faces are 1 to 5 and the star: BID 3 fives or BID 3 stars.",
            },
            {
                "line_no": None,
                "line": None,
                "message": "Your mail has no GAME line.",
                "hint": "Reply to your turn report, or start with GAME and KEY lines.",
            },
        ],
        "game": "cup-1",
        "help_lines": HELP_LINES,
        "closed": None,
    }
    ctx.update(overrides)
    return ctx


def help_context(**overrides: Any) -> dict[str, Any]:
    ctx: dict[str, Any] = {
        "commands": HELP_LINES,
        "referee_commands": REFEREE_LINES,
        "server_address": "bluff@pbem.example.org",
        "kind_note": "The dice show 1 to 5 and a star.",
        "rules_file": "rules.md",
    }
    ctx.update(overrides)
    return ctx


def notice_context(**overrides: Any) -> dict[str, Any]:
    ctx: dict[str, Any] = {
        "subject": "Game cup-1 is paused",
        "paragraphs": [
            (
                "The referee has paused game cup-1 until further notice, because player 4 "
                "asked for a break over the holidays. No deadline runs while the game is paused."
            ),
            "You will get a fresh report with a new deadline when the game goes on.",
        ],
        "game": "cup-1",
    }
    ctx.update(overrides)
    return ctx


CONTEXTS = {
    "postal_report": report_context,
    "confirm": confirm_context,
    "error": error_context,
    "help": help_context,
    "notice": notice_context,
}


SHARED = Renderer()


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return SHARED


def visible_text(html: str) -> str:
    """The HTML with its tags dropped and entities decoded, white space folded (a <wbr>,
    a long hex string's break chance, joins what it stands in)."""
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", html.replace("<wbr>", ""))
                                     ).split())


# --------------------------------------------------------------------------
# Filters
# --------------------------------------------------------------------------


def test_die_pictures() -> None:
    assert [die(f) for f in (1, 2, 3, 4, 5, "*")] == ["⚀", "⚁", "⚂", "⚃", "⚄", "★"]
    assert die("3") == "⚂"
    assert die(6) == "?" and die("x") == "?" and die(True) == "?"
    assert dice([3, "*", 1, 1]) == "⚂ ★ ⚀ ⚀"
    assert dice([]) == "" and dice(None) == ""
    assert plain([3, "*", 1]) == "3 * 1"


def test_face_name_and_bid() -> None:
    assert face_name(1) == "one"
    assert face_name(1, 4) == "ones"
    assert face_name(3, 2) == "threes"
    assert face_name("*") == "star" and face_name("*", 0) == "stars"
    assert bid({"quantity": 4, "face": 3}) == "4 threes"
    assert bid({"quantity": 1, "face": "*"}) == "1 star"
    assert bid({"quantity": 2, "face": "*"}) == "2 stars"
    assert bid({"quantity": 1, "face": 5}) == "1 five"
    assert bid({"quantity": 6, "face": 6}) == "6 6"  # no such face: shown as given
    assert bid(None) == "no bid"


def test_pct() -> None:
    assert pct(0.4567) == "46%"
    assert pct(0) == "0%" and pct(1) == "100%" and pct(0.5) == "50%"
    assert pct(0.001) == "<1%"  # never "0%" for a bid that can still hold
    assert pct(0.999) == ">99%"  # never "100%" for one that can still fail
    assert pct(None) == "?"


def test_utc_wrap_lookup() -> None:
    assert utc("2026-12-01T18:00:00Z") == "2026-12-01 18:00 UTC"
    assert utc("2026-12-01T19:30:00+01:00") == "2026-12-01 18:30 UTC"
    assert utc("soon") == "soon"
    assert utc(None) == ""
    assert wrap("BID  6 threes", 72, "  ", "> ") == "> BID  6 threes"  # fits: kept as typed
    long = " ".join(["word"] * 40)
    lines = wrap(long, 30, "    ", "  * ").split("\n")
    assert lines[0].startswith("  * word") and all(x.startswith("    w") for x in lines[1:])
    assert all(len(x) <= 30 for x in lines)
    assert wrap("first\nsecond", 72, "  ") == "  first\n  second"
    assert lookup({"1": "a"}, 1) == "a" and lookup({1: "b"}, "1") == "b"
    assert lookup({}, 1, []) == [] and lookup(None, 1) is None


# --------------------------------------------------------------------------
# All templates
# --------------------------------------------------------------------------


def test_packaged_templates_found() -> None:
    folder = packaged_template_dir()
    assert folder.name in ("templates", "_templates")
    for name in CONTEXTS:
        assert (folder / f"{name}.txt.j2").is_file()
        assert (folder / f"{name}.html.j2").is_file()


@pytest.mark.parametrize("name", sorted(CONTEXTS))
def test_every_template_renders_72_columns(renderer: Renderer, name: str) -> None:
    text, html = renderer.render(name, CONTEXTS[name]())
    assert text.strip() and html.strip()
    too_long = [line for line in text.splitlines() if len(line) > 72]
    assert too_long == []
    assert "\t" not in text
    assert html.lstrip().startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


@pytest.mark.parametrize("name", sorted(CONTEXTS))
def test_strict_undefined_catches_missing_key(renderer: Renderer, name: str) -> None:
    ctx = CONTEXTS[name]()
    for key in list(ctx):
        broken = dict(ctx)
        del broken[key]
        with pytest.raises(jinja2.UndefinedError):
            renderer.render(name, broken)


def test_strict_undefined_catches_missing_view_field(renderer: Renderer) -> None:
    view = example_view()
    del view["minigames"][0]["current_bid"]
    with pytest.raises(jinja2.UndefinedError):
        renderer.render("postal_report", report_context(view))


def test_unknown_template(renderer: Renderer) -> None:
    with pytest.raises(jinja2.TemplateNotFound):
        renderer.render("no-such-mail", {})


# --------------------------------------------------------------------------
# The turn report
# --------------------------------------------------------------------------


def test_report_text_content(renderer: Renderer) -> None:
    text, _ = renderer.render("postal_report", report_context())
    # the header
    assert "game cup-1, turn 4" in text
    assert "You are player 2 (Bob)." in text
    assert "Deadline: 2026-12-01 18:00 UTC (in 2 days 3 hours)" in text
    assert "Game page: https://pbem.example.org/games/cup-1" in text
    # what to do now
    assert "You move in mini-game 4: raise above 3 fives or CHALLENGE." in text
    assert "The lowest\n  raise is 2 stars." in text or "The lowest raise is 2 stars." in text
    assert "Your dice there: ⚄ ⚁  (5 2)" in text
    # notes and talk
    assert "* Player 3 missed the deadline; the robot bid 3 stars for them" in text
    assert "Ann: Nobody believes Carl's stars, surely?" in text
    # the players table
    assert re.search(r"^  2 +Bob \(you\) +5$", text, re.MULTILINE)
    assert re.search(r"^  4 +Dora +3$", text, re.MULTILINE)
    # your hidden and exposed dice, pictures with values
    assert "hidden  ⚂ ★ ⚀ ⚀  (3 * 1 1)" in text
    assert "exposed ⚂  (3)" in text
    # every player's exposed dice
    assert re.search(r"4 Dora +2 +★  \(\*\)", text)
    assert re.search(r"1 Ann +1 +⚄  \(5\)", text)
    # bid history and current bid, with odds
    assert re.search(r"1 +1 Ann +4 threes", text)
    assert re.search(r"2 +2 you +5 threes", text)
    assert re.search(r"3 +3 Carl +3 stars", text)
    assert "Current bid: 3 stars by player 3 (Carl)" in text
    assert "Current bid: 2 threes by you" in text
    assert "46%" in text and "31%" in text and "22%" in text
    assert "Next to move: player 4 (Dora); lowest raise 6 ones" in text
    assert "Next to move: you; lowest raise 2 stars" in text
    assert "MINI-GAME 4 -- 2 dice each -- running -- YOUR MOVE" in text
    assert "MINI-GAME 5 -- 1 die each -- running" in text
    # fair dice: the commitment, not the seed
    assert COMMITMENT in text and SEED not in text
    assert "pbem verify" not in text
    # how to order
    for order in ("BID 6 threes", "BID 4 stars", "CHALLENGE", "EXPOSE 3 3", "HELP"):
        assert order in text
    assert "    GAME cup-1\n    KEY k3y-7f3a9c" in text
    assert "bluff@pbem.example.org" in text


def test_report_reveal_of_ended_minigame(renderer: Renderer) -> None:
    text, html = renderer.render("postal_report", report_context())
    block = text.split("MINI-GAME 2")[1].split("MINI-GAME 3")[0]
    assert "ENDED at turn 3" in block
    assert "At turn 3 player 4 (Dora) challenged 4 fours, bid by player 3 (Carl)." in block
    # all the dice, with the count of matching dice per player
    assert re.search(r"1 Ann +⚃ ★ ⚀ ⚁  \(4 \* 1 2\) +2$", block, re.MULTILINE)
    assert re.search(r"2 you +⚃ ⚃ ⚄ ⚂  \(4 4 5 3\) +2$", block, re.MULTILINE)
    assert re.search(r"4 Dora +⚂ ⚂ ⚄ ⚄  \(3 3 5 5\) +0$", block, re.MULTILINE)
    assert "Count: 6 fours and stars against a bid of 4 -- 2 over." in block
    assert "Player 4 (Dora) loses 2 virtual dice." in block
    assert "Next to move" not in block and "Your dice:" not in block
    vis = visible_text(html)
    assert "At turn 3 player 4 (Dora) challenged 4 fours , bid by player 3 (Carl)" in vis
    assert "Count: 6 fours and stars against a bid of 4 — 2 over." in vis
    assert "Player 4 (Dora) loses 2 virtual dice." in vis


def test_report_html_content(renderer: Renderer) -> None:
    _, html = renderer.render("postal_report", report_context())
    vis = visible_text(html)
    assert "You are player 2 (Bob) ." in vis
    assert "2026-12-01 18:00 UTC (in 2 days 3 hours)" in vis
    assert "You move in mini-game 4: raise above 3 fives or CHALLENGE." in vis
    # die pictures as styled inline spans, the plain values beside them
    assert re.search(r'<span title="star" style="[^"]*">★</span>', html)
    assert "⚂ ★ ⚀ ⚀ (3 * 1 1)" in vis
    assert "Current bid: 3 stars by player 3 (Carl)" in vis
    assert "Current bid: 2 threes by you" in vis
    assert "Next to move: player 4 (Dora); lowest raise 6 ones" in vis
    assert "1 1 Ann 4 threes 2 2 you 5 threes 3 3 Carl 3 stars" in vis
    assert "46%" in vis and COMMITMENT in vis and SEED not in vis
    assert "GAME cup-1 KEY k3y-7f3a9c" in vis
    assert 'href="https://pbem.example.org/games/cup-1"' in html
    # no external images or scripts
    assert "<img" not in html and "<script" not in html and "src=" not in html


def test_report_final(renderer: Renderer) -> None:
    text, html = renderer.render("postal_report", final_context())
    assert "final report after 8 turns" in text   # the final view says turn 9
    assert "THE GAME IS OVER" in text
    assert "Shared win: Ann, Eve, with 4 virtual dice each." in text
    assert re.search(r"^  1= +1 +Ann +4$", text, re.MULTILINE)
    assert re.search(r"^  1= +5 +Eve +4$", text, re.MULTILINE)
    assert re.search(r"^  5 +3 +Carl +1$", text, re.MULTILINE)
    assert SEED in text and COMMITMENT in text
    assert "    pbem verify cup-1-record.json" in text
    assert "HOW TO ORDER" not in text and "WHAT TO DO NOW" not in text
    assert "Deadline" not in text
    # every mini-game shows its reveal
    assert text.count("Cups up:") == 5
    assert "Count: 6 fours and stars against a bid of 6 -- exact." in text
    assert "Count: 2 stars against a bid of 4 -- short by 2." in text
    assert "You lose 1 virtual die." in text
    assert "Player 3 (Carl) loses 2 virtual dice." in text
    vis = visible_text(html)
    assert "The game is over." in vis and "Shared win: Ann, Eve" in vis
    assert "Final standings" in vis and SEED in vis and "pbem verify cup-1-record.json" in vis
    assert "How to order" not in vis


def test_report_single_winner(renderer: Renderer) -> None:
    ctx = final_context()
    ctx["standings"][1]["rank"] = 2
    text, html = renderer.render("postal_report", ctx)
    assert "Winner: player 1 (Ann) with 4 virtual dice." in text
    assert "Winner: player 1 (Ann) with 4 virtual dice." in visible_text(html)


def test_report_nothing_to_do(renderer: Renderer) -> None:
    view = example_view(you=4)  # turn 4: seat 4 moves in mini-game 2, which has ended
    view["to_move"] = None
    text, html = renderer.render("postal_report", report_context(view))
    assert "Nothing to do this turn" in text
    assert "You are player 4 (Dora)." in text
    assert "Player 4 (Dora) loses" not in text and "You lose 2 virtual dice." in text
    assert "Nothing to do this turn" in visible_text(html)


def test_report_opening_and_forced_challenge(renderer: Renderer) -> None:
    view = example_view()
    mg = view["minigames"][3]
    mg.update(bids=[], current_bid=None, lowest_raise={"quantity": 1, "face": 1})
    text, _ = renderer.render("postal_report", report_context(view, odds={}))
    assert "You open mini-game 4: make the first bid" in text
    assert "Bids:       none yet" in text
    mg.update(
        bids=[{"turn": 3, "player": 1, "quantity": 10, "face": "*"}],
        current_bid={"quantity": 10, "face": "*"},
        lowest_raise=None,
    )
    text, html = renderer.render("postal_report", report_context(view, odds={}))
    assert "10 stars cannot be raised any more, so you must CHALLENGE" in " ".join(text.split())
    assert "Next to move: you; must challenge" in text
    assert "so you must CHALLENGE" in visible_text(html)


def test_report_without_optional_parts(renderer: Renderer) -> None:
    view = example_view()
    view["deadline"] = None
    ctx = report_context(
        view,
        game_url=None,
        notes=[],
        talk=[],
        odds={},
        bid_charts=[],
        commitment=None,
        deadline_relative=None,
        how_to_order=False,
    )
    text, html = renderer.render("postal_report", ctx)
    for absent in ("Deadline", "Game page", "NOTES", "TALK", "FAIR DICE", "HOW TO ORDER", "%"):
        assert absent not in text
    assert "Deadline" not in html and "How to order" not in html


def test_report_odds_keyed_by_string(renderer: Renderer) -> None:
    text, _ = renderer.render("postal_report", report_context(odds={"4": {"holds": 0.77, "exact": 0.1}}))
    assert "77%" in text


def test_report_escapes_names_and_talk(renderer: Renderer) -> None:
    view = example_view()
    view["players"][2]["name"] = SCRIPT
    talk = [{"from": SCRIPT, "text": f"Look: {SCRIPT} & <b>bold</b>"}]
    notes = [f"Player 3 ({SCRIPT}) missed the deadline"]
    text, html = renderer.render("postal_report", report_context(view, talk=talk, notes=notes))
    assert f"{SCRIPT}: Look:" in text
    assert "<script" not in html and "<b>bold" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert "&amp; &lt;b&gt;bold&lt;/b&gt;" in html
    # the text part shows it as typed
    assert f"Look: {SCRIPT} & <b>bold</b>" in " ".join(text.split())
    assert f"Current bid: 3 stars by player 3 ({SCRIPT})" in text
    assert "&lt;" not in text and "&amp;" not in text


@settings(max_examples=40, deadline=None)
@given(name=st.text(min_size=1, max_size=40).filter(lambda s: s.strip()), said=st.text(max_size=80))
def test_any_name_or_talk_is_escaped_in_html(name: str, said: str) -> None:
    view = example_view()
    view["players"][0]["name"] = name
    ctx = report_context(view, talk=[{"from": name, "text": said}])
    _, html = SHARED.render("postal_report", ctx)
    # as typed, but for bidi controls and control characters (pbem.text.usertext)
    assert str(markupsafe.escape(shown(name))) in html
    assert str(markupsafe.escape(shown(said))) in html
    # the markup is exactly that of a harmless name: nothing typed made a tag
    plain_view = example_view()
    plain_view["players"][0]["name"] = "Ann"
    _, baseline = SHARED.render(
        "postal_report", report_context(plain_view, talk=[{"from": "Ann", "text": "hi"}])
    )
    assert re.findall(r"<[^>]*>", html) == re.findall(r"<[^>]*>", baseline)


def test_report_long_names_stay_in_72_columns(renderer: Renderer) -> None:
    view = example_view()
    for p in view["players"]:
        p["name"] = "Maximiliane von Hohenzollern-Sigmaringen " + str(p["number"])
    talk = [{"from": "Ann", "text": "A long message " * 20}]
    text, _ = renderer.render("postal_report", report_context(view, talk=talk))
    assert [x for x in text.splitlines() if len(x) > 72] == []


# --------------------------------------------------------------------------
# confirm, error, help, notice
# --------------------------------------------------------------------------


def test_confirm(renderer: Renderer) -> None:
    text, html = renderer.render("confirm", confirm_context())
    assert "Game cup-1, turn 4: your orders as player 2 are accepted." in text
    assert "> line 3: BID 2 stars" in text
    assert "Understood: bid 2 stars in mini-game 4" in text
    assert "26%" in text and "18%" in text
    assert "> line 4: EXPOSE 5" in text
    assert "> line 1: Hi all," in text and "NOT READ AS ORDERS" in text
    assert "These replace your earlier order: BID 3 stars" in text
    assert "Still waiting for orders from players 1, 4, 5." in text
    assert "Deadline: 2026-12-01 18:00 UTC" in text
    vis = visible_text(html)
    assert "BID 2 stars" in vis and "bid 2 stars in mini-game 4" in vis and "26%" in vis
    assert "Hi all," in vis and "players 1, 4, 5" in vis and "BID 3 stars" in vis


def test_confirm_all_in(renderer: Renderer) -> None:
    ctx = confirm_context(pending=[], replaced=None, ignored=[], deadline=None,
                          resolves_now=True)
    text, html = renderer.render("confirm", ctx)
    assert "Your order completes the turn: it is played now" in " ".join(text.split())
    assert "you may send new orders" not in text      # the turn is played at once
    assert "earlier order" not in text and "NOT READ" not in text and "Deadline" not in text
    assert "Your order completes the turn" in visible_text(html)
    # with WAIT the turn waits for its deadline; during grace the grace end is the deadline
    text, _ = renderer.render("confirm", confirm_context(pending=[], grace=True))
    assert "All orders for this turn are in; the game waits" in " ".join(text.split())
    assert "Grace period ends: 2026-12-01 18:00 UTC" in text
    text, _ = renderer.render("confirm", confirm_context(pending=[3]))
    assert "Still waiting for orders from player 3." in text


def test_error(renderer: Renderer) -> None:
    text, html = renderer.render("error", error_context())
    assert "Game cup-1, your mail: nothing was applied." in text
    assert "> line 3: BID 3 sixes" in text
    assert "  There is no six in Bluff." in text
    assert "Fix: The faces are 1 to 5 and the star" in text
    assert "Your mail has no GAME line." in text
    assert "> line None" not in text
    assert "BID <quantity> <face>" in text and "WHAT YOU MAY ORDER NOW" in text
    assert "HELP (a mail with that one line) for every command" in text
    vis = visible_text(html)
    assert "Game cup-1, your mail: nothing was applied." in vis
    assert "> line 3: BID 3 sixes" in vis
    assert "There is no six in Bluff." in vis and "BID <quantity> <face>" in vis
    assert "&lt;quantity&gt;" in html


def test_error_escapes_quoted_line(renderer: Renderer) -> None:
    problems = [{"line_no": 2, "line": SCRIPT, "message": "Not an order.", "hint": ""}]
    text, html = renderer.render(
        "error", error_context(problems=problems, game=None, help_lines=[])
    )
    assert f"> line 2: {SCRIPT}" in text
    assert "Your mail: nothing was applied." in text and "Fix:" not in text
    assert "WHAT YOU MAY ORDER NOW" not in text
    # a finished game: no "send it again"
    text, _ = renderer.render("error", error_context(closed="over", help_lines=[]))
    assert "Game cup-1 is over: it takes no more orders" in " ".join(text.split())
    assert "send the whole mail again" not in " ".join(text.split())
    assert "<script" not in html and "&gt; line 2: &lt;script&gt;" in html


def test_help(renderer: Renderer) -> None:
    text, html = renderer.render("help", help_context())
    assert "bluff@pbem.example.org" in text
    assert "    GAME <game>\n    KEY <key>" in text
    for c in HELP_LINES + REFEREE_LINES:
        assert c["usage"] in text and c["usage"] in visible_text(html)
    assert "REFEREE COMMANDS" in text and "Referee commands" in html
    text, html = renderer.render("help", help_context(referee_commands=[]))
    assert "REFEREE" not in text and "Referee commands" not in html


def test_notice(renderer: Renderer) -> None:
    text, html = renderer.render("notice", notice_context())
    assert text.startswith("Game cup-1 is paused\n")
    assert "No deadline runs while the game is paused." in " ".join(text.split())
    assert "You will get a fresh report" in text
    vis = visible_text(html)
    assert "Game cup-1 is paused" in vis and "No deadline runs" in vis
    text, html = renderer.render("notice", notice_context(game=None, subject=SCRIPT))
    assert SCRIPT in text and "<script" not in html and "&lt;script&gt;" in html


# --------------------------------------------------------------------------
# Overrides
# --------------------------------------------------------------------------


def test_override_dir_replaces_a_template(tmp_path: Path) -> None:
    (tmp_path / "report.txt.j2").write_text(
        "House style: {{ view.game }} turn {{ view.turn }} for {{ view.you }}\n", encoding="utf-8"
    )
    text, html = Renderer(tmp_path).render("postal_report", report_context())
    assert text == "House style: cup-1 turn 4 for 2\n"
    # the HTML part is not overridden: the packaged one is used
    assert "Mini-game 1" in html
    # other mails are untouched
    text, _ = Renderer(tmp_path).render("help", help_context())
    assert "PLAYER COMMANDS" in text


def test_an_override_under_the_new_name_wins_over_one_under_the_old(tmp_path: Path) -> None:
    """postal's report was report.*.j2 before it was postal_report.*.j2: a referee's override
    under the old name still counts (the test above), the new name first."""
    (tmp_path / "report.txt.j2").write_text("old {{ view.game }}\n", encoding="utf-8")
    (tmp_path / "postal_report.txt.j2").write_text("new {{ view.game }}\n", encoding="utf-8")
    text, _ = Renderer(tmp_path).render("postal_report", report_context())
    assert text == "new cup-1\n"


def test_the_old_name_still_finds_the_packaged_postal_report(renderer: Renderer) -> None:
    """A caller (or an override's extends) asking for report.*.j2 gets postal_report.*.j2."""
    ctx = report_context()
    assert renderer.render("report", ctx) == renderer.render("postal_report", ctx)


def test_override_can_extend_packaged_layout(tmp_path: Path) -> None:
    (tmp_path / "notice.html.j2").write_text(
        '{% extends "_layout.html.j2" %}{% block content %}<h1>Club: {{ subject }}</h1>'
        "{% endblock %}",
        encoding="utf-8",
    )
    _, html = Renderer(tmp_path).render("notice", notice_context(subject="A & B"))
    assert "<h1>Club: A &amp; B</h1>" in html and "</html>" in html


def test_override_missing_dir_falls_back(tmp_path: Path) -> None:
    text, _ = Renderer(tmp_path / "nothing-here").render("help", help_context())
    assert "PLAYER COMMANDS" in text


def test_context_is_not_mutated(renderer: Renderer) -> None:
    ctx = report_context()
    before = copy.deepcopy(ctx)
    renderer.render("postal_report", ctx)
    assert ctx == before


def test_installed_layout_uses_pbem_templates(tmp_path: Path) -> None:
    """In a wheel the templates ship as pbem/_templates; they are found there."""
    import shutil
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    site = tmp_path / "site"
    pkg = site / "pbem"
    # the package as a wheel lays it out, with the templates inside it
    shutil.copytree(repo / "pbem", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(repo / "templates", pkg / "_templates")
    (pkg / "_templates" / "notice.txt.j2").write_text("installed: {{ subject }}\n", "utf-8")
    code = (
        "from pbem.render.environment import packaged_template_dir\n"
        "from pbem.render.reports import Renderer\n"
        "print(packaged_template_dir())\n"
        "print(Renderer().render('notice', {'subject': 'x', 'paragraphs': [], 'game': None})[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0] == str(pkg / "_templates")
    assert out[1] == "installed: x"


def test_name_of_finds_a_player_as_the_templates_loop_did() -> None:
    players = [{"number": 1, "name": "Ann"}, {"number": 3, "name": "Cyd <x>"}]
    assert name_of(players, 3) == "Cyd <x>"      # escaped where it is put, as before
    assert name_of(players, 2) == "" and name_of(players, None) == ""
    assert name_of(players, "3") == ""           # the same equality as `p.number == n`
    assert name_of(None, 1) == ""


# --------------------------------------------------------------------------
# Compiling every template at once (pbem serve, at start)
# --------------------------------------------------------------------------


def test_compile_all_compiles_every_mail_template_and_no_web_page(tmp_path: Path) -> None:
    shipped = {p.name for p in packaged_template_dir().glob("*.j2")}
    (tmp_path / "house.txt.j2").write_text("House {{ view.game }}\n", encoding="utf-8")
    renderer = Renderer(tmp_path)
    assert renderer.compile_all() == len(shipped | {"house.txt.j2"})
    # each is in the environment's cache now: rendering compiles nothing more
    cached = {name for _, name in renderer.env.cache.keys()} if renderer.env.cache else set()
    assert shipped | {"house.txt.j2"} <= cached
    assert not {name for name in cached if name.startswith("web/")}


@pytest.mark.parametrize("source, line", [
    ("Turn {{ view.turn }}\n{% if view.game %}\nno end\n", 3),          # a block left open
    ("Line one\nLine two {{ view.game|no_such_filter }}\n", 2),         # an unknown filter
])
def test_compile_all_names_the_broken_override_and_its_line(tmp_path: Path, source: str,
                                                            line: int) -> None:
    (tmp_path / "report.txt.j2").write_text(source, encoding="utf-8")
    with pytest.raises(TemplateProblem) as caught:
        Renderer(tmp_path).compile_all()
    message = str(caught.value)
    assert "report.txt.j2" in message and f"line {line}" in message, message
