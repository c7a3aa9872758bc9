"""Promise 1 with the composer ([server] compose_apart, SQLite): a turn's reports are a
draft committed with the turn, made into mails by a process of its own and queued by
the tick's thread in place of the draft. A real server process is killed between the
draft's commit and its mails' (and while the draft's mails are queued); the restart
makes the draft into its reports, and each mail is sent, once (tests/e2e/test_crash.py's
scene and check)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select

from pbem.store.models import OutboundMail
from testkit.crash import Zygote
from tests.e2e.test_crash import PLAYERS, Scene

pytestmark = pytest.mark.mailstack


@pytest.fixture(scope="module")
def zygote():
    with Zygote() as z:
        yield z


def _composing(scene: Scene) -> None:
    text = scene.config.read_text(encoding="utf-8")
    assert "compose_apart = false" in text
    # the composer from the turn's first draft (one turn here: the threshold's default
    # would make its reports with it)
    scene.config.write_text(text.replace("compose_apart = false",
                                         "compose_apart = true\ncomposer_from_turn = 1", 1),
                            encoding="utf-8")


def _kinds(scene: Scene, turn: int) -> dict[str, int]:
    """The queued mail of ``turn`` by kind."""
    with Session(scene.server.engine) as session:
        kinds: dict[str, int] = {}
        for row in session.exec(select(OutboundMail).where(OutboundMail.turn == turn)):
            kinds[row.kind] = kinds.get(row.kind, 0) + 1
        return kinds


@pytest.mark.parametrize("crash", ["inbound-committed:5", "drafts-queued:1"],
                         ids=["after-the-drafts-commit", "while-its-mails-are-queued"])
def test_a_kill_between_a_drafts_commit_and_its_mails_loses_no_report(
        mailstack, tmp_path: Path, zygote: Zygote, crash: str) -> None:
    scene = Scene(mailstack, tmp_path, f"sqlite:///{tmp_path / 'pbem.db'}")
    _composing(scene)
    scene.send_orders(PLAYERS)
    assert zygote.tick(scene.config, crash=crash) == -9
    kinds = _kinds(scene, 2)   # the turn played (its orders' answers too), no report yet
    assert kinds.get("draft") == 1 and "report" not in kinds
    assert zygote.tick(scene.config) == 0          # the restart makes the draft
    assert zygote.tick(scene.config) == 0          # and finds nothing left to do
    kinds = _kinds(scene, 2)
    assert kinds.get("report") == 5 and "draft" not in kinds
    scene.check(may_repeat=0)
