"""The corpus of orders as people write them (tests/corpus/orders_<language>.tsv): each
phrasing with the order it must become, or "ambiguous" (not acted on: the answer offers
its readings), "refuse" (a problem quoting the line) or "prose" (ignored). Zero
misreadings: every line's reading is exactly the one expected."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pbem.commands.registry import player_commands
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.commands import Order
from pbem.orders.parsing import DOUBTS, parse_text
from pbem.rules.dice import STAR
from pbem.rules.ladder import Bid

BLUFF = player_commands(KINDS["postal"])
CORPUS = Path(__file__).resolve().parent.parent / "corpus"
LANGUAGES = ("en", "de", "cs")


def rows(language: str) -> list[dict[str, str]]:
    with (CORPUS / f"orders_{language}.tsv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def face(value: object) -> str:
    return "*" if value == STAR else str(value)


def said(order: Order) -> str:
    """An order as the corpus writes it: "BID 3 5", "BID 4 *", "CHALLENGE", "EXPOSE 3 *"."""
    args = order.args
    if isinstance(args, Bid):
        return f"{order.name} {args.quantity} {face(args.face)}"
    if isinstance(args, tuple):
        return " ".join((order.name, *map(face, args)))
    return order.name if args is None else f"{order.name} {args}"


def reading(line: str) -> str:
    parsed = parse_text([BodyLine(1, line)], BLUFF)
    if parsed.orders:
        return " | ".join(said(o) for o in parsed.orders)
    if parsed.problems:
        (problem,) = parsed.problems
        return "ambiguous" if problem.message in DOUBTS.values() else "refuse"
    return "prose"


CASES = [(lang, row) for lang in LANGUAGES for row in rows(lang)]


@pytest.mark.parametrize(("language", "row"), CASES,
                         ids=[f"{lang}:{row['phrasing']}" for lang, row in CASES])
def test_each_phrasing_reads_as_expected(language: str, row: dict[str, str]) -> None:
    assert (row["phrasing"], reading(row["phrasing"])) == (row["phrasing"], row["expected"])


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_corpus_is_large_and_says_where_each_line_comes_from(language: str) -> None:
    lines = rows(language)
    assert len(lines) >= 150
    assert all(row["source"].strip() for row in lines)
    assert len({row["phrasing"] for row in lines}) == len(lines)
    kinds = {row["expected"].split()[0] for row in lines}
    assert {"BID", "CHALLENGE", "ambiguous", "prose", "refuse"} <= kinds


def test_a_language_order_reads_in_its_language() -> None:
    for language in ("de", "cs"):
        for row in rows(language):
            parsed = parse_text([BodyLine(1, row["phrasing"])], BLUFF)
            if parsed.orders and row["source"].startswith(("seed", "issue")):
                assert parsed.orders[0].language in (language, None), row
