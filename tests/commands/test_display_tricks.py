"""A name or talk that tries display tricks (a right-to-left override, an ESC, C1 controls)
reaches no mail raw: anyone can JOIN an open game with such a name (pbem.text.usertext)."""

from __future__ import annotations

import re
from pathlib import Path

from pbem.runner.server import Server
from testkit.desk import PLAYERS, admin, cli, key_of, outbox, send
from tests.commands.test_desk_signup import join

TRICKY_NAME = "Eve\u202eredaer\x1b[2J\x9b"
# control characters but the mail's own line ends (CR LF) and tabs, and bidi controls
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def bodies(server: Server) -> list[tuple[str, str]]:
    """Every part of every mail sent so far, and each subject: (where, text)."""
    found = []
    for message in outbox(server):
        found.append(("subject", str(message["Subject"])))
        for part in message.walk():
            if part.get_content_maintype() == "text":
                found.append((part.get_content_type(), part.get_content()))
    return found


def test_a_tricky_name_and_talk_reach_no_mail_raw(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3 OPEN RULES classic")
    code = join(server, "eve@example.org", f"JOIN g1 {TRICKY_NAME}")
    send(server, "eve@example.org", f"CONFIRM {code}")
    for i, email in enumerate(PLAYERS[:2], start=1):
        send(server, email, f"CONFIRM {join(server, email, f'JOIN g1 Name{i}')}")
    admin(server, "START g1")
    send(server, "eve@example.org", f"GAME g1\nKEY {key_of(server, 'eve@example.org')}\n"
         "SAY look \u202eright\x1b[31m here\n")
    sent = bodies(server)
    assert any("Everedaer[2J" in text for _, text in sent)          # the name, cleaned
    assert any("look right[31m here" in text for _, text in sent)   # the talk, cleaned
    assert [(where, text) for where, text in sent if UNSAFE.search(text)] == []


def test_pbem_admin_prints_a_tricky_name_cleaned(server: Server, tmp_path: Path) -> None:
    """The referee's terminal: `pbem admin STATUS` names the players without their ESC."""
    admin(server, "NEWGAME g1 SEED 3 RULES classic")
    admin(server, "ADD g1 eve@example.org Eve\x1b[2J\u202e")
    admin(server, "ADD g1 bob@example.org Bob")
    done = cli(tmp_path, "START", "g1")
    assert done.returncode == 0 and "Eve[2J" in done.stdout, done.stderr
    assert not UNSAFE.search(done.stdout)
