"""A turn's reports with their shared parts rendered once (Renderer.shared_parts) are the
same bytes as each rendered whole, the slow way: for every kind, in every language, in a
reader's time zone; and a referee's override decides which way a report is rendered."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup

from pbem.render.filters import Shown, seen_by
from pbem.render.reports import Renderer, SharedParts
from pbem.store.paths import packaged_dir
from testkit.reports import play

GAMES = [("postal", "", 5, 7), ("classic", "english DICE 3", 4, 11),
         ("classic", "anniversary DICE 3 EXPOSE on", 3, 13), ("cup", "", 5, 16)]


class Recording(Renderer):
    """The shipped templates, keeping each report's context and its turn's public one."""

    def __init__(self) -> None:
        super().__init__()
        self.publics: list[dict[str, Any]] = []
        self.seen: list[tuple[str, dict[str, Any], int | None]] = []

    def shared_parts(self, name: str, public: Mapping[str, Any],
                     language: str = "en") -> SharedParts | None:
        self.publics.append(copy.deepcopy(dict(public)))
        return super().shared_parts(name, public, language)

    def render(self, name: str, context: Mapping[str, Any], language: str = "en",
               zone: str | None = None, shared: SharedParts | None = None) -> tuple[str, str]:
        public = len(self.publics) - 1 if shared is not None else None
        self.seen.append((name, copy.deepcopy(dict(context)), public))
        return super().render(name, context, language, zone, shared)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[Recording]:
    tmp = tmp_path_factory.mktemp("shared")
    out = []
    for kind, options, players, seed in GAMES:
        renderer = Recording()
        play(tmp, kind, options, players, seed, renderer=renderer)
        out.append(renderer)
    return out


@pytest.mark.parametrize("language", ["en", "de", "cs"])
def test_a_turn_rendered_with_shared_parts_is_byte_identical(
        recorded: list[Recording], language: str) -> None:
    plain = Renderer()
    for renderer in recorded:
        shared = [(name, context, public) for name, context, public in renderer.seen
                  if public is not None]
        # every report of every turn took the shared way, the watchers' too, and the
        # final report's course and standings among them
        assert len(shared) == len(renderer.seen)
        assert any(c["you"] is None for _, c, _ in shared)
        assert any(c["course"] for _, c, _ in shared)
        parts: dict[int, SharedParts | None] = {}
        for name, context, public in shared:
            assert public is not None
            if public not in parts:
                parts[public] = plain.shared_parts(name, renderer.publics[public], language)
            assert parts[public] is not None
            for zone in (None, "Asia/Kolkata"):
                whole = plain.render(name, context, language, zone)
                assert plain.render(name, context, language, zone, parts[public]) == whole


def test_a_shared_part_reads_nothing_of_one_reader(recorded: list[Recording]) -> None:
    """The public context has no reader's notes, talk or key: a shared template that
    reads one fails (StrictUndefined) instead of showing it to every reader."""
    public = recorded[0].publics[-1]
    for key in ("notes", "talk", "key", "private_link", "timezone", "bid_charts"):
        assert key not in public
    assert public["you"] is None and public["view"]["key"] is None


def _override(folder: Path, *names: str) -> None:
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text((packaged_dir("templates") / name).read_text())


def test_an_old_override_renders_the_slow_way(recorded: list[Recording],
                                             tmp_path: Path) -> None:
    """An override of a report written before shared parts existed (here: the report
    as it was, every part inline) is rendered whole for each reader, as before."""
    name, context, public = next(s for s in recorded[0].seen if s[2] is not None)
    assert public is not None
    (tmp_path / "postal_report.txt.j2").write_text("Turn {{ turn }}, {{ commitment }}\n")
    assert Renderer(tmp_path).shared_parts(name, recorded[0].publics[public]) is None
    text, _html = Renderer(tmp_path).render(name, context)
    assert text == f"Turn {context['turn']}, {context['commitment']}\n"


def test_an_override_that_declares_its_shared_part_is_rendered_once(
        recorded: list[Recording], tmp_path: Path) -> None:
    name, context, public = next(s for s in recorded[0].seen if s[2] is not None)
    assert public is not None
    _override(tmp_path, "postal_report.txt.j2", "postal_report_shared.txt.j2")
    with (tmp_path / "postal_report_shared.txt.j2").open("a") as shared:
        shared.write("{% set fair_dice %}SHARED {{ game }}\n{% endset %}\n")
    renderer = Renderer(tmp_path)
    parts = renderer.shared_parts(name, recorded[0].publics[public])
    assert parts is not None and parts.text["fair_dice"] == f"SHARED {context['game']}\n"
    text, _html = renderer.render(name, context, shared=parts)
    assert f"\nSHARED {context['game']}\n" in text
    # the slow way imports the same shared template: the same bytes
    assert renderer.render(name, context) == (text, _html)


def test_seen_by_puts_a_part_together_for_its_reader() -> None:
    pieces = ["head\n", {1: "1 you\n", None: "1 Ann\n"}, {2: "2 you\n", None: "2 Bob\n"}]
    assert seen_by(pieces, 1) == "head\n1 you\n2 Bob\n"
    assert seen_by(pieces, 2) == "head\n1 Ann\n2 you\n"
    assert seen_by(pieces, None) == seen_by(pieces, 3) == "head\n1 Ann\n2 Bob\n"
    marked = seen_by([Markup("<tr>"), {None: Markup("<td>&lt;</td>")}], None)
    assert type(marked) is Markup and marked == "<tr><td>&lt;</td>"
    # text cleaned once a turn (Shown) stays cleaned; anything else is cleaned on output
    assert type(seen_by([Shown("a"), {None: Shown("b")}], None)) is Shown
    assert type(seen_by([Shown("a"), "b\u202e"], None)) is str


@given(st.lists(st.one_of(st.text(max_size=5),
                          st.dictionaries(st.sampled_from([1, 2, 3, None]),
                                          st.text(max_size=5), min_size=1)
                          .map(lambda d: {**d, None: d.get(None, "")})), max_size=8),
       st.sampled_from([1, 2, 3, None]))
def test_seen_by_is_each_readers_pieces_joined(pieces: list[Any], you: int | None) -> None:
    want = "".join(p if isinstance(p, str) else p.get(you, p[None]) for p in pieces)
    assert seen_by(pieces, you) == want


def test_a_shared_part_is_cleaned_once_a_turn(recorded: list[Recording]) -> None:
    """Text parts come cleaned (Shown): a reader's report puts them out as they are."""
    parts = Renderer().shared_parts("postal_report", recorded[0].publics[-1])
    assert parts is not None
    assert type(parts.text["fair_dice"]) is Shown
    assert all(type(text) is Shown for row in parts.text["players_table"]
               for text in row.values())
    assert type(parts.html["fair_dice"]) is Markup
