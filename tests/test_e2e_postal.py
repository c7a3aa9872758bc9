"""A whole postal game over the real mail stack: Dovecot IMAP in, SMTP out.

Five player clients read their reports from their own IMAP mailboxes and
answer them by replying over SMTP, as people would. On the way the test
sends a wrong order, a stale order and an expose, and checks that every
mail is answered once, every player gets one report a turn, the final
standings match a recount from the dice in the last reports, and the
exported record passes `pbem verify`.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter, defaultdict
from email.message import EmailMessage
from email import policy

import pytest

from pbem.config import ImapSettings, Settings, SmtpSettings
from pbem.games import export_record, find_game
from pbem.robot_client import choose_order, order_lines, parse_mail, reply_to, report_view
from pbem.rules.challenge import count_matching
from pbem.rules.dice import Die, face_from_json
from pbem.rules.ladder import Bid
from pbem.rules.moves import BidMove
from pbem.rules.postal import minigame_of
from pbem.server import Server
from sqlmodel import Session

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]
REFEREE_KEY = "letmein-referee"


class Client:
    """One mailbox as a person sees it: the mails that arrived since last look."""

    def __init__(self, stack, user: str) -> None:
        self.stack, self.user, self.seen = stack, user, 0
        self.address = stack.address(user)

    def new_mail(self) -> list[EmailMessage]:
        raws = self.stack.fetch_all(self.user)
        fresh, self.seen = raws[self.seen:], len(raws)
        return [parse_mail(r) for r in fresh]

    def send(self, raw: bytes) -> None:
        self.stack.deliver("bluff", raw, mail_from=self.address)


def referee_mail(stack, lines: list[str]) -> bytes:
    msg = EmailMessage()
    msg["From"] = stack.address("referee")
    msg["To"] = stack.address("bluff")
    msg["Subject"] = "setup"
    msg.set_content("\n".join([f"KEY {REFEREE_KEY}", *lines]) + "\n")
    return msg.as_bytes(policy=policy.SMTP)


@pytest.fixture
def server(mailstack, tmp_path):
    for user in ["bluff", "referee", *PLAYERS]:
        mailstack.clear(user)
    settings = Settings(
        database=f"sqlite:///{tmp_path / 'pbem.db'}", address=mailstack.address("bluff"),
        referee=mailstack.address("referee"), referee_key=REFEREE_KEY,
        imap=ImapSettings(mailstack.imap_host, mailstack.imap_port, ssl=False,
                          username=mailstack.address("bluff"), password="secret"),
        smtp=SmtpSettings(mailstack.smtp_host, mailstack.smtp_port, starttls=False))
    return Server(settings)


def recount(final_view: dict) -> dict[str, int]:
    """Virtual dice from the reveals in the final report alone (RULES.md section 2)."""
    virtual = {str(p["number"]): 5 for p in final_view["players"]}
    for mg in final_view["minigames"]:
        c = mg["challenge"]
        last = mg["bids"][-1]
        bid = Bid(last["quantity"], face_from_json(last["face"]))
        table = [Die(face_from_json(f)) for dice in c["dice"].values() for f in dice]
        actual = count_matching(table, bid)
        assert actual == c["actual"]
        bidder, challenger = str(last["player"]), str(c["player"])
        if actual < bid.quantity:
            virtual[bidder] -= bid.quantity - actual
        elif actual > bid.quantity:
            virtual[challenger] -= actual - bid.quantity
        else:
            for seat in virtual:
                if seat != bidder:
                    virtual[seat] -= 1
    return virtual


def test_whole_postal_game_over_dovecot(mailstack, server, tmp_path):
    clients = {u: Client(mailstack, u) for u in PLAYERS}
    referee = Client(mailstack, "referee")
    setup = ["NEWGAME cup-1 SEED 20261129"]
    setup += [f"ADD cup-1 {mailstack.address(u)} Player-{u}" for u in PLAYERS]
    setup.append("START cup-1")
    referee.send(referee_mail(mailstack, setup))
    server.tick()
    notices = referee.new_mail()
    assert len(notices) == 1 and "started" in notices[0].get_body(("plain",)).get_content()

    rng = random.Random(5)
    reports: dict[str, dict[int, int]] = defaultdict(Counter)   # user -> turn -> count
    latest: dict[str, tuple[EmailMessage, dict]] = {}
    first_reports: dict[str, EmailMessage] = {}
    answers_expected: dict[str, list[str]] = defaultdict(list)  # user -> message ids sent
    answers: dict[str, list[EmailMessage]] = defaultdict(list)
    did = Counter()

    def collect() -> None:
        for user, client in clients.items():
            for msg in client.new_mail():
                view = report_view(msg)
                if view is not None and msg["In-Reply-To"] is None:
                    reports[user][view["turn"]] += 1
                    latest[user] = (msg, view)
                    first_reports.setdefault(user, msg)
                else:
                    answers[user].append(msg)

    def send(user: str, raw: bytes) -> None:
        answers_expected[user].append(parse_mail(raw)["Message-ID"])
        clients[user].send(raw)

    collect()
    assert set(latest) == set(PLAYERS)
    assert all(v["turn"] == 1 for _, v in latest.values())
    assert "commitment" in first_reports["p1"].get_body(("plain",)).get_content().lower()

    turn = 1
    while True:
        views = {u: v for u, (_, v) in latest.items()}
        if all(v["game_over"] for v in views.values()):
            break
        assert {v["turn"] for v in views.values()} == {turn}
        for user, (msg, view) in sorted(latest.items()):
            seat = view["you"]
            if view["to_move"] is None:
                continue
            assert view["to_move"] == minigame_of(seat, turn)
            move = choose_order(view, rng)
            assert move is not None
            if turn == 1 and not did["wrong"]:
                # the opener may not challenge: an error answer, nothing applied
                send(user, reply_to(msg, clients[user].address, ["CHALLENGE"]))
                did["wrong"] += 1
            if turn == 2 and not did["stale"]:
                send(user, reply_to(first_reports[user], clients[user].address, ["BID 25 5"]))
                did["stale"] += 1
            if isinstance(move, BidMove) and not move.expose and not did["expose"]:
                mg = view["minigames"][view["to_move"] - 1]
                hidden = mg["your_dice"]["hidden"]
                if len(hidden) >= 2:
                    move = BidMove(move.bid, (face_from_json(hidden[0]),))
                    did["expose"] += 1
            send(user, reply_to(msg, clients[user].address,
                                ["Hello referee,", *order_lines(move), "Cheers", "-- ",
                                 "BID 99 5"]))
        server.tick()
        collect()
        turn += 1
        assert turn < 60, "the game did not end"

    assert did == Counter(wrong=1, stale=1, expose=1)
    # every player got exactly one report for every turn, and the final one
    for user in PLAYERS:
        assert set(reports[user].values()) == {1}, reports[user]
        assert sorted(reports[user]) == list(range(1, turn + 1))
    # every mail a player sent got exactly one answer, threaded to it
    for user in PLAYERS:
        replied_to = Counter(str(a["In-Reply-To"]) for a in answers[user])
        assert replied_to == Counter(answers_expected[user]), user
        for a in answers[user]:
            assert a["Auto-Submitted"] == "auto-replied"
    errors = [a for u in PLAYERS for a in answers[u]
              if "nothing was applied" in str(a["Subject"]).lower()]
    texts = [e.get_body(("plain",)).get_content() for e in errors]
    assert len(errors) == 2, texts
    assert any("CHALLENGE" in t and "must BID" in t for t in texts)
    assert any("resolved already" in t and "BID 25 5" in t for t in texts)

    # an expose shows up in the reports: the exposed die stays face up
    final = {u: v for u, (_, v) in latest.items()}
    assert any(b.get("exposed") for mg in final["p1"]["minigames"] for b in mg["bids"])

    # the standings match an independent recount from the last reports' reveals
    any_view = final["p1"]
    counted = recount(any_view)
    assert {str(p["number"]): p["virtual_dice"] for p in any_view["players"]} == counted
    ranks = {s["number"]: s["rank"] for s in any_view["standings"]}
    for s in any_view["standings"]:
        assert s["rank"] == 1 + sum(1 for v in counted.values() if v > s["virtual_dice"])
    assert len(ranks) == 5

    # the export verifies, with the real command line
    with Session(server.engine) as session:
        record = export_record(session, find_game(session, "cup-1"))
    path = tmp_path / "cup-1.json"
    path.write_text(json.dumps(record.to_json()))
    done = subprocess.run([sys.executable, "-m", "pbem.cli", "verify", str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # processed mail was moved out of the inbox into pbem-done
    assert mailstack.fetch_all("bluff") == []
    assert len(mailstack.fetch_all("bluff", "pbem-done")) == 1 + sum(
        len(v) for v in answers_expected.values())
