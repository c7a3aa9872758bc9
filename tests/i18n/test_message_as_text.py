"""A message compares, is searched and measured as its English text (code and tests that
took it for a str keep working); a capitalized one starts a sentence in any language;
how far off a deadline is reads the same as a message as it did as text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from pbem.text.deadlines import relative, relative_said
from pbem.text.i18n import translator
from pbem.text.wording import _, _n

words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@given(words, words)
def test_a_message_is_its_english_text_to_compare_and_search(value: str, part: str) -> None:
    m = _("no game is called {name}", name=value)
    english = f"no game is called {value}"
    assert m == english and len(m) == len(english)
    # equal messages hash alike (a cache of said messages finds them); a Message is not a
    # dict key in place of its text (its hash is not formatted English: that cost a
    # report's render 10%)
    assert hash(m) == hash(_("no game is called {name}", name=value))
    assert (part in m) == (part in english)
    assert m.startswith("no game") and m.endswith(value)
    assert m == _("no game is called {name}", name=value)
    assert m != _("no game is called {name}", name=value + "x")


@given(st.integers(min_value=0, max_value=40))
def test_a_capitalized_message_starts_upper_case_in_every_language(n: int) -> None:
    m = _n("{n} attachment was ignored: {shown}", "{n} attachments were ignored: {shown}",
           n, shown="x.pdf")
    for language in ("en", "de", "cs"):
        plain, capital = m.said(translator(language)), m.capitalized().said(translator(language))
        assert capital == plain[:1].upper() + plain[1:]


@given(st.integers(min_value=-10 ** 6, max_value=10 ** 7))
def test_relative_is_the_english_of_its_message(seconds: int) -> None:
    deadline = NOW + timedelta(seconds=seconds)
    said = relative_said(deadline, NOW)
    assert said is not None and relative(deadline, NOW) == str(said)
    assert str(said) == "passed" or str(said).startswith("in ")
    assert said.said(translator("cs")).startswith(("ještě ", "uplynula", "za méně"))
    assert relative(None, NOW) is None
