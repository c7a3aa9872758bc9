"""One plural rule (pbem.text.wording) for mail, pages and answers, and user text made safe to
show among the server's own words (pbem.text.usertext): no "1 fours", no "(s)", no Python list,
no right-to-left override or ESC from a name reaching a mail."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pbem.kinds.classic import CLASSIC
from pbem.kinds.cup import CUP
from pbem.kinds.postal import POSTAL
from pbem.render.reports import Renderer
from pbem.text.usertext import shown
from pbem.text.wording import listing, ngettext, plural
from tests.render.test_render import notice_context, report_context

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
PACKAGE = Path(__file__).resolve().parents[2] / "pbem"


def test_plural_takes_gettexts_argument_order() -> None:
    assert ngettext("die", "dice", 1) == "die"
    assert [plural("{n} die", "{n} dice", n) for n in (0, 1, 2, -1)] == [
        "0 dice", "1 die", "2 dice", "-1 dice"]
    assert listing([]) == "nobody" and listing([3]) == "3"
    assert listing([1, 2, 4]) == "1, 2 and 4"


@given(st.integers())
def test_only_exactly_one_is_singular(n: int) -> None:
    said = plural("{n} point", "{n} points", n)
    assert said == f"{n} point" + ("" if n == 1 else "s")


def test_scores_in_words_agree_with_their_count() -> None:
    assert CUP.score_words({"score": 1, "tokens": 1}) == "1 point, 1 token"
    assert CUP.score_words({"score": 2, "tokens": 0}) == "2 points, 0 tokens"
    assert CLASSIC.score_words({"score": 1, "dice": 1}) == "1 die left"
    assert POSTAL.score_words({"score": 1}) == "1 virtual die"


def test_a_count_of_one_is_singular_in_the_report() -> None:
    ctx = report_context()
    minigame = next(m for m in ctx["view"]["minigames"] if m.get("challenge"))
    minigame["challenge"]["actual"] = 1
    text, html = Renderer().render("postal_report", ctx)
    assert "Count: 1 four or star against a bid of 4 -- short by 3." in text
    assert "1 fours" not in text and "1 fours" not in re.sub(r"<[^>]+>", "", html)


# "player(s) waiting", "setting(s) {names}", "report(s)": not a call like ``who(s) for``
BRACKETED_S = re.compile(r"[a-z]\(s\)(?: (?!(?:for|if|else|and|or|in|is|not)\b)[a-z{]|[\"'])")


def test_no_template_or_module_says_s_in_brackets() -> None:
    """The class of "player(s)": every count says its own number."""
    offenders = [str(p) for p in [*TEMPLATES.rglob("*.j2"), *PACKAGE.rglob("*.py")]
                 if BRACKETED_S.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


# --- bidi overrides and control characters -----------------------------------------------

TRICKY = "Eve\u202egnp.exe\x1b[2J\x9b\u2066x\u2069"


def test_shown_drops_bidi_controls_and_control_characters() -> None:
    assert shown(TRICKY) == "Evegnp.exe[2Jx"
    assert shown("line one\n\tline two") == "line one\n\tline two"
    assert shown("\u05e9\u05dc\u05d5\u05dd Ann") == "\u05e9\u05dc\u05d5\u05dd Ann"  # Hebrew stays
    assert shown("a\u2028b") == "a\nb"            # a line separator is a line break


@given(st.text())
def test_shown_leaves_nothing_that_turns_or_drives_text(text: str) -> None:
    out = shown(text)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u061c\u202a-\u202e"
                         "\u2066-\u2069\u2028\u2029]", out)
    assert shown(out) == out


def test_a_name_cannot_turn_the_servers_text_around() -> None:
    ctx = report_context(talk=[{"from": TRICKY, "text": "hello \u202eworld\x1b[31m"}])
    ctx["view"]["players"][0]["name"] = TRICKY
    text, html = Renderer().render("postal_report", ctx)
    for part in (text, html):
        assert "\u202e" not in part and "\x1b" not in part and "\x9b" not in part
        assert "\u2066" not in part
    assert "hello world[31m" in text
    note = notice_context(paragraphs=[f"{TRICKY} (player 2) says:", "hi\u202e there"])
    text, html = Renderer().render("notice", note)
    assert "\u202e" not in text + html and "\x1b" not in text + html
    assert "Evegnp.exe[2Jx (player 2) says:" in text


def test_json_of_a_view_keeps_the_dice_on_the_table() -> None:
    """Anniversary: 15 dice on the table count 18 on the track; the report says both."""
    from tests.kinds.test_classic_kind import context, positions
    running = next(s for s, _ in positions() if not s.game_over and s.to_move
                   and s.dice_in_play != sum(h.count for h in s.hands))
    view = CLASSIC.view(running, None)
    json.dumps(view)
    on_table = sum(h.count for h in running.hands)
    assert view["dice_count"] == on_table
    text, html = Renderer().render("classic_report", context(running, None, []))
    said = f"{on_table} dice in play (worth {running.dice_in_play})"
    assert said in text and said in html


@given(st.text(max_size=60))
def test_shown_takes_out_exactly_what_its_patterns_name(text: str) -> None:
    """The fast path (str.isprintable) never lets through what the patterns would take."""
    from pbem.text.usertext import _LINE_SEPARATORS, _UNSAFE, shown
    assert shown(text) == _UNSAFE.sub("", _LINE_SEPARATORS.sub("\n", text))
