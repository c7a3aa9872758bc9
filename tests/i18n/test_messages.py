"""Messages said later in their reader's language (pbem.text.wording.Message)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pbem.text.i18n import best_language
from pbem.text.wording import ENGLISH, _, _n, joined, listing, say

words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


class Shouting:
    """A toy language: every source said in capitals (a fake for pure logic)."""

    def gettext(self, message: str, /) -> str:
        return re.sub(r"\{\w*\}|[^{}]+", lambda m: m[0] if m[0].startswith("{")
                      else m[0].upper(), message)

    def ngettext(self, singular: str, plural: str, n: int, /) -> str:
        return self.gettext(singular if n == 1 else plural)


def test_a_message_is_english_until_said_elsewhere() -> None:
    m = _("no game is called {name}", name="x")
    assert str(m) == "no game is called x"
    assert m.said(Shouting()) == "NO GAME IS CALLED x"      # the value is not translated


def test_values_that_are_messages_are_said_in_the_same_language() -> None:
    m = _("{name} said", name=_("nobody"))
    assert m.said(Shouting()) == "NOBODY SAID"


@given(st.integers(min_value=-3, max_value=1000))
def test_a_count_picks_its_form_and_is_filled_in(n: int) -> None:
    assert str(_n("{n} die", "{n} dice", n)) == f"{n} {'die' if n == 1 else 'dice'}"


@given(st.lists(words, max_size=6), words)
def test_said_never_loses_a_value_with_braces(items: list[str], name: str) -> None:
    """A value full of braces is data, not a field: said as it is."""
    assert str(_("x {name} y", name=name)) == f"x {name} y"
    assert str(joined(items, "; ")) == "; ".join(items)


def test_a_translation_that_lacks_a_field_keeps_the_rest() -> None:
    class Broken:
        def gettext(self, message: str, /) -> str:
            return "{missing} and {name}"

        def ngettext(self, s: str, p: str, n: int, /) -> str:
            return s

    assert _("x {name}", name="v").said(Broken()) == "{missing} and v"


def test_listing_in_a_language() -> None:
    assert listing([1, 2, 3]) == "1, 2 and 3"
    assert listing([1, 2], tr=Shouting()) == "1 AND 2"
    assert listing([], tr=Shouting()) == "NOBODY"
    assert say([_("nobody"), "x"], ENGLISH) == ["nobody", "x"]


def test_the_best_language_of_an_accept_language_header() -> None:
    assert best_language("de-AT,de;q=0.9,en;q=0.5") == "de"
    assert best_language("fr, cs;q=0.8, de;q=0.7") == "cs"
    assert best_language("en;q=0.1, cs;q=0") == "en"
    assert best_language("fr") == "en"
    assert best_language(None, "de") == "de"
    assert best_language("x;q=abc, de") == "de"


@given(st.text(max_size=300))
def test_any_accept_language_header_gives_a_language(header: str) -> None:
    assert best_language(header) in ("en", "de", "cs")
