"""The pictures of a game: its course (each player's score after every turn) and the
odds of a standing bid (how many matching dice there may be in all).

Each chart is drawn three ways from the same plain data:

- SVG for the web pages (no script), each player marked by a shape, a dash pattern and
  their number, so it reads without colour;
- an HTML table with inline CSS sizes for mail: many clients show no SVG and no remote
  image, and a table of sized cells needs neither;
- a compact text version of ``#`` rows for the text part.

The data (pbem.services.replay.course, GameKind.bid_charts):

    course = {"label": "virtual dice", "turns": [0, 1, ...],
              "lines": [{"seat": 1, "name": "Anna", "values": [5, 5, 4, ...]}, ...]}
    chart = {"title": "6 threes", "quantity": 6, "rule": "at_least" | "exactly",
             "question": "How many dice match it in all?",
             "bars": [[count, probability], ...]}

A score may be below zero (postal virtual dice): the charts start at the lowest score.

Their words are said in the reader's language (``tr``, which pbem.render gives each
language's templates): the label, question and title may be messages (pbem.wording) or
English text; a plain label is looked up in the catalogue as it is (the kinds' course
labels are marked in pbem.kinds.words).

The functions are Jinja2 globals of the mail and web templates (pbem.render, pbem.web.app).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from pbem.wording import ENGLISH, Translator, _, percent, say

# a shape a player (by position in the course) is marked with, and a dash pattern
_SHAPES = ("circle", "square", "triangle", "diamond", "cross", "plus", "star", "bar")
_DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 2", "4 2 1 2", "3 5")
_COLOURS = ("#1f4e8c", "#b33c1a", "#2e7d32", "#6a3d9a", "#8c6d1f", "#00838f", "#ad1457",
            "#455a64")

COURSE_TEXT_COLUMNS = 10     # turns shown in the text version (72-character lines)
COURSE_TEXT_BAR = 12         # the longest bar of the last score, in characters
COURSE_HTML_COLUMNS = 24     # turns shown as bars in the mail's table
ODDS_MIN_SHOWN = 0.005       # counts less likely than this are left out (the bid's kept)
ODDS_TEXT_WIDTH = 30         # the longest bar of the text version, in characters


# --- shared ------------------------------------------------------------------------------

def sampled(count: int, most: int) -> list[int]:
    """At most ``most`` indexes of 0..count-1, evenly spread, the first and last kept."""
    if count <= most:
        return list(range(count))
    if most <= 1:
        return [count - 1]
    step = (count - 1) / (most - 1)
    return sorted({round(i * step) for i in range(most)})


def _said(value: Any, tr: Translator) -> str:
    """A chart's own words (a label, question or title) in the reader's language."""
    if isinstance(value, str):
        return tr.gettext(value) if value else value
    return str(say(value, tr))


def _label(course: Mapping[str, Any], tr: Translator) -> str:
    """The course's label, its first letter upper case ("Virtual dice")."""
    label = _said(course["label"], tr)
    return label[:1].upper() + label[1:]


def _holds(chart: Mapping[str, Any], count: int) -> bool:
    quantity = int(chart["quantity"])
    return count == quantity if chart.get("rule") == "exactly" else count >= quantity


def shown_bars(chart: Mapping[str, Any]) -> list[tuple[int, float]]:
    """The bars worth drawing: from the first to the last count at least ODDS_MIN_SHOWN
    likely, widened to take in the bid's own quantity."""
    bars = [(int(c), float(p)) for c, p in chart["bars"]]
    if not bars:
        return []
    likely = [c for c, p in bars if p >= ODDS_MIN_SHOWN] or [c for c, _p in bars]
    quantity = int(chart["quantity"])
    low, high = min(min(likely), quantity), max(max(likely), quantity)
    by_count = dict(bars)
    return [(c, by_count.get(c, 0.0)) for c in range(low, high + 1)]


# --- the course of a game -----------------------------------------------------------------

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
            _COLOURS[index % len(_COLOURS)])


def _ticks(low: int, top: int, most: int = 6) -> list[int]:
    """Whole values from low to top, at most about ``most`` of them, 0 among them."""
    step = max(1, -(-(top - low) // most))
    return sorted({*range(0, top + 1, step), *range(0, low - 1, -step)})


def course_svg(course: Mapping[str, Any], tr: Translator = ENGLISH) -> Markup:
    """The course as a step chart in SVG: a line a player, each with its shape, dash and
    number at every drawn point, the names in a legend under the plot."""
    turns: Sequence[int] = course["turns"]
    lines: Sequence[Mapping[str, Any]] = course["lines"]
    if not turns or not lines:
        return Markup("")
    width, left, right, top, plot_h = 640, 40, 24, 26, 200
    legend_rows = -(-len(lines) // 3)
    height = top + plot_h + 38 + legend_rows * 22
    plot_w = width - left - right
    vmin: int = min(0, min(int(min(line["values"])) for line in lines))
    vmax: int = max(vmin + 1, max(int(max(line["values"])) for line in lines))
    span = max(1, len(turns) - 1)

    def x(i: int) -> float:
        return left + plot_w * i / span

    def y(v: float, nudge: float = 0.0) -> float:
        return top + plot_h * (vmax - v) / (vmax - vmin) + nudge

    label = escape(_said(course["label"], tr))
    # (said outside the f-strings: the catalogue's extractor does not look into them)
    title = escape(_("{label} after each turn", label=_said(course["label"], tr)).said(tr))
    turn = escape(_("turn").said(tr))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="100%" role="img" '
             f'aria-labelledby="course-title" class="course-chart">',
             f'<title id="course-title">'
             f'{title}'
             f'</title>',
             '<g font-family="sans-serif" font-size="13" fill="#333">']
    for v in _ticks(vmin, vmax):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="#ddd"/><text x="{left - 6}" y="{y(v) + 4:.1f}" '
                     f'text-anchor="end">{v}</text>')
    for i in sampled(len(turns), 10):
        parts.append(f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" '
                     f'text-anchor="middle">{turns[i]}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 30}" '
                 f'text-anchor="middle">{turn}</text>')
    parts.append(f'<text x="4" y="{top - 12}" text-anchor="start">{label}</text>')
    marked = set(sampled(len(turns), 25))
    for n, line in enumerate(lines):
        shape, dash, colour = _style(n)
        nudge = (n - (len(lines) - 1) / 2) * 2.0    # lines that share a value stay apart
        values = line["values"]
        path = f"M{x(0):.1f},{y(values[0], nudge):.1f}"
        for i in range(1, len(values)):
            path += f"H{x(i):.1f}V{y(values[i], nudge):.1f}"
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"'
                     f'{dashed}><title>{escape(line["name"])}</title></path>')
        parts += [_marker(shape, x(i), y(values[i], nudge), colour)
                  for i in sorted(marked) if i < len(values)]
    for n, line in enumerate(lines):
        shape, _dash, colour = _style(n)
        lx = left + (n % 3) * (plot_w / 3)
        ly = top + plot_h + 56 + (n // 3) * 22
        name = escape(_short(f"{line['seat']} {line['name']}", 20))
        parts.append(_marker(shape, lx + 5, ly - 4, colour))
        parts.append(f'<text x="{lx + 14:.1f}" y="{ly:.1f}">{name} ({line["values"][-1]})'
                     f'</text>')
    parts.append("</g></svg>")
    return Markup("".join(parts))


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def course_html(course: Mapping[str, Any], tr: Translator = ENGLISH) -> Markup:
    """The course for an HTML mail: a row of bars a player (a cell's height its score),
    the last score written at the end; no image, no SVG, no colour needed."""
    turns: Sequence[int] = course["turns"]
    lines: Sequence[Mapping[str, Any]] = course["lines"]
    if not turns or not lines:
        return Markup("")
    shown = sampled(len(turns), COURSE_HTML_COLUMNS)
    vmin = min(0, min(min(line["values"]) for line in lines))
    vmax = max(vmin + 1, max(max(line["values"]) for line in lines))
    td = 'style="padding:5px 6px 0 0;vertical-align:bottom;white-space:nowrap"'
    rows = []
    # "turn 3: 5", a bar's title: said once (a message without values is its text, the
    # fields left in it), filled in for each bar
    bar_title = str(escape(_("turn {turn}: {value}").said(tr)))
    for line in lines:
        bars = "".join(
            f'<td style="padding:5px 1px 0;vertical-align:bottom">'
            f'<div title="{bar_title.format(turn=turns[i], value=line["values"][i])}" '
            f'style="width:6px;'
            f'height:{max(1, round(28 * (line["values"][i] - vmin) / (vmax - vmin)))}px;'
            f'background:#444;'
            f'border:1px solid #444"></div></td>' for i in shown)
        rows.append(f'<tr><td {td}>{escape(line["seat"])}&nbsp;'
                    f'{escape(_short(str(line["name"]), 20))}</td>{bars}'
                    f'<td style="padding:5px 0 0 6px;vertical-align:bottom">'
                    f'<strong>{line["values"][-1]}</strong></td></tr>')
    first, last = turns[shown[0]], turns[shown[-1]]
    label = _label(course, tr)
    caption = escape((_("{label} after each turn ({first} to {last}, every few turns)",
                        label=label, first=first, last=last) if len(shown) < len(turns) else
                      _("{label} after each turn ({first} to {last})", label=label,
                        first=first, last=last)).said(tr))
    return Markup(f'<table role="presentation" style="border-collapse:collapse;margin:6px 0">'
                  f'<caption style="text-align:left;font-size:90%;padding-bottom:4px">'
                  f'{caption}</caption>{"".join(rows)}</table>')


def course_text(course: Mapping[str, Any], tr: Translator = ENGLISH) -> str:
    """The course in text: the score of each player at ten turns, the last as #s (a
    line at most 72 characters)."""
    turns: Sequence[int] = course["turns"]
    lines: Sequence[Mapping[str, Any]] = course["lines"]
    if not turns or not lines:
        return ""
    shown = sampled(len(turns), COURSE_TEXT_COLUMNS)
    turn = _("turn").said(tr)
    head = f"{turn:>18}" + "".join(f"{turns[i]:>4}" for i in shown)
    out = [_("{label} after each turn:", label=_label(course, tr)).said(tr), head]
    for line in lines:
        who = _short(f"{line['seat']} {line['name']}", 16)
        last = int(line["values"][-1])
        out.append((f"  {who:<16}" + "".join(f"{line['values'][i]:>4}" for i in shown)
                    + f"  {'#' * min(last, COURSE_TEXT_BAR)}").rstrip())
    return "\n".join(out)


# --- the odds of a standing bid -----------------------------------------------------------

def odds_html(chart: Mapping[str, Any], tr: Translator = ENGLISH) -> Markup:
    """The chance of each count as a bar (its width), the bid's count marked; a count at
    which the bid holds is a solid bar, one at which it fails an outlined one."""
    bars = shown_bars(chart)
    if not bars:
        return Markup("")
    top = max(p for _c, p in bars) or 1.0
    quantity = int(chart["quantity"])
    title = escape(_said(chart["title"], tr))
    rows = []
    for count, p in bars:
        solid = _holds(chart, count)
        look = "background:#333;border:1px solid #333" if solid else \
            "background:#fff;border:1px solid #777"
        mark = (f' <strong>&#9664; {title}</strong>'
                if count == quantity else "")
        weight = "font-weight:bold;" if count == quantity else ""
        rows.append(f'<tr><td style="padding:0 6px 0 0;text-align:right;{weight}">{count}</td>'
                    f'<td style="padding:1px 0;width:60%"><div style="{look};height:10px;'
                    f'width:{max(1.0, 100 * p / top):.0f}%"></div></td>'
                    f'<td style="padding:0 0 0 6px;white-space:nowrap;{weight}">{percent(p, tr)}'
                    f'{mark}</td></tr>')
    caption = escape(_("{question} The chance of each, from what you can see (solid: it "
                       "holds; outlined: it fails).",
                       question=_said(chart["question"], tr)).said(tr))
    return Markup(f'<table role="presentation" style="border-collapse:collapse;width:100%;'
                  f'max-width:420px;margin:4px 0;font-size:90%"><caption style="text-align:'
                  f'left;padding-bottom:2px">{caption}</caption>{"".join(rows)}</table>')


def odds_text(chart: Mapping[str, Any], indent: str = "  ",
              tr: Translator = ENGLISH) -> str:
    """The chance of each count as a row of # (the bid holds) or . (it fails)."""
    bars = shown_bars(chart)
    if not bars:
        return ""
    top = max(p for _c, p in bars) or 1.0
    quantity = int(chart["quantity"])
    title = _said(chart["title"], tr)
    out = [f"{indent}{_said(chart['question'], tr)}",
           indent + _("The chance of each, from what you can see (# it holds, . it fails):"
                      ).said(tr)]
    for count, p in bars:
        char = "#" if _holds(chart, count) else "."
        bar = char * max(1, round(ODDS_TEXT_WIDTH * p / top))
        mark = f"  <- {title}" if count == quantity else ""
        out.append(f"{indent}{count:>3} {bar:<{ODDS_TEXT_WIDTH}} {percent(p, tr):>4}{mark}")
    return "\n".join(out)


# the names the templates call them by
GLOBALS: dict[str, Callable[..., str]] = {
    "course_chart_svg": course_svg, "course_chart_html": course_html,
    "course_chart_text": course_text, "odds_chart_html": odds_html,
    "odds_chart_text": odds_text}
