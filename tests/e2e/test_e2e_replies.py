"""The corpus of real reply shapes (tests/mail/replies/corpus.toml) through the real mail
stack: every shape, as a reply to the mover's real report with one order, with none, and
with an order only in the quoted report, goes through Dovecot into one tick of one game
(WAIT: the orders pile up, the latest counts). The one order is exactly what the
confirmation took, and it says the quoted report was ignored; the others get a "no order"
answer that quotes only the new text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.e2e import Table, text_of
from tests.mail.replies.build import ORDER, VARIANTS, reply, shapes

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2"]
GAME = "corpus-1"
REPORT_LINES = ["HOW TO ORDER", "a number bid", "You must open", "Rules: classic", "commitment"]


@pytest.fixture
def table(mailstack: Any, tmp_path: Path) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS) as made:
        yield made


def test_every_corpus_reply_through_dovecot(table: Table) -> None:
    table.referee_sends(*table.setup(
        GAME, f"NEWGAME {GAME} WAIT DEADLINE 48 SEED 3 RULES classic DICE 2"))
    table.server.tick()
    table.referee.new_mail()
    table.first_reports_in()
    mover = next(u for u, (_, view) in table.latest.items() if view["to_move"] == view["you"])
    report = table.latest[mover][0]
    sent: dict[str, tuple[str, str, str]] = {}   # Message-ID -> shape, mime, variant
    for shape in shapes():
        for variant in VARIANTS:
            raw = reply(shape, report, variant, table.clients[mover].address,
                        table.stack.address("bluff"))
            table.send(mover, raw)
            sent[table.sent_ids[mover][-1]] = (shape["name"], shape["mime"], variant.name)
    table.server.tick()
    table.collect()

    answered = {str(a["In-Reply-To"]): a for a in table.answers[mover]}
    assert set(answered) == set(sent)
    for message_id, (name, mime, variant) in sent.items():
        answer = answered[message_id]
        body = " ".join(text_of(answer).split())
        where = f"{name} ({variant}): {body[:600]}"
        assert not any(line in body for line in REPORT_LINES), where
        if variant == "order":
            assert "order received" in str(answer["Subject"]), where
            accepted = body.split("ACCEPTED", 1)[1].split("Understood", 1)
            assert accepted[0].strip().endswith(f": {ORDER}"), where
            assert body.count("Understood:") == 1, where
            if mime == "text":
                assert "I ignored the quoted report below your text" in body, where
            else:   # the HTML reader drops the quote whole, and says so
                assert "I ignored the quoted" in body, where
        else:
            assert "nothing was applied" in str(answer["Subject"]), where
            assert "I found no order in your mail" in body, where
            assert ORDER not in body, where
            if variant == "none":
                # the line of the player's own text that came closest to an order is
                # quoted (none of the report's: checked above)
                assert re.search(r"> line \d+: .+ I found no order in your mail", body), where
