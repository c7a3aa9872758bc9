"""The registry (pbem.commands.registry): the tables are loops over one list of
declarations; HELP, the parser and dispatch read them; HELP runs through run() on a real
SQLite file database."""

from __future__ import annotations

from email import message_from_bytes

from hypothesis import given
from hypothesis import strategies as st

from pbem.commands.context import MailCommand
from pbem.commands.registry import DECLARED, move_commands, player_commands, referee_commands
from pbem.kinds import KINDS
from pbem.mail.text import BodyLine
from pbem.orders.guidance import help_lines
from pbem.orders.parsing import parse_text
from pbem.runner.server import Server
from testkit.desk import last_text
from testkit.deskrun import player, referee
from testkit.stored import outbound_rows

EVERY_TABLE = [player_commands(), referee_commands(),
               *(player_commands(kind) for kind in KINDS.values())]


def test_the_tables_are_the_declarations_and_the_kinds_moves() -> None:
    assert referee_commands() == tuple(c for c in DECLARED if c.who == "referee")
    for kind in (None, *KINDS.values()):
        table = player_commands(kind)
        moves = move_commands(kind)
        assert table[:len(moves)] == moves and all(c.phase == "move" for c in moves)
        assert table[len(moves):] == tuple(c for c in DECLARED if c.who != "referee")


def test_every_declaration_runs_in_a_phase_or_is_a_line() -> None:
    for command in DECLARED:
        if isinstance(command, MailCommand):
            assert command.phase in ("change", "look", "reply"), command.name
        else:
            assert command.phase == "line", command.name     # GAME, KEY, TURN, referee KEY
    assert {c.name for c in DECLARED if c.phase == "reply"} == {"HELP", "STATUS"}


@given(st.sampled_from([(table, command, spelling) for table in EVERY_TABLE
                        for command in table for spelling in command.spellings]),
       st.booleans())
def test_a_line_that_starts_with_a_command_is_it_or_a_problem_with_the_fix(
        case: tuple, lower: bool) -> None:  # type: ignore[type-arg]
    table, command, spelling = case
    text = spelling.lower() if lower else spelling
    parsed = parse_text([BodyLine(4, text)], table)
    if parsed.orders:
        assert [o.command for o in parsed.orders] == [command]
    else:
        problem, = parsed.problems
        assert (problem.line_no, problem.line) == (4, text) and problem.hint


def test_player_help_lists_the_table_and_attaches_the_rules(server: Server) -> None:
    assert player(server, "stranger@example.org", "HELP") == ["help sent"]
    text = last_text(server, "stranger@example.org")
    for line in help_lines(player_commands()):
        assert " ".join(line["usage"].split()) in text
    row = outbound_rows(server.engine)[-1]
    attached = [part.get_filename() for part in message_from_bytes(row.raw).walk()]
    assert "rules.md" in attached


def test_referee_help_is_the_referee_table(server: Server) -> None:
    said = referee(server, "HELP")[0].splitlines()
    assert said == [f"{h['usage']}: {h['summary']}" for h in help_lines(referee_commands())]
    assert len(said) == len(referee_commands())
