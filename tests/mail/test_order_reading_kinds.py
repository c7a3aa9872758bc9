"""The reading of orders as people write them knows each game kind's orders: a bid only
where BID is an order, a challenge said as people say it is Cup of Bluff's BLUFF there
(never "accepting", which may mean OK), and the referee's mail reads no bids at all."""

from __future__ import annotations

import pytest

from pbem.commands.registry import player_commands, referee_commands
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.parsing import parse_text


def names(line: str, commands) -> list[str]:  # type: ignore[no-untyped-def]
    parsed = parse_text([BodyLine(1, line)], commands)
    return [o.name for o in parsed.orders]


@pytest.mark.parametrize(("line", "name"), [
    ("I don't believe it", "BLUFF"), ("Tomu nevěřím!", "BLUFF"), ("Becher hoch!", "BLUFF"),
    ("OK, thanks", "OK"), ("Hallo, ANNOUNCE 12 TO 3", "ANNOUNCE"),
])
def test_cup_reads_its_own_orders(line: str, name: str) -> None:
    assert names(line, player_commands(KINDS["cup"])) == [name]


@pytest.mark.parametrize("line", ["Přijímám sázku", "I take it", "Drei Fünfer!",
                                  "I bid three fives", "3 pětky"])
def test_cup_reads_no_bid_and_no_acceptance(line: str) -> None:
    parsed = parse_text([BodyLine(1, line)], player_commands(KINDS["cup"]))
    assert parsed.orders == [] and parsed.problems == []


@pytest.mark.parametrize(("line", "name"), [
    ("Přijímám sázku", "CHALLENGE"), ("I take it", "CHALLENGE"), ("Drei Fünfer!", "BID"),
])
def test_bluff_kinds_read_bids_and_acceptance(line: str, name: str) -> None:
    for kind in ("postal", "classic"):
        assert names(line, player_commands(KINDS[kind])) == [name]


@pytest.mark.parametrize("line", ["Drei Fünfer!", "I bid three fives", "Tomu nevěřím!"])
def test_referee_mail_reads_no_moves(line: str) -> None:
    parsed = parse_text([BodyLine(1, line)], referee_commands())
    assert parsed.orders == [] and parsed.problems == []


def test_help_with_thanks_is_help_for_the_referee_too() -> None:
    assert names("HELP please", referee_commands()) == ["HELP"]
