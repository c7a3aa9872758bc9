"""Table talk (SAY) in a classic Bluff game reaches the next report of every kind of game:
the classic report templates read the talk lines' "from" as the others do (they asked for
"name", and the turn after a SAY could not be reported)."""

from __future__ import annotations

import pytest

from pbem.runner.server import Server
from testkit.desk import PLAYERS, admin, order, outbox, text_of


@pytest.mark.parametrize("rules, players", [("RULES classic english DICE 2", 4),
                                            ("RULES cup", 4), ("", 5)])
def test_the_report_after_a_say_shows_the_talk(server: Server, rules: str, players: int) -> None:
    admin(server, f"NEWGAME g1 SEED 3 {rules}".strip())
    for i, email in enumerate(PLAYERS[:players], start=1):
        admin(server, f"ADD g1 {email} Name{i}")
    admin(server, "START g1")
    order(server, PLAYERS[0], "SAY Nobody believes <b>my</b> stars.")
    admin(server, "PROCESS g1")
    report = [m for m in outbox(server, PLAYERS[1]) if "report" in str(m["Subject"])][-1]
    assert "Name1 (player" in text_of(report) and "Nobody believes <b>my</b> stars." in text_of(report)
    html = report.get_body(("html",))
    assert html is not None and "Nobody believes &lt;b&gt;my&lt;/b&gt; stars." in html.get_content()
