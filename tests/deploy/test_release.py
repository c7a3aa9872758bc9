"""Release hygiene: the licence the package claims is there, the version is written in
one place, the changelog names what changed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pbem

ROOT = Path(__file__).resolve().parents[2]


def test_the_mit_licence_is_shipped() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 the pbem authors\n")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == {"text": "MIT"}


def test_the_version_is_written_once() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    source = ROOT / pyproject["tool"]["hatch"]["version"]["path"]
    written = re.findall(r'^__version__ = "([^"]+)"$', source.read_text("utf-8"), re.M)
    assert written == [pbem.__version__]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pbem.__version__)


def test_the_changelog_has_this_rounds_changes() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for change in ("Private press", "Orders as people write them", "German and Czech mail",
                   "listener hardened", "Kills", "Atomic migrations", "bounces", "No lock-out by forgery",
                   "Real mailboxes", "## Earlier"):
        assert change in text, change
