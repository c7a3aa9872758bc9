"""NEWGAME's desk options: GameOptions, their parsing, storage, STATUS, HELP, mail and CLI."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from pbem.kinds.options import GameOptions, options_of, parse_options
from pbem.runner.server import Server
from pbem.text.errors import Refusal
from testkit.desk import Clock, admin, cli, game_row, referee_mail


def test_defaults() -> None:
    opts = GameOptions()
    assert (opts.deadline_hour, opts.grace_hours, opts.missed_limit, opts.vacation_days,
            opts.policy, opts.open, opts.autostart, opts.wait) == (None, 0, 3, 14, "robot",
                                                                  False, False, False)
    # reminder: 12 h before for turns of a day or more, a quarter of shorter turns, none
    # without a deadline; REMIND 0 switches it off
    assert opts.reminder_lead(48) == timedelta(hours=12)
    assert opts.reminder_lead(24) == timedelta(hours=12)
    assert opts.reminder_lead(8) == timedelta(hours=2)
    assert opts.reminder_lead(None) is None
    assert GameOptions(reminder_hours=0).reminder_lead(48) is None
    assert GameOptions(reminder_hours=6).reminder_lead(48) == timedelta(hours=6)
    assert GameOptions(reminder_hours=60).reminder_lead(48) is None   # before the turn began


def test_json_round_trip_keeps_unknown_keys() -> None:
    opts = GameOptions(deadline_hour=18, grace_hours=6, open=True, policy="raise")
    assert GameOptions.from_json(opts.to_json()) == opts
    later = json.dumps({**json.loads(opts.to_json()), "from_a_newer_version": 1})
    again = GameOptions.from_json(later)
    assert again.deadline_hour == 18 and json.loads(again.to_json())["from_a_newer_version"] == 1
    assert GameOptions.from_json("{}") == GameOptions() == GameOptions.from_json(None)


def test_parse_every_option() -> None:
    new = parse_options("seed 7 DEADLINE 48 AT 18:00 GRACE 6 REMIND 4 MISSED 2 VACATION 10 "
                        "MISSING challenge OPEN AUTOSTART WAIT RULES postal".split(), "g1")
    assert (new.name, new.seed, new.hours, new.rules, new.rules_words) == ("g1", 7, 48, "postal",
                                                                          [])
    o = new.options
    assert (o.deadline_hour, o.grace_hours, o.reminder_hours, o.missed_limit, o.vacation_days,
            o.policy, o.open, o.autostart, o.wait) == (18, 6, 4, 2, 10, "challenge", True, True,
                                                       True)


def test_rules_takes_the_rest_of_the_line_and_autostart_opens() -> None:
    new = parse_options("AUTOSTART RULES classic dudo 6".split(), "g1")
    assert new.rules == "classic" and new.rules_words == ["dudo", "6"]
    assert new.options.open


@pytest.mark.parametrize("words,message", [
    ("DEADLINE", "needs a value"),
    ("DEADLINE 0", "out of range"),
    ("DEADLINE x", "not a valid number"),
    ("DEADLINE 24 AT 25", "not an hour"),
    ("AT 18", "AT needs a turn length"),
    ("GRACE -1", "out of range"),
    ("MISSING sometimes", "not a policy"),
    ("FROBNICATE 3", "unknown NEWGAME option"),
    ("RULES", "RULES needs a game kind"),
])
def test_bad_options_are_refused(words: str, message: str) -> None:
    with pytest.raises(Refusal, match=message):
        parse_options(words.split(), "g1")


def test_newgame_by_mail_stores_the_options(server: Server) -> None:
    answer = referee_mail(server, "NEWGAME g1 DEADLINE 24 AT 6 GRACE 2 VACATION 5 OPEN")
    assert "g1 created" in answer and "deadlines at 06:00 UTC" in answer
    game = game_row(server)
    assert game.turn_hours == 24
    opts = options_of(game)
    assert (opts.deadline_hour, opts.grace_hours, opts.vacation_days, opts.open) == (6, 2, 5,
                                                                                     True)
    assert "grace 2 h" in admin(server, "STATUS g1")


def test_newgame_refuses_unknown_rules_and_options_by_mail(server: Server) -> None:
    assert "unknown game kind" in referee_mail(server, "NEWGAME g1 RULES chess")
    assert "unknown NEWGAME option" in referee_mail(server, "NEWGAME g1 SPEED 3")
    assert admin(server, "LIST") == "no games yet"


def test_old_newgame_options_still_work_and_the_first_deadline_uses_the_hour(
        server: Server, clock: Clock) -> None:
    admin(server, "NEWGAME g1 SEED 3 DEADLINE 48 AT 18")
    for i in range(1, 6):
        admin(server, f"ADD g1 p{i}@example.org P{i}")
    admin(server, "START g1")
    game = game_row(server)
    assert game.deadline == (clock.now + timedelta(hours=48)).replace(hour=18)
    assert game.turn_started_at == clock.now


def test_newgame_by_cli_and_help_from_the_same_table(server: Server, tmp_path: Path) -> None:
    done = cli(tmp_path, "NEWGAME", "g2", "DEADLINE", "72", "REMIND", "24", "MISSED", "5",
               "MISSING", "raise", "WAIT")
    assert done.returncode == 0, done.stderr
    assert "g2 created" in done.stdout
    opts = options_of(game_row(server, "g2"))
    assert (opts.reminder_hours, opts.missed_limit, opts.policy, opts.wait) == (24, 5, "raise",
                                                                                True)
    bad = cli(tmp_path, "NEWGAME", "g3", "AT", "18")
    assert bad.returncode == 1 and "AT needs a turn length" in bad.stderr
    help_text = admin(server, "HELP")
    for usage in ("NEWGAME <game> [SEED <n>] [DEADLINE <hours>] [AT <hour>]", "GRACE <hours>",
                  "DEADLINE <game> <ISO time | +hours>", "EXTEND <game> <hours>",
                  "PAUSE <game>", "RESUME <game>", "WAIT <game> on|off",
                  "REMOVE <game> <email>", "CANCEL <game>"):
        assert usage in help_text
    assert "g2 (postal Bluff, 0 of 5 players, sign-up" in admin(server, "LIST")   # kind, players
