"""The course of a game: each player's score after every turn, as SVG for the web pages,
an HTML table of sized cells for mail and rows of numbers for the text part (the three
ways: pbem.render.charts).

The data (pbem.services.replay.course):

    course = {"label": "virtual dice", "turns": [0, 1, ...],
              "lines": [{"seat": 1, "name": "Anna", "values": [5, 5, 4, ...]}, ...]}

A score may be below zero (postal virtual dice): the charts start at the lowest score.
The label is a message (pbem.text.wording) or plain text, looked up in the catalogue as it
is (the kinds' course labels are marked in pbem.kinds.words).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from markupsafe import Markup, escape

from pbem.render.chart_basics import BAR, BAR_EDGE, chart_words
from pbem.text.wording import ENGLISH, Translator, _


class CourseLine(TypedDict):
    """A player's line of a game's course: their score after every turn."""

    seat: int
    name: str
    values: list[int]


class Course(TypedDict):
    """A game's course (pbem.services.replay.course): what its scores are (a plain label,
    looked up in the catalogue), the turns, a line a player."""

    label: str
    turns: list[int]
    lines: list[CourseLine]


# a shape a player (by position in the course) is marked with, and a dash pattern
_SHAPES = ("circle", "square", "triangle", "diamond", "cross", "plus", "star", "bar")
_DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 2", "4 2 1 2", "3 5")
# told apart by readers with deuteranopia or protanopia too (tests/render/test_charts.py
# simulates them: the first five at least 40 CIELAB units apart, all eight 25), each at
# least 3:1 against white
COLOURS = ("#663355", "#802211", "#887cee", "#3300ff", "#ee6600", "#dd7755", "#5511aa",
           "#cc77a7")

COURSE_TEXT_COLUMNS = 10     # turns shown in the text version (72-character lines)
COURSE_TEXT_BAR = 12         # the longest bar of the last score, in characters
COURSE_HTML_COLUMNS = 24     # turns shown as bars in the mail's table


def sampled(count: int, most: int) -> list[int]:
    """At most ``most`` indexes of 0..count-1, evenly spread, the first and last kept."""
    if count <= most:
        return list(range(count))
    if most <= 1:
        return [count - 1]
    step = (count - 1) / (most - 1)
    return sorted({round(i * step) for i in range(most)})


def _label(course: Course, tr: Translator) -> str:
    """The course's label, its first letter upper case ("Virtual dice")."""
    label = chart_words(course["label"], tr)
    return label[:1].upper() + label[1:]



def _marker(shape: str, x: float, y: float, colour: str, r: float = 4.0) -> str:
    fill = f'fill="{colour}" stroke="{colour}"'
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {fill}/>'
    if shape == "square":
        return (f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" '
                f'height="{2 * r:.1f}" {fill}/>')
    if shape == "triangle":
        pts = f"{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y + r:.1f} {x - r - 1:.1f},{y + r:.1f}"
        return f'<polygon points="{pts}" {fill}/>'
    if shape == "diamond":
        pts = f"{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y:.1f} {x:.1f},{y + r + 1:.1f} " \
              f"{x - r - 1:.1f},{y:.1f}"
        return f'<polygon points="{pts}" {fill}/>'
    if shape == "cross":
        return (f'<path d="M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}M{x - r:.1f},'
                f'{y + r:.1f}L{x + r:.1f},{y - r:.1f}" stroke="{colour}" stroke-width="2.5" '
                f'fill="none"/>')
    if shape == "plus":
        return (f'<path d="M{x - r:.1f},{y:.1f}H{x + r:.1f}M{x:.1f},{y - r:.1f}V{y + r:.1f}" '
                f'stroke="{colour}" stroke-width="2.5" fill="none"/>')
    if shape == "star":
        pts = " ".join(f"{x + dx * r * 1.3:.1f},{y + dy * r * 1.3:.1f}" for dx, dy in (
            (0, -1), (0.29, -0.4), (0.95, -0.31), (0.47, 0.15), (0.59, 0.81), (0, 0.5),
            (-0.59, 0.81), (-0.47, 0.15), (-0.95, -0.31), (-0.29, -0.4)))
        return f'<polygon points="{pts}" {fill}/>'
    return (f'<rect x="{x - r:.1f}" y="{y - 1.5:.1f}" width="{2 * r:.1f}" height="3" '
            f'{fill}/>')


def _style(index: int) -> tuple[str, str, str]:
    return (_SHAPES[index % len(_SHAPES)], _DASHES[index % len(_DASHES)],
            COLOURS[index % len(COLOURS)])


def nice_step(span: int, most: int) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50 ... that cuts span into at most ``most`` steps."""
    power = 1
    while True:
        for step in (power, 2 * power, 5 * power):
            if span <= most * step:
                return step
        power *= 10


def _ticks(low: int, top: int, most: int = 6) -> list[int]:
    """Whole values from low to top, evenly spaced (1, 2, 5, 10 ... apart), 0 among them."""
    step = nice_step(top - low, most)
    return sorted({*range(0, top + 1, step), *range(0, low - 1, -step)})


def turn_ticks(turns: Sequence[int], most: int = 10) -> list[int]:
    """Indexes of the turns the x axis names: the turns that are whole multiples of an
    even step (1, 2, 5, 10 ...), the last one added when it is not too near the one
    before it."""
    if not turns:
        return []
    step = nice_step(max(1, turns[-1] - turns[0]), most)
    picked = [i for i, t in enumerate(turns) if t % step == 0]
    last = len(turns) - 1
    if not picked or picked[-1] != last:
        if picked and turns[last] - turns[picked[-1]] < step * 0.6:
            picked[-1] = last
        else:
            picked.append(last)
    return picked


def _groups(lines: Sequence[CourseLine], i: int) -> list[list[int]]:
    """The players (by position) grouped by their value at turn index i, in seat order."""
    by_value: dict[int, list[int]] = {}
    for n, line in enumerate(lines):
        by_value.setdefault(int(line["values"][i]), []).append(n)
    return list(by_value.values())


def _seats(lines: Sequence[CourseLine], group: Sequence[int]) -> str:
    return ",".join(str(lines[n]["seat"]) for n in group)


SHARED = "#222222"     # a line or a marker shared by players that tie


def course_svg(course: Course, tr: Translator = ENGLISH, *,
               link: str | None = None, current: int | None = None) -> Markup:
    """The course as a step chart in SVG: a line a player, each with its colour, shape,
    dash and seat number; where players tie, their line is drawn once (dark, thicker)
    and its marker is one ring labelled with every seat on it. Under the plot a legend
    and the numbers as a table (what a screen reader reads). ``link``: turn index i
    opens link + i (the replay) on a click; ``current``: the turn index marked."""
    turns: Sequence[int] = course["turns"]
    lines: Sequence[CourseLine] = course["lines"]
    if not turns or not lines:
        return Markup("")
    vmin: int = min(0, min(int(min(line["values"])) for line in lines))
    vmax: int = max(vmin + 1, max(int(max(line["values"])) for line in lines))
    # a small range is a low plot: early in a game (scores 0 and 1) no tall empty band
    ends = sorted(_groups(lines, len(turns) - 1),
                  key=lambda g: -int(lines[g[0]]["values"][-1]))
    # room at the right for the longest seat label at the lines' ends ("1,2,3")
    right = 16 + 9 * max(len(_seats(lines, g)) for g in ends)
    width, left, top = 640, 34, 22
    plot_h = max(90, min(200, (vmax - vmin) * 24))
    height = top + plot_h + 40
    plot_w = width - left - right
    span = max(1, len(turns) - 1)

    def x(i: int) -> float:
        return left + plot_w * i / span

    def y(v: float) -> float:
        return top + plot_h * (vmax - v) / (vmax - vmin)

    label = _label(course, tr)
    title = escape(_("{label} after each turn", label=label).said(tr))
    turn_word = _("turn").said(tr)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="100%" role="img" aria-labelledby="course-title" class="course-chart">',
             f'<title id="course-title">{title}</title>',
             '<g font-family="sans-serif" font-size="14" fill="#333">']
    for v in _ticks(vmin, vmax):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="#ccc"/><text x="{left - 6}" y="{y(v) + 5:.1f}" '
                     f'text-anchor="end">{v}</text>')
    for i in turn_ticks(turns):
        parts.append(f'<text x="{x(i):.1f}" y="{top + plot_h + 18}" '
                     f'text-anchor="middle">{turns[i]}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 35}" '
                 f'text-anchor="middle">{escape(turn_word)}</text>')
    parts.append(f'<text x="4" y="{top - 8}" text-anchor="start">{escape(label)}</text>')
    if current is not None and 0 <= current < len(turns):
        parts.append(f'<line class="current" x1="{x(current):.1f}" x2="{x(current):.1f}" '
                     f'y1="{top - 4}" y2="{top + plot_h}" stroke="#e3a500" stroke-width="6" '
                     f'stroke-opacity="0.6"/>')
    # each player's own line, then the stretches two or more share drawn over it once
    for n, line in enumerate(lines):
        _shape, dash, colour = _style(n)
        values = line["values"]
        path = f"M{x(0):.1f},{y(values[0]):.1f}"
        for i in range(1, len(values)):
            path += f"H{x(i):.1f}V{y(values[i]):.1f}"
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2.5"'
                     f'{dashed}><title>{escape(line["seat"])} {escape(line["name"])}</title>'
                     f'</path>')
    for i in range(1, len(turns)):
        for group in _groups(lines, i - 1):
            if len(group) > 1:
                v = lines[group[0]]["values"][i - 1]
                parts.append(f'<path class="shared" d="M{x(i - 1):.1f},{y(v):.1f}'
                             f'H{x(i):.1f}" stroke="{SHARED}" stroke-width="3.5"/>')
    marked = sampled(len(turns), 25)
    before: dict[int, list[int]] = {}
    for i in marked:
        for group in _groups(lines, i):
            v = int(lines[group[0]]["values"][i])
            names = ", ".join(f"{lines[n]['seat']} {lines[n]['name']}" for n in group)
            tip = escape(f"{names}: {v} ({turn_word} {turns[i]})")
            seats = " ".join(str(lines[n]["seat"]) for n in group)
            if len(group) == 1:
                shape, _dash, colour = _style(group[0])
                drawn = _marker(shape, x(i), y(v), colour)
            else:
                drawn = (f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="6" fill="#fff" '
                         f'stroke="{SHARED}" stroke-width="2.5"/>')
                # the seats are written where the tie starts (at the end: the end label)
                if before.get(group[0]) != group and i != len(turns) - 1:
                    drawn += (f'<text x="{x(i):.1f}" y="{y(v) - 9:.1f}" text-anchor="middle" '
                              f'font-size="12" font-weight="bold">{_seats(lines, group)}</text>')
            for n in group:
                before[n] = group
            parts.append(f'<g class="mark" data-seats="{seats}" data-turn="{turns[i]}" '
                         f'data-x="{x(i):.1f}" data-y="{y(v):.1f}">'
                         f'<title>{tip}</title>{drawn}</g>')
    # every player's seat number at the end of their line (tied ones together)
    last_y = -100.0
    for group in ends:
        ly = max(y(int(lines[group[0]]["values"][-1])) + 5, last_y + 14)
        last_y = ly
        parts.append(f'<text class="end" x="{x(len(turns) - 1) + 9:.1f}" y="{ly:.1f}" '
                     f'font-weight="bold">{_seats(lines, group)}</text>')
    if link is not None:
        step_w = plot_w / span
        for i in range(len(turns)):
            where = escape(f"{link}{i}")
            # a turn's strip of the plot, cut at the plot's edges
            x0, x1 = max(left, x(i) - step_w / 2), min(left + plot_w, x(i) + step_w / 2)
            parts.append(f'<a href="{where}" class="turn-link"><rect x="{x0:.1f}" '
                         f'y="{top}" width="{x1 - x0:.1f}" height="{plot_h}" fill="#fff" '
                         f'fill-opacity="0"><title>{escape(turn_word)} {turns[i]}</title>'
                         f'</rect></a>')
    parts.append("</g></svg>")
    return Markup("".join(parts))


def course_legend(course: Course, tr: Translator = ENGLISH) -> Markup:
    """The web chart's legend as HTML under the picture (it wraps on a phone): each
    player's marker, seat, name and last score."""
    lines: Sequence[CourseLine] = course["lines"]
    if not course["turns"] or not lines:
        return Markup("")
    items = []
    for n, line in enumerate(lines):
        shape, dash, colour = _style(n)
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        icon = (f'<svg width="34" height="14" viewBox="0 0 34 14" aria-hidden="true">'
                f'<path d="M1,7H33" stroke="{colour}" stroke-width="2.5"{dashed}/>'
                f'{_marker(shape, 17, 7, colour)}</svg>')
        items.append(f'<li data-seat="{escape(line["seat"])}">{icon} <strong>'
                     f'{escape(line["seat"])}</strong> {escape(line["name"])} '
                     f'({line["values"][-1]})</li>')
    return Markup(f'<ul class="legend">{"".join(items)}</ul>')


def course_table(course: Course, tr: Translator = ENGLISH) -> Markup:
    """The chart's numbers as a table: a row a turn, a column a player (the text a
    screen reader reads, and anyone who wants the exact values)."""
    turns: Sequence[int] = course["turns"]
    lines: Sequence[CourseLine] = course["lines"]
    if not turns or not lines:
        return Markup("")
    # a seat number a column (the legend above names them): narrow enough for a phone
    head = "".join(f'<th scope="col" aria-label="{escape(line["seat"])} {escape(line["name"])}"'
                   f' title="{escape(line["name"])}">{escape(line["seat"])}</th>'
                   for line in lines)
    rows = "".join(
        f'<tr><th scope="row">{turns[i]}</th>'
        + "".join(f"<td>{line['values'][i]}</td>" for line in lines) + "</tr>"
        for i in range(len(turns)))
    summary = escape(_("The numbers of the chart").said(tr))
    caption = escape(_("{label} after each turn", label=_label(course, tr)).said(tr))
    turn = escape(_("turn").said(tr))
    return Markup(f'<details class="course-numbers"><summary>{summary}</summary>'
                  f'<table class="grid"><caption>{caption}</caption><tr><th scope="col">'
                  f'{turn}</th>{head}</tr>{rows}</table></details>')


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def _cell_bar(height: int, colour: str = BAR) -> str:
    """A bar of ``height`` pixels as a table cell with bgcolor, width and height
    attributes (the Word engine of desktop Outlook sizes no <div>)."""
    return (f'<table role="presentation" cellpadding="0" cellspacing="0" border="0" '
            f'style="font-size:0;line-height:0"><tr><td width="6" height="{height}" '
            f'bgcolor="{colour}" style="border:1px solid {BAR_EDGE}">&nbsp;</td></tr></table>')


def course_html(course: Course, tr: Translator = ENGLISH) -> Markup:
    """The course for an HTML mail: a row of bars a player (a cell's height its score),
    the last score written at the end; no image, no SVG, no colour needed."""
    turns: Sequence[int] = course["turns"]
    lines: Sequence[CourseLine] = course["lines"]
    if not turns or not lines:
        return Markup("")
    shown = sampled(len(turns), COURSE_HTML_COLUMNS)
    vmin = min(0, min(min(line["values"]) for line in lines))
    vmax = max(vmin + 1, max(max(line["values"]) for line in lines))
    td = 'style="padding:5px 6px 0 0;vertical-align:bottom;white-space:nowrap"'
    rows = []
    for line in lines:
        bars = "".join(
            f'<td valign="bottom" style="padding:5px 1px 0;vertical-align:bottom">'
            f'{_cell_bar(max(1, round(28 * (line["values"][i] - vmin) / (vmax - vmin))))}'
            f'</td>' for i in shown)
        rows.append(f'<tr><td {td}>{escape(line["seat"])}&nbsp;'
                    f'{escape(_short(str(line["name"]), 20))}</td>{bars}'
                    f'<td valign="bottom" style="padding:5px 0 0 6px;vertical-align:bottom;'
                    f'white-space:nowrap"><strong>{line["values"][-1]}</strong></td></tr>')
    first, last = turns[shown[0]], turns[shown[-1]]
    label = _label(course, tr)
    caption = escape((_("{label} after each turn ({first} to {last}, every few turns)",
                        label=label, first=first, last=last) if len(shown) < len(turns) else
                      _("{label} after each turn ({first} to {last})", label=label,
                        first=first, last=last)).said(tr))
    return Markup(f'<table role="presentation" cellpadding="0" cellspacing="0" border="0" '
                  f'style="border-collapse:collapse;margin:6px 0">'
                  f'<caption style="text-align:left;font-size:90%;padding-bottom:4px">'
                  f'{caption}</caption>{"".join(rows)}</table>')


def course_text(course: Course, tr: Translator = ENGLISH) -> str:
    """The course in text: the score of each player at ten turns, the last as #s scaled
    to the highest score (a line at most 72 characters)."""
    turns: Sequence[int] = course["turns"]
    lines: Sequence[CourseLine] = course["lines"]
    if not turns or not lines:
        return ""
    shown = sampled(len(turns), COURSE_TEXT_COLUMNS)
    turn = _("turn").said(tr)
    head = f"{turn:>18}" + "".join(f"{turns[i]:>4}" for i in shown)
    label = _label(course, tr)
    said = (_("{label} after every few turns:", label=label) if len(shown) < len(turns)
            else _("{label} after each turn:", label=label)).said(tr)
    out = [said, head]
    highest = max(1, max(int(line["values"][-1]) for line in lines))
    for line in lines:
        who = _short(f"{line['seat']} {line['name']}", 16)
        last = int(line["values"][-1])
        bar = "#" * max(1, round(COURSE_TEXT_BAR * last / highest)) if last > 0 else ""
        out.append((f"  {who:<16}" + "".join(f"{line['values'][i]:>4}" for i in shown)
                    + f"  {bar}").rstrip())
    return "\n".join(out)

