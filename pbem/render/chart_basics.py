"""What the two charts (pbem.render.course_chart, pbem.render.odds_chart) share: their own
words said in the reader's language, and the colours of the mail's bars."""

from __future__ import annotations

from typing import Any

from pbem.text.wording import Translator, say


def chart_words(value: Any, tr: Translator) -> str:
    """A chart's own words (a label, question or title) in the reader's language."""
    if isinstance(value, str):
        return tr.gettext(value) if value else value
    return str(say(value, tr))


# the mail's bars: a middle lightness, so that they show on white and, turned over by a
# mail program's dark mode, on black
BAR = "#3b6ea5"
BAR_EDGE = "#1d4f86"
