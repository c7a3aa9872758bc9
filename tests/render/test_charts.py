"""The pictures (pbem.render.charts): the course of a game and the odds of a standing bid, as
SVG (web), as an HTML table (mail) and as text; examples and properties."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from pbem.kinds.cup import CUP
from pbem.render.charts import (
    COLOURS,
    COURSE_HTML_COLUMNS,
    COURSE_TEXT_BAR,
    COURSE_TEXT_COLUMNS,
    ODDS_TEXT_WIDTH,
    course_html,
    course_legend,
    course_svg,
    course_table,
    course_text,
    nice_step,
    odds_html,
    odds_text,
    sampled,
    shown_bars,
    turn_ticks,
)
from pbem.rules.cupofbluff import total_distribution
from testkit.colours import VISIONS, closest_pair, contrast, parse

SVG = "{http://www.w3.org/2000/svg}"


def a_course(lines: list[list[int]], names: list[str] | None = None) -> dict[str, object]:
    names = names or [f"Player {n}" for n in range(1, len(lines) + 1)]
    return {"label": "virtual dice", "turns": list(range(len(lines[0]))),
            "lines": [{"seat": n + 1, "name": names[n], "values": v}
                      for n, v in enumerate(lines)]}


courses = st.integers(1, 6).flatmap(lambda players: st.integers(1, 80).flatmap(
    lambda turns: st.lists(st.lists(st.integers(-12, 12), min_size=turns, max_size=turns),
                           min_size=players, max_size=players)))


@given(st.integers(0, 500), st.integers(1, 40))
def test_sampled_keeps_the_ends_and_at_most_as_many_as_asked(count: int, most: int) -> None:
    picked = sampled(count, most)
    assert picked == sorted(set(picked))
    assert len(picked) <= max(most, 1)
    if count:
        assert picked[-1] == count - 1
        assert picked[0] == 0 or most == 1
        assert all(0 <= i < count for i in picked)
    else:
        assert picked == []


def marks(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "mark"]


@given(courses)
def test_the_course_svg_is_one_line_a_player_and_ties_share_one_labelled_mark(
        lines: list[list[int]]) -> None:
    course = a_course(lines)
    svg = str(course_svg(course))
    root = ET.fromstring(svg)                       # well-formed, with no script
    assert root.tag == f"{SVG}svg" and "script" not in svg
    paths = [p for p in root.iter(f"{SVG}path") if p.get("fill") == "none"
             and p.find(f"{SVG}title") is not None]
    assert len(paths) == len(lines)
    # every point of the plot lies inside the picture
    width, height = map(float, root.get("viewBox", "").split()[2:])
    for path in paths:
        numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", path.get("d", ""))]
        assert all(0 <= x <= max(width, height) for x in numbers)
    # no two marks at one spot; a mark of several players names each of them
    spots = [(g.get("data-x"), g.get("data-y")) for g in marks(root)]
    assert len(spots) == len(set(spots))
    for g in marks(root):
        seats = (g.get("data-seats") or "").split()
        tip = g.findtext(f"{SVG}title") or ""
        assert all(f"{seat} Player {seat}" in tip for seat in seats)
        turn = int(g.get("data-turn") or 0)
        assert sorted(int(s) for s in seats) == sorted(
            n + 1 for n, v in enumerate(lines) if v[turn] == lines[int(seats[0]) - 1][turn])
    # every seat's number once at the end of the lines
    ends = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == "end"]
    assert sorted(int(s) for e in ends for s in e.split(",")) == list(range(1, len(lines) + 1))
    for x in (t.get("x") for t in root.iter(f"{SVG}text") if t.get("class") == "end"):
        assert float(x or 0) < width


@given(courses)
def test_the_legend_and_the_table_of_numbers_name_every_player(lines: list[list[int]]) -> None:
    course = a_course(lines)
    legend = str(course_legend(course))
    table = str(course_table(course))
    for n, values in enumerate(lines):
        assert f"<strong>{n + 1}</strong> Player {n + 1} ({values[-1]})" in legend
    assert table.count("<tr>") == 1 + len(lines[0])
    assert table.count("<td>") == len(lines) * len(lines[0])


def test_names_are_escaped_and_each_player_gets_a_shape_of_its_own() -> None:
    course = a_course([[5, 4, 3], [5, 5, 4], [5, 3, 2]],
                      ["<b>Bold</b>", "Ann & Bob", "Carl"])
    svg = str(course_svg(course))
    legend = str(course_legend(course))
    for html in (svg, legend, str(course_table(course))):
        assert "<b>" not in html and "&lt;b&gt;Bold&lt;/b&gt;" in html and "Ann &amp; Bob" in html
    root = ET.fromstring(svg)
    shapes = {el.tag for g in marks(root) for el in g
              if el.tag in (f"{SVG}circle", f"{SVG}rect", f"{SVG}polygon")}
    assert {f"{SVG}circle", f"{SVG}polygon"} <= shapes       # not told apart by colour alone
    dashes = {p.get("stroke-dasharray") for p in root.iter(f"{SVG}path")
              if p.find(f"{SVG}title") is not None}
    assert len(dashes) == 3


def test_four_players_tied_make_one_line_and_one_mark_a_turn() -> None:
    course = a_course([[4, 4, 4], [4, 4, 3], [4, 4, 4], [4, 4, 4]])
    root = ET.fromstring(str(course_svg(course)))
    assert [g.get("data-seats") for g in marks(root)] == ["1 2 3 4", "1 2 3 4", "1 3 4", "2"]
    shared = [p for p in root.iter(f"{SVG}path") if p.get("class") == "shared"]
    assert len(shared) == 2                     # turns 0 to 1 and 1 to 2, drawn once each
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("font-weight") == "bold"]
    assert "1,2,3,4" in labels and "1,3,4" in labels and "2" in labels


def test_the_replay_marks_its_turn_and_each_turn_opens_on_a_click() -> None:
    course = a_course([[5, 4, 4, 3], [5, 5, 4, 4]])
    root = ET.fromstring(str(course_svg(course, link="/games/g/replay/", current=3)))
    assert [line.get("x1") for line in root.iter(f"{SVG}line")
            if line.get("class") == "current"] == [
        g.get("data-x") for g in marks(root) if g.get("data-turn") == "3"][:1]
    links = [a.get("href") for a in root.iter(f"{SVG}a")]
    assert links == [f"/games/g/replay/{i}" for i in range(4)]
    assert not list(ET.fromstring(str(course_svg(course))).iter(f"{SVG}a"))


@given(st.integers(0, 400), st.integers(1, 12))
def test_a_nice_step_is_one_two_or_five_times_ten_and_cuts_the_span_in_few(
        span: int, most: int) -> None:
    step = nice_step(span, most)
    assert str(step).rstrip("0") in ("1", "2", "5") and span <= most * step


@given(st.integers(1, 300))
def test_the_turn_ticks_are_evenly_spaced_and_keep_the_ends(count: int) -> None:
    turns = list(range(count))
    ticks = turn_ticks(turns)
    assert ticks[0] == 0 and ticks[-1] == count - 1 and len(ticks) <= 11
    gaps = {b - a for a, b in zip(ticks[:-2], ticks[1:-1], strict=True)}
    assert len(gaps) <= 1                          # even, but for the last one
    if len(ticks) > 2:
        assert ticks[-1] - ticks[-2] >= 0.6 * next(iter(gaps), 1) - 1e-9


def test_the_old_ticks_were_uneven() -> None:
    assert turn_ticks(list(range(15))) == [0, 2, 4, 6, 8, 10, 12, 14]    # was 0, 5, 9, 14


def test_the_palette_is_told_apart_by_colour_blind_readers_and_shows_on_white() -> None:
    for vision in VISIONS:
        assert closest_pair(list(COLOURS[:5]), vision)[0] >= 40, vision
        assert closest_pair(list(COLOURS), vision)[0] >= 25, vision
    assert all(contrast(parse(c), (1.0, 1.0, 1.0)) >= 3 for c in COLOURS)


def test_the_old_palette_failed_the_simulation() -> None:
    old = ["#1f4e8c", "#b33c1a", "#2e7d32", "#6a3d9a", "#8c6d1f"]
    assert closest_pair(old, "deuteranopia")[0] < 10


@given(courses)
def test_the_course_in_mail_is_a_table_of_bars_with_no_image(lines: list[list[int]]) -> None:
    html = str(course_html(a_course(lines)))
    assert "<img" not in html and "<svg" not in html and "url(" not in html and "<div" not in html
    bars = re.findall(r'<td width="6" height="(\d+)" bgcolor="(#[0-9a-f]{6})"', html)
    assert len(bars) == len(lines) * min(len(lines[0]), COURSE_HTML_COLUMNS)
    low = min(0, min(min(v) for v in lines))
    top = max(low + 1, max(max(v) for v in lines))
    drawn = max(v[i] for v in lines for i in sampled(len(v), COURSE_HTML_COLUMNS))
    heights = [int(h) for h, _colour in bars]
    assert max(heights) == max(1, round(28 * (drawn - low) / (top - low)))
    assert min(heights) >= 1


@given(courses)
def test_the_course_in_text_is_a_row_a_player_within_72_columns(lines: list[list[int]]) -> None:
    text = course_text(a_course(lines))
    rows = text.splitlines()
    assert len(rows) == 2 + len(lines)
    assert all(len(r) <= 72 for r in rows)
    shown = min(len(lines[0]), COURSE_TEXT_COLUMNS)
    assert len(rows[1].split()) == 1 + shown               # "turn" and the turns shown
    assert ("every few turns" in rows[0]) == (len(lines[0]) > COURSE_TEXT_COLUMNS)
    highest = max(1, max(v[-1] for v in lines))
    for row, values in zip(rows[2:], lines, strict=True):
        bar = "#" * max(1, round(COURSE_TEXT_BAR * values[-1] / highest))
        assert row.endswith(" " + bar) or values[-1] <= 0
        assert [int(x) for x in row.split()[3:3 + shown]] == [
            values[i] for i in sampled(len(values), COURSE_TEXT_COLUMNS)]


def test_the_text_bar_of_the_last_score_is_scaled_not_capped() -> None:
    rows = course_text(a_course([[0, 20], [0, 12], [0, 6]])).splitlines()[2:]
    assert [row.count("#") for row in rows] == [COURSE_TEXT_BAR, 7, 4]     # was 12, 12, 6


def test_an_empty_course_draws_nothing() -> None:
    empty = {"label": "points", "turns": [], "lines": []}
    assert course_svg(empty) == "" and course_html(empty) == "" and course_text(empty) == ""


# --- the odds of a bid ---------------------------------------------------------------------

def a_chart(bars: dict[int, float], quantity: int, rule: str = "at_least") -> dict[str, object]:
    return {"title": f"{quantity} threes", "quantity": quantity, "rule": rule,
            "question": "How many dice match it in all?", "bars": [[c, p] for c, p in sorted(bars.items())]}


distributions = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25).map(
    lambda ps: {c: p / (sum(ps) or 1) for c, p in enumerate(ps)})


@given(distributions, st.integers(0, 30), st.sampled_from(["at_least", "exactly"]))
def test_the_odds_in_text_mark_the_bid_and_tell_holding_from_failing(
        dist: dict[int, float], quantity: int, rule: str) -> None:
    chart = a_chart(dist, quantity, rule)
    rows = odds_text(chart).splitlines()[2:]
    shown = shown_bars(chart)
    assert len(rows) == len(shown)
    assert quantity in [c for c, _ in shown]
    marked = [r for r in rows if "<- " in r]
    assert len(marked) == 1 and int(marked[0].split()[0]) == quantity
    for row, (count, _p) in zip(rows, shown, strict=True):
        bar = row.split()[1]
        holds = count == quantity if rule == "exactly" else count >= quantity
        assert set(bar) == {"#" if holds else "."}
        assert 1 <= len(bar) <= ODDS_TEXT_WIDTH
    # the likeliest count draws the longest bar
    top = max(shown, key=lambda b: b[1])
    widest = max(len(r.split()[1]) for r in rows)
    assert len(rows[shown.index(top)].split()[1]) == widest


@given(distributions, st.integers(0, 30), st.text(min_size=1, max_size=36).filter(
    lambda t: t.isprintable() and t.strip() == t and " " not in t))
def test_the_odds_in_text_stay_within_72_columns_however_long_the_title(
        dist: dict[int, float], quantity: int, title: str) -> None:
    """A German or Czech bid's title ("die Ansage von 12 in Minispiel 3") is long: the
    bars give way (the lines ran to 80 columns)."""
    chart = {**a_chart(dist, quantity), "title": title}
    assert all(len(line) <= 72 for line in odds_text(chart).splitlines())


@given(distributions, st.integers(0, 30))
def test_the_odds_in_mail_are_a_table_with_a_bar_a_count(dist: dict[int, float],
                                                         quantity: int) -> None:
    chart = a_chart(dist, quantity)
    html = str(odds_html(chart))
    assert "<img" not in html and "<svg" not in html and "<div" not in html
    assert html.count('<tr><td align="right" class="count"') == len(shown_bars(chart))
    assert html.count("&#9664;") == 1                       # the bid, marked once
    shown = shown_bars(chart)
    assert html.count('class="holds"') == sum(1 for c, _ in shown if c >= quantity)
    assert html.count('class="fails"') == sum(1 for c, _ in shown if c < quantity)
    # a failing bar is dashes: filled cells with hollow ones between (no colour needed)
    for bar in re.findall(r'class="fails".*?</table>', html):
        cells = re.findall(r"<td [^>]*>", bar)
        assert len(cells) >= 3 and len(cells) % 2 == 1
        assert all(("bgcolor" in c) == (k % 2 == 0) for k, c in enumerate(cells))
    # a count never splits over two lines ("1" above "0")
    assert html.count('class="count" style="padding:0 6px 0 0;text-align:right;'
                      'white-space:nowrap;') == len(shown)


def test_unlikely_counts_are_left_out_but_never_the_bids_own() -> None:
    dist = {0: 0.0001, 1: 0.2, 2: 0.5, 3: 0.2999, 9: 0.0}
    assert [c for c, _ in shown_bars(a_chart(dist, 2))] == [1, 2, 3]
    assert [c for c, _ in shown_bars(a_chart(dist, 9))] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    text = odds_text(a_chart(dist, 2))
    assert "  2 " in text and "50%" in text and "<- 2 threes" in text


def test_the_cup_chart_is_the_total_of_three_dice_with_the_claim_alone_holding() -> None:
    dist = total_distribution()
    assert sorted(dist) == list(range(3, 19))
    assert abs(sum(dist.values()) - 1) < 1e-12
    assert dist[10] == dist[11] == 27 / 216 and dist[3] == dist[18] == 1 / 216
    chart = {"title": "the claim of 12", "quantity": 12, "rule": "exactly",
             "question": "What may the three dice total?",
             "bars": [[t, p] for t, p in dist.items()]}
    rows = odds_text(chart).splitlines()[2:]
    assert [r.split()[0] for r in rows if "#" in r] == ["12"]
    assert CUP.course_label == "points"
