"""The robot's cheap reading of the referee's mail (read_report) says what a full MIME
parse says, for the reports of every kind and for any other mail; the reply quotes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pbem.config import Settings
from pbem.demo.robot_client import parse_mail, read_report, reply_to, report_view
from pbem.runner.server import Server
from testkit.stored import outbound_rows

PLAYERS = [f"p{i}@example.org" for i in range(1, 6)]


def referee_mails(tmp_path: Path, rules: str, seats: int) -> list[bytes]:
    server = Server(Settings(database=f"sqlite:///{tmp_path / 'pbem.db'}",
                             address="bluff@example.org", referee="referee@example.org",
                             referee_key="k", outbox_dir=tmp_path / "outbox"))
    server.referee.admin(["NEWGAME", "g1", "SEED", "3", "RULES", rules])
    for i, addr in enumerate(PLAYERS[:seats]):
        server.referee.admin(["ADD", "g1", addr, f"Pat{i}"])
    server.referee.admin(["START", "g1"])
    return [r.raw for r in outbound_rows(server.engine)]


@pytest.mark.parametrize("rules, seats", [("postal", 5), ("classic", 4), ("cup", 4)])
def test_read_report_reads_what_a_full_parse_reads(tmp_path: Path, rules: str,
                                                   seats: int) -> None:
    raws = referee_mails(tmp_path, rules, seats)
    reports = 0
    for raw in raws:
        full, quick = parse_mail(raw), read_report(raw)
        body = full.get_body(("plain",))
        assert body is not None
        assert quick.view == report_view(full)
        assert quick.text.splitlines() == str(body.get_content()).splitlines()
        for header in ("From", "To", "Subject", "Message-ID"):
            assert str(quick.msg[header]) == str(full[header])
        reports += quick.view is not None
    assert reports == seats


def test_a_reply_from_read_report_is_the_reply_from_a_full_parse(tmp_path: Path) -> None:
    raw = next(r for r in referee_mails(tmp_path, "postal", 5) if b"report.json" in r)
    quick, full = read_report(raw), parse_mail(raw)
    ours = parse_mail(reply_to(quick.msg, PLAYERS[0], ["CHALLENGE"], original=quick.text))
    theirs = parse_mail(reply_to(full, PLAYERS[0], ["CHALLENGE"]))
    for header in ("From", "To", "Subject", "In-Reply-To", "References"):
        assert str(ours[header]) == str(theirs[header])
    ours_body, theirs_body = ours.get_body(("plain",)), theirs.get_body(("plain",))
    assert ours_body is not None and theirs_body is not None
    assert ours_body.get_content().splitlines() == theirs_body.get_content().splitlines()
    assert "> " in ours_body.get_content()


def test_a_mail_of_another_shape_is_parsed_fully() -> None:
    raw = (b"From: bluff@example.org\r\nTo: p1@example.org\r\nSubject: odd\r\n"
           b"Content-Type: text/plain\r\n\r\nsee report.json, filename=\"report.json\"\r\n")
    quick = read_report(raw)
    assert quick.view is None and quick.text.startswith("see report.json")
    assert str(quick.msg["Subject"]) == "odd"
