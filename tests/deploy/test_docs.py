"""The documentation holds together: the README stays short, every relative link resolves.

The README is for users (at most 400 lines); reference material lives in docs/. A link
to a file that moved, or to a heading that was renamed, fails here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 400
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "bench" / "README.md",
            *sorted((ROOT / "docs").glob("*.md"))]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {anchor(line.lstrip("#")) for line in FENCE.sub("", text).splitlines()
            if line.startswith("#")}


def broken_links(document: Path) -> list[str]:
    """Each relative link of a Markdown file whose file (or heading) does not exist."""
    text = document.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target):      # https:, mailto: ...
            continue
        path, _, fragment = target.partition("#")
        file = (document.parent / path).resolve() if path else document
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and file.suffix == ".md" and \
                fragment not in anchors(file.read_text(encoding="utf-8")):
            broken.append(f"{target} (no such heading)")
    return broken


def test_readme_is_at_most_400_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines"


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    assert broken_links(document) == []


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_stand_on_their_own(document: Path) -> None:
    """Nothing points out of the repository (../shared/ and the like)."""
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        resolved = (document.parent / target.partition("#")[0]).resolve()
        assert re.match(r"[a-z]+:", target) or resolved.is_relative_to(ROOT), target


def test_the_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## Its part, 1.25x\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#its-part-125x) [self](#page) [web](https://x.test)\n"
                    "[gone](missing.md) [bad](other.md#nowhere)\n\n```\n[code](not-a-link.md)\n```\n",
                    encoding="utf-8")
    assert broken_links(page) == ["missing.md (no such file)", "other.md#nowhere (no such heading)"]
