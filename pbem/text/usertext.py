"""What a player typed, made safe to show among the server's own words.

Anyone can JOIN an open game, so a name (and any talk) may carry a right-to-left override
(U+202E) that reverses the server's text after it, or an ESC that drives the reader's
terminal. ``shown`` drops the bidi controls (embeddings, overrides, isolates, marks) and
the C0/C1 control characters, keeping line breaks and tabs (a line separator becomes a
line break). Letters of any script stay as they are: a Hebrew or Arabic name still reads
right to left, it just cannot turn the text around it. Every template output passes
through it (pbem.render.reports, pbem.web.app); a header that carries a name uses it too.
"""

from __future__ import annotations

import re

# C0 but \t and \n, DEL, C1; the bidi formatting characters (LRM, RLM, ALM, LRE..RLO,
# LRI..PDI); \r is dropped (a text part's line ends are written by the mail layer).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")


def shown(text: str) -> str:
    """``text`` without bidi controls and control characters (but line breaks and tabs)."""
    # str.isprintable is False for every character either pattern takes (Cc, Cf, Zl, Zp)
    # and runs in C: most of what a template puts out is one printable line (a fifth of
    # rendering was these searches, bench/render.py)
    if text.isprintable() or (_UNSAFE.search(text) is None
                              and _LINE_SEPARATORS.search(text) is None):
        return text
    return _UNSAFE.sub("", _LINE_SEPARATORS.sub("\n", text))
