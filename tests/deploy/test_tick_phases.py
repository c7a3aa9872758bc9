"""bench/tick_phases.py (``bench/mail_throughput.py --phases``) names every mark a tick
makes: a mark added to Server.tick (the composer's ``compose>``) once crashed its report
with a KeyError after a whole run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.tick_phases import PARTS, Phases

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"""\bmark(?:s|ed)\(\s*["']([a-z]+[<>])["']\s*\)""")


def made_marks() -> set[str]:
    """The tags pbem's code passes to its marks (pbem.services.progress.Marks)."""
    return {tag for path in (ROOT / "pbem").rglob("*.py")
            for tag in MARK.findall(path.read_text(encoding="utf-8"))}


def test_every_mark_a_tick_makes_begins_a_named_part() -> None:
    made = made_marks()
    assert {"tick>", "fetch>", "mail>", "compose>", "close>"} <= made, made
    # a tick's end ends the last part and begins none
    assert made - {"tick<"} <= set(PARTS), sorted(made - {"tick<"} - set(PARTS))


def test_a_turn_tick_is_cut_into_its_parts(capsys: pytest.CaptureFixture[str]) -> None:
    busy = iter(range(100))
    phases = Phases(lambda: float(next(busy)))
    for tag in ["tick>", "fetch>", "fetch<", *["mail>", "mail<"] * 3, "clock>", "clock<",
                "compose>", "compose<", "close>", "close<", "new-mark>", "tick<"]:
        phases.mark(tag)
    phases.report()
    out = capsys.readouterr().out
    assert "(1 turn ticks" in out
    for part in ("the reports still to make", "the order that resolves the turn",
                 "waiting for the last mails to leave", "new-mark>"):
        assert part in out, out
