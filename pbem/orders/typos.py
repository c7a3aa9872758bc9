"""Did you mean: the order word a mistyped word may be.

A word is a slip of an order word when one letter is left out, one added or two
neighbours swapped (BDI, CHALENGE, EXPSOE), or one letter changed in a long word; a long
word's near spelling (ANOUNCE) is a typo too. A short word of its own (DID, HEY, SENT) is
never taken for another (BID, KEY, ABSENT), nor a word of its own in another language
(NOT_TYPOS). pbem.orders.parsing offers the guess for a line's first word;
pbem.orders.reading asks whether a word is a verb of bidding mistyped ("Ich beite drei
Dreier").

Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

# words of their own that are one slip from an order word of another language
NOT_TYPOS = frozenset({"ZWEIFEL", "ZEIGT", "HILFT", "JAZYKY", "SLEDUJI", "SEZNAM"})


def one_slip(word: str, name: str) -> bool:
    """``word`` is ``name`` with one letter left out, one added, or two neighbours swapped
    (a letter changed counts too in a name of six letters or more)."""
    if word == name or abs(len(word) - len(name)) > 1:
        return False
    if len(word) == len(name):
        diff = [i for i, (a, b) in enumerate(zip(word, name, strict=True)) if a != b]
        if len(diff) == 2 and diff[1] == diff[0] + 1:
            return word[diff[0]] == name[diff[1]] and word[diff[1]] == name[diff[0]]
        return len(diff) == 1 and len(name) >= 6
    short, long_ = (word, name) if len(word) < len(name) else (name, word)
    if len(long_) < 4:
        return False
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def mistyped(word: str, names: Sequence[str]) -> str | None:
    """The order word that ``word`` is a typo of, if any: a letter missing, one too many or
    two swapped (BDI, CHALENGE, EXPSOE), or a near spelling of a long word (ANOUNCE);
    never a different short word (DID, HEY, SENT are words of their own, not BID, KEY,
    ABSENT). Only the word itself counts, never what else the line holds."""
    letters = "".join(ch for ch in word if ch.isalpha())
    if len(letters) < 2:
        return None
    if letters != word and letters in names:   # "BID\ufffd", "B.I.D": the word and junk
        return letters
    word = letters
    for name in names:
        if one_slip(word, name):
            return name
    close = difflib.get_close_matches(word, [n for n in names if len(n) >= 6], n=1,
                                      cutoff=0.85)
    return close[0] if close else None
