"""The corpus of real reply shapes (tests/mail/replies/corpus.toml), each made a reply to a
real report of a running game, read as the referee reads it (pure: no database, no mail
server; tests/e2e/test_e2e_replies.py sends the same mails through Dovecot): one order as
the new text is exactly what is taken; with no order, nothing is, and what was read is only
the new text; an order only in the quoted report is never taken."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from pbem.commands.registry import player_commands
from pbem.demo.robot_client import parse_mail
from pbem.kinds import KINDS
from pbem.mail.quotecut import reply_text
from pbem.mail.read import read_message
from pbem.mail.sent import sent_texts
from pbem.orders.commands import ParsedText
from pbem.orders.parsing import parse_text
from testkit.desk import SERVER, Clock, make_server, outbox_rows, started_game
from tests.mail.replies.build import ORDER, THANKS, VARIANTS, Variant, reply, shapes

SHAPES = shapes()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    """The raw report to the player who opens the first round of a classic game, and
    that player's address."""
    server = make_server(tmp_path_factory.mktemp("corpus"), Clock())
    started_game(server, "WAIT DEADLINE 48 RULES classic DICE 2")
    for row in outbox_rows(server):
        if row.kind == "report" and "You must open" in str(parse_mail(row.raw).get_body(
                ("plain",)).get_content()):   # type: ignore[union-attr]
            return row.raw, row.rcpts_json.strip('[]"')
    raise AssertionError("no opener's report")


def read(shape: dict[str, Any], variant: Variant, report: tuple[bytes, str]) -> tuple[
        ParsedText, tuple[str, ...]]:
    raw, player = report
    msg = read_message(reply(shape, parse_mail(raw), variant, player, SERVER))
    assert msg.readable, msg.problem
    found = reply_text(msg.text, sent_texts(raw))
    lines, ignored = (found.lines, found.ignored) if found else (msg.lines, msg.ignored)
    return parse_text(lines, player_commands(KINDS["classic"])), ignored


def test_the_corpus_has_forty_shapes_or_more_text_and_html() -> None:
    names = [s["name"] for s in SHAPES]
    assert len(set(names)) == len(names) >= 40
    assert {s["mime"] for s in SHAPES} == {"text", "html", "alternative"}
    assert all(s["source"] and s["path"] and s["licence"] for s in SHAPES)


@pytest.mark.parametrize("shape", SHAPES, ids=[s["name"] for s in SHAPES])
def test_one_order_as_new_text_is_exactly_what_is_taken(
        shape: dict[str, Any], report: tuple[bytes, str]) -> None:
    parsed, ignored = read(shape, VARIANTS[0], report)
    assert not parsed.problems, [p.message for p in parsed.problems]
    assert [o.line for o in parsed.orders] == [ORDER]
    if shape["mime"] == "text":   # an HTML quote may be dropped with its element, unseen
        assert ignored, "the quote was cut silently"


@pytest.mark.parametrize("shape", SHAPES, ids=[s["name"] for s in SHAPES])
def test_no_order_reads_only_the_new_text(shape: dict[str, Any],
                                          report: tuple[bytes, str]) -> None:
    parsed, _ = read(shape, VARIANTS[1], report)
    assert not parsed.orders and not parsed.problems
    read_lines = {line.text.strip() for line in parsed.prose}
    assert THANKS in read_lines
    ours = {line.strip() for text in sent_texts(report[0]) for line in text.splitlines()
            if line.strip()}
    assert not read_lines & ours, "a line of the quoted report was read as new text"


@pytest.mark.parametrize("shape", SHAPES, ids=[s["name"] for s in SHAPES])
def test_an_order_only_in_the_quoted_report_is_not_taken(
        shape: dict[str, Any], report: tuple[bytes, str]) -> None:
    parsed, _ = read(shape, VARIANTS[2], report)
    assert not parsed.orders and not parsed.problems


def test_the_report_is_a_real_one(report: tuple[bytes, str]) -> None:
    msg: EmailMessage = parse_mail(report[0])
    assert "CLASSIC BLUFF BY MAIL" in str(msg.get_body(("plain",)).get_content())  # type: ignore[union-attr]
    assert Path(__file__).parent.joinpath("replies", "corpus.toml").exists()
