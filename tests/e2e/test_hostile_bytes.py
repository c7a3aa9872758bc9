"""Issue 32, items 1 and 3: bytes are data until proven text.

Every header category of a storm of hostile mail (testkit/storm.py: raw 8-bit bytes in
Message-ID, References, In-Reply-To, From, Subject, Content-* parameters and file
names; overlong headers; encoded words with bad charsets; NULs; bare CR and LF; headers
that try to add a recipient) goes through the real store and handle path on SQLite:
the mail is stored, handled (not failed), answered once when it has a sender, and
nothing logs a traceback. The answer to a mail that fails on our side (the internal
error answer) goes out whatever the mail holds, and the same for a player's reply.
"""

from __future__ import annotations

import logging
from email import policy
from email.parser import BytesParser
from typing import Any

import pytest

from pbem.runner.server import Server
from pbem.store import faults
from testkit.bounce import SHAPES, bounce_bytes
from testkit.desk import outbox_rows, started_game
from testkit.stored import inbound_rows
from testkit.storm import HOSTILE, storm_mail

STRANGER = "someone@elsewhere.example"
NO_SENDER = {"8bit-address", "crlf-word-name"}   # no address the server answers


def inbound(server: Server) -> list[Any]:
    return inbound_rows(server.engine)


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.exc_info is not None or r.levelno >= logging.ERROR]


def check_answer(raw: bytes, to: str) -> None:
    """An answer as it leaves: ASCII, the headers the server writes and no other, one
    recipient."""
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.isascii()
    msg = BytesParser(policy=policy.SMTP).parsebytes(raw)
    names = {k.lower() for k in msg.keys()}
    assert names <= {"from", "to", "subject", "date", "message-id", "in-reply-to", "references",
                     "auto-submitted", "x-pbem-loop", "mime-version", "content-type",
                     "content-transfer-encoding"}
    assert msg["To"].addresses[0].addr_spec == to and len(msg["To"].addresses) == 1


@pytest.mark.parametrize("lines", [lines for _, lines in HOSTILE],
                         ids=[name for name, _ in HOSTILE])
def test_every_hostile_header_is_stored_handled_and_answered_once(
        server: Server, caplog: pytest.LogCaptureFixture, lines: bytes) -> None:
    name = next(n for n, body in HOSTILE if body is lines)
    with caplog.at_level(logging.INFO):
        assert server.referee.store_inbound(storm_mail(lines, STRANGER), source="smtp")
        assert not server.referee.store_inbound(storm_mail(lines, STRANGER), source="smtp") \
            or b"Message-ID" not in lines   # the same Message-ID: the same mail
        server.referee.process_pending()
    assert tracebacks(caplog) == []
    assert {r.status for r in inbound(server)} == {"done"}
    answers = outbox_rows(server, STRANGER)
    assert len(answers) == (0 if name in NO_SENDER else 1)
    for row in answers:
        check_answer(row.raw, STRANGER)


@pytest.mark.parametrize("lines", [lines for _, lines in HOSTILE],
                         ids=[name for name, _ in HOSTILE])
def test_the_internal_error_answer_goes_out_whatever_the_mail_holds(
        server: Server, caplog: pytest.LogCaptureFixture, lines: bytes) -> None:
    name = next(n for n, body in HOSTILE if body is lines)
    faults.arm_failures("inbound-read")
    try:
        with caplog.at_level(logging.INFO):
            assert server.referee.store_inbound(storm_mail(lines, STRANGER), source="smtp")
            server.referee.process_pending()
    finally:
        faults.arm_failures(None)
    # the one traceback is the failure on purpose; its answer and notice raise none
    assert [m for m in tracebacks(caplog) if "could not be handled" not in m] == []
    assert [r.status for r in inbound(server)] == ["failed"]
    answers = outbox_rows(server, STRANGER)
    assert len(answers) == (0 if name in NO_SENDER else 1)
    for row in answers:
        check_answer(row.raw, STRANGER)
        assert b"went wrong on our side" in row.raw.replace(b"=\r\n", b"")


def test_a_players_reply_with_raw_bytes_in_its_references_is_handled(
        server: Server, caplog: pytest.LogCaptureFixture) -> None:
    started_game(server)
    player = "p1@example.org"
    report = outbox_rows(server, player)[-1].message_id
    raw = (f"From: P1 <{player}>\r\nTo: bluff@example.org\r\nSubject: Re: report\r\n"
           f"Message-ID: <reply-1@example.org>\r\nIn-Reply-To: {report}\r\n").encode() + \
        b"References: <a\xc5b@x.test> " + report.encode() + b"\r\n" + \
        b"Content-Type: text/plain; charset=utf-8\r\n\r\nHELP\r\n"
    before = len(outbox_rows(server, player))
    with caplog.at_level(logging.INFO):
        assert server.referee.store_inbound(raw, source="smtp")
        server.referee.process_pending()
    assert tracebacks(caplog) == []
    assert [r.status for r in inbound(server)][-1] == "done"
    answers = outbox_rows(server, player)[before:]
    assert len(answers) == 1
    check_answer(answers[0].raw, player)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_bounce_naming_raw_bytes_is_read_and_marks_nobody(
        server: Server, caplog: pytest.LogCaptureFixture, shape: str) -> None:
    """The bounces path: a bounce whose named Message-ID and failed address hold raw 8-bit
    bytes (in the attached original, the returned headers, the quoted text, its own
    In-Reply-To) is read as one that names no mail of ours."""
    raw = bounce_bytes(shape, message_id="<b\u00e9\u00ff@x.test>", rcpt="p\u00e91@example.org",
                       server="bluff@example.org").decode("utf-8").encode("latin-1")
    with caplog.at_level(logging.INFO):
        assert server.referee.store_inbound(raw, source="smtp", envelope_from="")
        server.referee.process_pending()
    assert tracebacks(caplog) == []
    assert [r.status for r in inbound(server)] == ["done"]
    assert outbox_rows(server) == []
