"""No remote content in the HTML we send: no image, style sheet or background that a
mail client would fetch from the network.

Filters count remote images against a mail (they are how tracking pixels work),
and clients block them anyway. The shipped templates have none; this guard
keeps it so when a referee's own templates (``templates_dir``) add one: a
remote image becomes its alt text, a remote attribute or style sheet is dropped.
"""

from __future__ import annotations

import logging
import re

from pbem.text.wording import plural

log = logging.getLogger(__name__)

_REMOTE = r"\s*['\"]?\s*(?:https?:|ftp:|//)"
# a quick look first: mail without any of these is returned as it is
_SUSPECT = re.compile(rf"(?:src|srcset|background|poster|data|lowsrc|dynsrc)\s*={_REMOTE}|url\({_REMOTE}|"
                      r"@import|<link\b", re.IGNORECASE)
# what every match of _SUSPECT contains (lowercased): a plain substring test rules out
# most mail in microseconds, where the regex takes about a millisecond a report
_NEEDLES = ("http", "ftp:", "//", "@import", "<link")
_REMOTE_URL = re.compile(rf"^{_REMOTE}", re.IGNORECASE)
_CSS_URL = re.compile(rf"url\({_REMOTE}[^)]*\)", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"@import[^;]*;?", re.IGNORECASE)
_FETCHED = ("src", "srcset", "background", "poster", "data", "lowsrc", "dynsrc")


def is_remote(url: str) -> bool:
    return bool(_REMOTE_URL.match(url))


def may_hold_remote_content(html: str) -> bool:
    """False when ``html`` surely loads nothing from the network (the quick look)."""
    lower = html.lower()
    return any(needle in lower for needle in _NEEDLES)


def without_remote_content(html: str) -> str:
    """``html`` with nothing a mail client would load from the network."""
    if not may_hold_remote_content(html) or not _SUSPECT.search(html):
        return html
    # bs4 is heavy (about 0.1 s to import) and only needed for the rare suspect HTML
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(html, "html.parser")
    dropped = 0
    for link in soup.find_all("link"):
        link.decompose()
        dropped += 1
    for style in soup.find_all("style"):
        css = style.string or ""
        cleaned = _CSS_IMPORT.sub("", _CSS_URL.sub("none", css))
        if cleaned != css:
            style.string = cleaned
            dropped += 1
    for tag in soup.find_all(True):
        if tag.name == "img" and is_remote(str(tag.get("src", ""))):
            tag.replace_with(str(tag.get("alt", "")))
            dropped += 1
            continue
        for attr in _FETCHED:
            if attr in tag.attrs and is_remote(str(tag.attrs[attr])):
                del tag.attrs[attr]
                dropped += 1
        style_attr = tag.attrs.get("style")
        if isinstance(style_attr, str) and _CSS_URL.search(style_attr):
            tag.attrs["style"] = _CSS_URL.sub("none", style_attr)
            dropped += 1
    if dropped:
        log.warning("removed %s from a mail's HTML",
                    plural("{n} remote image or style", "{n} remote images or styles", dropped))
    return str(soup)
