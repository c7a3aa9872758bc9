"""How a count is said: the one plural rule of every mail, page, answer and log line.

``ngettext(singular, plural, n)`` has gettext's argument order and meaning, so a later
translation swaps ``gettext.ngettext`` in here and nowhere else. ``plural`` fills the
count into the form it picked: ``plural("{n} die", "{n} dice", 3)`` -> "3 dice". Templates
have both as globals (pbem.render and the web pages).
"""

from __future__ import annotations

from collections.abc import Iterable


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for ``n`` (English: only exactly one is singular; -1 and 0 are plural)."""
    return singular if n == 1 else plural


def plural(singular: str, plural: str, n: int) -> str:
    """The form for ``n``, with ``{n}`` in it replaced by ``n``."""
    return ngettext(singular, plural, n).replace("{n}", str(n))


def listing(items: Iterable[object], none: str = "nobody") -> str:
    """Items as a reader writes them: "1", "1 and 3", "1, 2 and 4" (``none`` if empty),
    never a Python list."""
    words = [str(item) for item in items]
    if not words:
        return none
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def percent(p: float) -> str:
    """A probability as a whole percentage: 0.4567 -> "46%". A value that is neither 0
    nor 1 never shows as "0%" or "100%": it is written "<1%" or ">99%", so that a player
    is not told a bid is certain when it is not (the reports' odds and their charts)."""
    if 0.0 < p < 0.005:
        return "<1%"
    if 0.995 <= p < 1.0:
        return ">99%"
    return f"{round(p * 100):d}%"
