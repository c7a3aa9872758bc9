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

Their words are said in the reader's language (``tr``, which pbem.render.environment gives each
language's templates): the label, question and title may be messages (pbem.text.wording) or
English text; a plain label is looked up in the catalogue as it is (the kinds' course
labels are marked in pbem.kinds.words).

The functions are Jinja2 globals of the mail and web templates (pbem.render.environment,
pbem.web.app), by the names of GLOBALS. This module is where the pictures are found: the
course is drawn in pbem.render.course_chart, the odds in pbem.render.odds_chart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pbem.render.course_chart import (
    COLOURS,
    COURSE_HTML_COLUMNS,
    COURSE_TEXT_BAR,
    COURSE_TEXT_COLUMNS,
    Course,
    CourseLine,
    course_html,
    course_legend,
    course_svg,
    course_table,
    course_text,
    nice_step,
    sampled,
    turn_ticks,
)
from pbem.render.odds_chart import (
    ODDS_TEXT_WIDTH,
    fail_chance,
    odds_html,
    odds_text,
    shown_bars,
)

__all__ = ["COLOURS", "COURSE_HTML_COLUMNS", "COURSE_TEXT_BAR", "COURSE_TEXT_COLUMNS",
           "GLOBALS", "ODDS_TEXT_WIDTH", "Course", "CourseLine", "course_html",
           "course_legend", "course_svg", "course_table", "course_text", "fail_chance",
           "nice_step", "odds_html", "odds_text", "sampled", "shown_bars", "turn_ticks"]

# the names the templates call them by
GLOBALS: dict[str, Callable[..., Any]] = {
    "course_chart_svg": course_svg, "course_chart_html": course_html,
    "course_chart_text": course_text, "odds_chart_html": odds_html,
    "odds_chart_text": odds_text, "course_chart_legend": course_legend,
    "course_chart_table": course_table, "odds_fail_chance": fail_chance}
