"""Percentages are written as the reader's language writes them (CLDR, through Babel):
"46%" in English, "46 %" with a no-break space in German and Czech."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pbem.render.charts import odds_html, odds_text
from pbem.render.filters import pct
from pbem.render.reports import Renderer
from pbem.text.i18n import translator
from pbem.text.wording import ENGLISH, language_of, percent
from pbem.text.zones import Reader

NO_BREAK = "[\u00a0\u202f]"     # CLDR's (narrow) no-break space before the sign


def test_german_and_czech_put_a_no_break_space_before_the_sign() -> None:
    assert percent(0.4567) == "46%"
    assert percent(0.005) == "<1%" and percent(0.995) == ">99%"   # round() halves to even
    for language in ("de", "cs"):
        tr = translator(language)
        assert re.fullmatch(f"46{NO_BREAK}%", percent(0.4567, tr)), language
        assert re.fullmatch(f"<1{NO_BREAK}%", percent(0.001, tr))
        assert re.fullmatch(f">99{NO_BREAK}%", percent(0.999, tr))
        assert re.fullmatch(f"100{NO_BREAK}%", percent(1.0, tr))
        # a reader (a translator with a time zone) is the same language
        assert percent(0.5, Reader(tr, "Europe/Prague")) == percent(0.5, tr)


def test_the_language_of_a_translator() -> None:
    assert [language_of(translator(code)) for code in ("en", "de", "cs")] == ["en", "de", "cs"]
    assert language_of(ENGLISH) == "en"


@given(st.floats(0.0, 1.0), st.sampled_from(["de", "cs"]))
def test_every_language_says_the_same_number(p: float, language: str) -> None:
    english = percent(p)
    said = percent(p, translator(language))
    assert re.sub(NO_BREAK, "", said) == english
    assert re.fullmatch(r"[<>]?\d{1,3}%", english)
    if 0.0 < p < 1.0:
        assert english not in ("0%", "100%")


def test_the_odds_chart_and_the_templates_write_the_readers_percent() -> None:
    chart = {"title": "1 three", "quantity": 1, "rule": "at_least",
             "question": "How many threes?", "bars": [[0, 0.25], [1, 0.5], [2, 0.25]]}
    german = translator("de")
    assert re.search(f" 50{NO_BREAK}%  <- ", odds_text(chart, tr=german)), odds_text(
        chart, tr=german)
    assert re.search(f">50{NO_BREAK}%", str(odds_html(chart, german)))
    assert "50%" in odds_text(chart)
    template = Renderer().environment("cs").from_string("{{ p|pct }}")
    assert re.fullmatch(f"46{NO_BREAK}%", template.render(p=0.46))
    assert pct(None) == "?"


@given(st.floats(0.0, 1.0), st.sampled_from(["en", "de", "cs"]))
def test_a_remembered_percent_is_babels(p: float, language: str) -> None:
    """percent remembers each whole percentage a language writes: the same text as Babel's
    format_percent of the rounded value gives."""
    from babel.numbers import format_percent

    whole = round(p * 100)
    sign = "<" if whole == 0 and p > 0 else ">" if whole == 100 and p < 1 else ""
    shown = {"<": 0.01, ">": 0.99}.get(sign, whole / 100)
    expected = sign + format_percent(shown, locale=language)
    assert percent(p, translator(language)) == expected
    assert percent(p, translator(language)) == expected   # remembered: the same
