"""The odds of a standing bid: how many matching dice (or what total) there may be in all,
a bar a count, as an HTML table for mail (and, unstyled, for the web pages) and as rows
of ``#`` and ``.`` for the text part.

The data (GameKind.bid_charts):

    chart = {"title": "6 threes", "quantity": 6, "rule": "at_least" | "exactly",
             "question": "How many dice match it in all?",
             "bars": [[count, probability], ...]}

The title and question are messages (pbem.text.wording) or plain text.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup, escape

from pbem.render.chart_basics import BAR, BAR_EDGE, chart_words
from pbem.render.memo import remembered
from pbem.text.wording import ENGLISH, Translator, _, percent

ODDS_MIN_SHOWN = 0.005       # counts less likely than this are left out (the bid's kept)
ODDS_DASHES = 6            # dashes of the longest failing bar in the mail
ODDS_TEXT_WIDTH = 30         # the longest bar of the text version, in characters


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


def _odds_bar(share: float, solid: bool) -> str:
    """A bar ``share`` (0..1) of its cell wide, of table cells with bgcolor and width
    attributes: solid when the bid holds at that count; when it fails, dashes of filled
    and hollow cells, a pattern that stays when a dark mode turns the colours over or a
    mail program drops the styles."""
    pct = max(1, round(100 * share))
    # the cells' font size 0 comes from their table: a cell is as high as its height
    filled = (f'height="10" bgcolor="{BAR}" style="background:{BAR};'
              f'border:1px solid {BAR_EDGE}">&nbsp;</td>')
    if solid:
        cells = f'<td width="100%" {filled}'
    else:
        dashes = max(2, round(ODDS_DASHES * share))   # one dash is no pattern
        each = f"{100 / (2 * dashes - 1):.1f}%"
        cells = "".join(f'<td width="{each}" {filled}' if k % 2 == 0 else
                        f'<td width="{each}" height="10">&nbsp;</td>'
                        for k in range(2 * dashes - 1))
    rest = f'<td width="{100 - pct}%">&nbsp;</td>' if pct < 100 else ""
    return (f'<table role="presentation" width="100%" cellpadding="0" cellspacing="0" '
            f'border="0" style="width:100%;border-collapse:collapse;font-size:0;'
            f'line-height:0"><tr><td width="{pct}%" style="padding:0"><table '
            f'role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" '
            f'class="{"holds" if solid else "fails"}" style="width:100%;font-size:0;'
            f'line-height:0"><tr>{cells}</tr></table></td>{rest}</tr></table>')


def odds_html(chart: Mapping[str, Any], tr: Translator = ENGLISH, *,
              styled: bool = True) -> Markup:
    """The chance of each count as a bar (its width), the bid's count marked; a count at
    which the bid holds is a solid bar, one at which it fails a dashed one. ``styled``
    False: without style attributes, for the web pages (their Content-Security-Policy
    refuses inline styles; web.css styles the classes)."""
    drawn = _odds_table(chart, tr)
    return drawn if styled else Markup(_STYLE_ATTRIBUTE.sub("", str(drawn)))


_STYLE_ATTRIBUTE = re.compile(r' style="[^"]*"')


# a chance as the reader's language writes it, remembered: a report's charts and odds say
# some fifty, mostly the same few (pbem.text.wording.percent looks up the language each time)
_percent = remembered(1024)(percent)


def _odds_table(chart: Mapping[str, Any], tr: Translator) -> Markup:
    bars = shown_bars(chart)
    if not bars:
        return Markup("")
    top = max(p for _c, p in bars) or 1.0
    quantity = int(chart["quantity"])
    title = escape(chart_words(chart["title"], tr))
    rows = []
    for count, p in bars:
        mark = (f' <strong>&#9664; {title}</strong>'
                if count == quantity else "")
        weight = "font-weight:bold;" if count == quantity else ""
        rows.append(f'<tr><td align="right" class="count" style="padding:0 6px 0 0;'
                    f'text-align:right;white-space:nowrap;{weight}">{count}</td>'
                    f'<td width="60%" class="bar" style="padding:1px 0;width:60%">'
                    f'{_odds_bar(p / top, _holds(chart, count))}</td>'
                    f'<td class="chance" style="padding:0 0 0 6px;white-space:nowrap;{weight}">'
                    f'{_percent(p, tr)}{mark}</td></tr>')
    caption = escape(_("{question} The chance of each, from what you can see (solid: it "
                       "holds; dashed: it fails).",
                       question=chart_words(chart["question"], tr)).said(tr))
    return Markup(f'<table role="presentation" width="100%" cellpadding="0" cellspacing="0" '
                  f'border="0" class="odds" style="border-collapse:collapse;width:100%;'
                  f'max-width:420px;margin:4px 0;font-size:90%;overflow-wrap:normal;'
                  f'word-break:normal"><caption style="text-align:'
                  f'left;padding-bottom:2px;overflow-wrap:break-word">{caption}</caption>'
                  f'{"".join(rows)}</table>')


@remembered(256)     # each reader of a turn is asked the same questions
def _filled(words: str, indent: str) -> str:
    """``words`` wrapped at 72 columns, each line indented (textwrap: some 15 µs)."""
    return textwrap.fill(words, 72, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)


def odds_text(chart: Mapping[str, Any], indent: str = "  ",
              tr: Translator = ENGLISH) -> str:
    """The chance of each count as a row of # (the bid holds) or . (it fails)."""
    bars = shown_bars(chart)
    if not bars:
        return ""
    top = max(p for _c, p in bars) or 1.0
    quantity = int(chart["quantity"])
    title = chart_words(chart["title"], tr)
    # the words wrapped at 72 columns: German and Czech say them at greater length
    words = [chart_words(chart["question"], tr),
             _("The chance of each, from what you can see (# it holds, . it fails):").said(tr)]
    out = [_filled(w, indent) for w in words]
    mark = f"  <- {title}"
    # the bars narrower when the bid's title would push its line past 72 columns
    longest = max(len(_percent(p, tr)) for _c, p in bars)
    width = max(10, min(ODDS_TEXT_WIDTH, 72 - len(indent) - 5 - max(4, longest) - len(mark)))
    for count, p in bars:
        char = "#" if _holds(chart, count) else "."
        bar = char * max(1, round(width * p / top))
        out.append(f"{indent}{count:>3} {bar:<{width}} {_percent(p, tr):>4}"
                   f"{mark if count == quantity else ''}")
    return "\n".join(out)


def fail_chance(chart: Mapping[str, Any], tr: Translator = ENGLISH) -> float:
    """The chance that the bid fails (a challenge of it wins), from the chart's bars."""
    return sum(float(p) for c, p in chart["bars"] if not _holds(chart, int(c)))

