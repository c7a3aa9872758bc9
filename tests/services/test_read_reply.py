"""A reply is cut where it quotes the mail of ours it answers (services.post.read_reply),
whatever quote header its client wrote: a header in no language pbem knows, the report
unquoted below it, or the report's HTML in no blockquote, still leaves only the player's
order; the answer says what it ignored."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest

from pbem.runner.server import Server
from testkit.desk import (
    SERVER,
    Clock,
    deliver,
    last_text,
    make_server,
    outbox,
    started_game,
)

GREEK = "Ο χρήστης Bluff referee έγραψε:"   # no date, no address, a verb unknown here


@pytest.fixture
def game(tmp_path: Path) -> tuple[Server, str, EmailMessage]:
    """A classic game waiting for its deadline; the opener's address and report."""
    server = make_server(tmp_path, Clock())
    started_game(server, "WAIT DEADLINE 48 RULES classic DICE 2")
    for msg in outbox(server):
        body = msg.get_body(("plain",))
        if body is not None and "You must open" in body.get_content():
            return server, str(msg["To"]), msg
    raise AssertionError("no opener")


def reply(to: EmailMessage, sender: str, text: str, html: str | None = None) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"] = sender, SERVER
    msg["Subject"] = f"Re: {to['Subject']}"
    msg["Message-ID"] = make_msgid(domain="client.example")
    msg["In-Reply-To"] = msg["References"] = str(to["Message-ID"])
    msg.set_content(text)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    return bytes(msg)


def report_text(report: EmailMessage) -> str:
    return str(report.get_body(("plain",)).get_content())  # type: ignore[union-attr]


def test_an_unknown_header_above_the_unquoted_report(
        game: tuple[Server, str, EmailMessage]) -> None:
    server, player, report = game
    deliver(server, reply(report, player, f"BID 2 threes\n\n{GREEK}\n\n{report_text(report)}"))
    answer = last_text(server, player)
    assert "accepted" in answer and "I ignored the quoted report below your text" in answer
    assert "NOT READ AS ORDERS" not in answer
    assert "ACCEPTED > line 1: BID 2 threes Understood" in answer
    assert answer.count("Understood:") == 1


def test_the_report_html_quoted_in_a_plain_div(
        game: tuple[Server, str, EmailMessage]) -> None:
    server, player, report = game
    ours = str(report.get_body(("html",)).get_content())  # type: ignore[union-attr]
    inner = ours.split("<body", 1)[1].split(">", 1)[1].rsplit("</body>", 1)[0]
    html = f"<div>BID 2 threes</div><div>{GREEK}</div><div>{inner}</div>"
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = player, SERVER, f"Re: {report['Subject']}"
    msg["Message-ID"] = make_msgid(domain="client.example")
    msg["In-Reply-To"] = str(report["Message-ID"])
    msg.set_content(html, subtype="html")
    deliver(server, bytes(msg))
    answer = last_text(server, player)
    assert "accepted" in answer and "I ignored the quoted report" in answer


def test_no_order_above_the_quote_is_said_plainly(
        game: tuple[Server, str, EmailMessage]) -> None:
    server, player, report = game
    deliver(server, reply(report, player, f"Good luck!\n\n{GREEK}\n\n{report_text(report)}"))
    answer = last_text(server, player)
    assert "I found no order in your mail (I ignored the quoted report below your text)" \
        in answer
    assert "Good luck!" in answer and "HOW TO ORDER" not in answer


def test_a_reply_to_the_confirmation_quotes_the_confirmation(
        game: tuple[Server, str, EmailMessage]) -> None:
    server, player, report = game
    deliver(server, reply(report, player, "BID 1 threes\n"))
    (confirm,) = [m for m in outbox(server, player) if "order received" in str(m["Subject"])]
    quoted = "\n".join("> " + line for line in report_text(confirm).splitlines())
    deliver(server, reply(confirm, player, f"BID 2 threes\n\n{GREEK}\n{quoted}"))
    answer = last_text(server, player)
    assert "I ignored the quoted confirmation below your text" in answer
