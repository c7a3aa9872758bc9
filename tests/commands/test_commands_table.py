"""The one command table (pbem.commands.registry): what drives parsing, dispatch,
permission and HELP for player orders, desk commands and referee commands."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pbem.commands.context import CommandContext, MailCommand
from pbem.commands.registry import move_names, permitted, player_commands, referee_commands, run
from pbem.kinds import KINDS
from pbem.orders.parsing import parse_text
from pbem.services.post import tagged
from pbem.text.errors import Refusal


class Line:
    def __init__(self, number: int, text: str) -> None:
        self.number, self.text = number, text


def ctx(**kw: object) -> CommandContext:
    return CommandContext(session=None, post=None, now=datetime(2026, 1, 1, tzinfo=UTC),  # type: ignore[arg-type]
                          **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", [None, *KINDS.values()])
def test_player_table_names_are_unique_and_every_desk_command_acts(kind) -> None:
    table = player_commands(kind)
    names = [c.name for c in table]
    assert len(names) == len(set(names))
    for command in table:
        if command.name in move_names() or command.name in ("GAME", "KEY", "TURN"):
            # read by the move taker / identify
            assert not isinstance(command, MailCommand), command.name
            assert command.phase == ("move" if command.name in move_names() else "line")
        else:
            assert isinstance(command, MailCommand), command.name
        assert command.who in ("player", "anyone")


def test_referee_table_is_the_referees_only() -> None:
    table = referee_commands()
    assert len({c.name for c in table}) == len(table)
    assert all(c.who == "referee" for c in table)
    assert [c.name for c in table if not isinstance(c, MailCommand)] == ["KEY"]


def test_help_and_status_answer_alone_help_first() -> None:
    by_name = {c.name: c for c in player_commands()}
    # replies answer only a mail with nothing else to do; the one anyone may ask comes first
    assert by_name["HELP"].phase == by_name["STATUS"].phase == "reply"
    assert by_name["HELP"].who == "anyone" and by_name["STATUS"].who == "player"
    assert all(c.phase != "reply" for c in player_commands() if c.name not in ("HELP", "STATUS"))


def test_permission_follows_who() -> None:
    table = {c.name: c for c in player_commands()}
    stranger, referee = ctx(), ctx(by_referee=True)
    assert permitted(stranger, table["JOIN"]) and permitted(stranger, table["HELP"])
    assert not permitted(stranger, table["SAY"]) and not permitted(stranger, table["LEAVE"])
    assert not permitted(stranger, referee_commands()[1])
    assert permitted(referee, referee_commands()[1])


def test_a_command_that_needs_a_player_is_refused_with_its_line() -> None:
    parsed = parse_text([Line(3, "SAY hello")], player_commands())
    with pytest.raises(Refusal) as refused:
        run(ctx(), parsed.orders)
    problem = refused.value.problems[0]    # quoting the line
    assert (problem.line_no, problem.line) == (3, "SAY hello")
    assert problem.message == "SAY needs to know who you are"


def test_the_subject_tag() -> None:
    assert str(tagged("cup-1", "turn 3 report")) == "[bluff cup-1] turn 3 report"
