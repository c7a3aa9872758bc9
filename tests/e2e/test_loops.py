"""Promise 5, no mail loops and no backscatter: bounces (null sender,
MAILER-DAEMON, DSNs), Auto-Submitted other than "no", Precedence bulk/list/junk,
list mail, the server's own loop header and its own address are never answered
and never acted on; answers to unknown senders are limited to one a day per
address; a known address gets at most answers_per_hour answers an hour to mail that
is no game mail (a mail bomb in a player's name), game answers never held back; two
servers pointed at each other stop."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

import pytest
from sqlmodel import Session, select

from pbem.demo.robot_client import client_order_lines, parse_mail
from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.mail.smtp_out import SendResult
from pbem.runner.server import Server
from pbem.store.models import InboundMail, OutboundMail
from pbem.store.work import Work
from testkit.desk import make_server as desk_server
from testkit.e2e import Table, text_of
from testkit.stack import stack_settings
from tests.runner.test_referee import (
    PLAYERS,
    REFEREE_KEY,
    Clock,
    key_and_seat,
    mail,
    outbox,
    started_game,
)

CORPUS = Path(__file__).parents[1] / "corpus"
P1 = PLAYERS[0]


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_server(tmp_path: Path, clock: Clock, address: str = "bluff@example.org") -> Server:
    return desk_server(tmp_path, clock, database=f"sqlite:///{tmp_path / (address + '.db')}",
                       address=address, referee_key=REFEREE_KEY)


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> Server:
    s = make_server(tmp_path, clock)
    started_game(s)
    return s


@pytest.fixture(scope="module")
def quiet_server(tmp_path_factory) -> Server:
    """One started game for the tests that must leave no trace (their mail is ignored)."""
    s = make_server(tmp_path_factory.mktemp("quiet"), Clock())
    started_game(s)
    return s


def deliver(server: Server, raw: bytes, envelope_from: str | None = None) -> str:
    assert server.referee.store_inbound(raw, source="smtp", envelope_from=envelope_from)
    server.referee.process_pending()
    with Session(server.engine) as session:
        row = session.exec(select(InboundMail).order_by(InboundMail.id.desc())).first()
        assert row is not None and row.status == "done"
        return row.outcome or ""


def answers(server: Server) -> int:
    return len(outbox(server))


# an order from p1 with p1's key, made automatic in each of these ways
AUTOMATIC = [
    ({"Auto-Submitted": "auto-replied"}, None),
    ({"Auto-Submitted": "auto-generated"}, None),
    ({"Auto-Submitted": "auto-notified; owner-email=x@y"}, None),
    ({"Precedence": "bulk"}, None),
    ({"Precedence": "list"}, None),
    ({"Precedence": "junk"}, None),
    ({"List-Id": "<players.example.org>"}, None),
    ({"X-Autoreply": "yes"}, None),
    ({"Return-Path": "<>"}, None),
    ({"X-Pbem-Loop": "bluff@example.org"}, None),
    ({"X-Pbem-Loop": "some-other-pbem@example.net"}, None),
    ({}, ""),                                     # null envelope sender: a bounce
    ({}, "MAILER-DAEMON@example.org"),
]


@pytest.mark.parametrize("headers,envelope", AUTOMATIC,
                         ids=[f"{h or ''}{e if e is not None else ''}" or "null-sender"
                              for h, e in AUTOMATIC])
def test_automatic_mail_is_neither_answered_nor_acted_on(quiet_server: Server, headers: dict,
                                                         envelope: str | None) -> None:
    server = quiet_server
    key, _ = key_and_seat(server, P1)
    before = answers(server)
    raw = mail(P1, f"GAME g1\nKEY {key}\nBID 1 two\n", headers=headers,
               subject=f"orders {envelope!r}")
    outcome = deliver(server, raw, envelope_from=envelope)
    assert outcome.startswith("ignored"), outcome
    assert answers(server) == before
    with Work(server.engine) as session:
        assert pending_orders(session, find_game(session, "g1")) == {}


@pytest.mark.parametrize("sender", ["MAILER-DAEMON@mx.example.org", "postmaster@example.org",
                                    "bluff@example.org", "Bluff@Example.ORG"])
def test_daemons_and_the_servers_own_address_are_not_answered(quiet_server: Server,
                                                              sender: str) -> None:
    server = quiet_server
    before = answers(server)
    assert deliver(server, mail(sender, "HELP\nBID 1 two\n")).startswith("ignored")
    assert answers(server) == before


@pytest.mark.parametrize("name", ["15_dsn_bounce.eml", "16_out_of_office.eml",
                                  "23_mailing_list_digest.eml"])
def test_bounces_and_auto_replies_from_the_corpus_are_ignored(quiet_server: Server,
                                                              name: str) -> None:
    server = quiet_server
    before = answers(server)
    assert deliver(server, (CORPUS / name).read_bytes()).startswith("ignored")
    assert answers(server) == before


def test_auto_submitted_no_is_a_person(server: Server) -> None:
    before = answers(server)
    deliver(server, mail(P1, "HELP\n", headers={"Auto-Submitted": "no"}))
    assert answers(server) == before + 1


def test_a_real_bounce_over_the_mail_stack_is_not_answered(mailstack, tmp_path: Path) -> None:
    """MAIL FROM:<> through the real SMTP front and Dovecot: it arrives with Return-Path: <>."""
    for user in ("bluff", "p1", "referee"):
        mailstack.clear(user)
    server = Server(stack_settings(mailstack, f"sqlite:///{tmp_path / 'pbem.db'}", REFEREE_KEY))
    bounce = mail(mailstack.address("p1"), "Your message could not be delivered.\nHELP\n")
    mailstack.deliver("bluff", bounce, mail_from="")
    person = mail(mailstack.address("p1"), "HELP\n", subject="a person")
    mailstack.deliver("bluff", person, mail_from=mailstack.address("p1"))
    mailstack.wait_for("bluff", 2)
    report = server.tick()
    assert report.fetched == 2 and report.sent == 1
    (answer,) = mailstack.fetch_all("p1")
    assert parse_mail(answer)["In-Reply-To"] == parse_mail(person)["Message-ID"]
    with Session(server.engine) as session:
        outcomes = sorted(m.outcome or "" for m in session.exec(select(InboundMail)))
    assert outcomes[1].startswith("ignored: automatic mail (null sender)")


# --------------------------------------------------------------------------- strangers


def test_an_unknown_sender_gets_at_most_one_answer_a_day(server: Server, clock: Clock) -> None:
    stranger = "someone@elsewhere.example"
    for i, body in enumerate(("HELP\n", "BID 3 sevens\n", "HELP\n", "what?\nBDI 5 4\n")):
        deliver(server, mail(stranger, body, subject=f"mail {i}"))
    assert len(outbox(server, stranger)) == 1
    clock.now += timedelta(hours=23)
    deliver(server, mail(stranger, "HELP again\n"))
    assert len(outbox(server, stranger)) == 1
    clock.now += timedelta(hours=2)
    deliver(server, mail(stranger, "HELP once more\n"))
    assert len(outbox(server, stranger)) == 2
    # every mail was read and its outcome kept, answered or not
    with Session(server.engine) as session:
        rows = session.exec(select(InboundMail).where(InboundMail.source == "smtp")).all()
        assert sum("not answered" in (r.outcome or "") for r in rows) == 4


def test_players_are_answered_every_time(server: Server) -> None:
    for i in range(4):
        deliver(server, mail(P1, f"HELP {i}\n"))
    assert len([m for m in outbox(server, P1) if m["In-Reply-To"]]) == 4


# --------------------------------------------------------------------------- two servers


class Bridge:
    """Mail transport between two servers: what one sends, the other receives."""

    def __init__(self, strip: tuple[str, ...] = ()) -> None:
        self.strip = strip
        self.carried = 0

    def sender_to(self, other: Server):
        bridge = self

        class Carrier:
            def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
                msg = BytesParser(policy=policy.SMTP).parsebytes(raw)
                for name in bridge.strip:
                    del msg[name]
                bridge.carried += 1
                for rcpt in rcpts:
                    if rcpt == other.settings.address:
                        other.referee.store_inbound(msg.as_bytes(), source="smtp",
                                                    envelope_from=mail_from)
                return SendResult(accepted=list(rcpts))

        @contextmanager
        def open_sender() -> Iterator[Carrier]:
            yield Carrier()
        return open_sender


def pointed_at_each_other(tmp_path: Path, clock: Clock,
                          strip: tuple[str, ...] = ()) -> tuple[Server, Server, Bridge]:
    a = make_server(tmp_path, clock, "bluff@a.example")
    b = make_server(tmp_path, clock, "bluff@b.example")
    bridge = Bridge(strip)
    a.senders.open = bridge.sender_to(b)   # type: ignore[method-assign,assignment]
    b.senders.open = bridge.sender_to(a)   # type: ignore[method-assign,assignment]
    # someone sends A a mail in B's name (or B's owner mistyped an address)
    kick = EmailMessage()
    kick["From"], kick["To"], kick["Subject"] = "bluff@b.example", "bluff@a.example", "hi"
    kick["Message-ID"] = "<kick@b.example>"
    kick.set_content("HELP\nBID 3 sevens\n")
    assert a.referee.store_inbound(kick.as_bytes(policy=policy.SMTP), source="smtp")
    return a, b, bridge


def run_until_quiet(a: Server, b: Server, clock: Clock, rounds: int = 6) -> None:
    for _ in range(rounds):
        a.tick()
        b.tick()
        clock.now += timedelta(hours=8)    # days pass too: the daily limit must hold


def pending(server: Server) -> int:
    with Session(server.engine) as session:
        return len(session.exec(select(OutboundMail).where(OutboundMail.status == "pending"))
                   .all())


def test_two_servers_pointed_at_each_other_stop_at_once(tmp_path: Path, clock: Clock) -> None:
    a, b, bridge = pointed_at_each_other(tmp_path, clock)
    run_until_quiet(a, b, clock)
    assert bridge.carried == 1          # A answers once; B sees an automatic mail and stops
    with Session(b.engine) as session:
        (row,) = session.exec(select(InboundMail)).all()
        assert row.outcome is not None and row.outcome.startswith("ignored")
    assert pending(a) == pending(b) == 0


def test_two_servers_stop_even_when_a_relay_strips_the_loop_headers(tmp_path: Path,
                                                                    clock: Clock) -> None:
    a, b, bridge = pointed_at_each_other(
        tmp_path, clock, strip=("Auto-Submitted", "X-Pbem-Loop", "In-Reply-To", "References"))
    run_until_quiet(a, b, clock)
    # each answers the stranger at most once a day: A's answer, B's, and no more
    assert bridge.carried == 2
    before = bridge.carried
    run_until_quiet(a, b, clock)              # two more days: nothing starts again
    assert bridge.carried == before
    assert pending(a) == pending(b) == 0
    for server in (a, b):
        with Session(server.engine) as session:
            sent = session.exec(select(OutboundMail)).all()
            assert all(json.loads(m.rcpts_json)[0].startswith("bluff@") for m in sent)


def test_two_servers_over_the_mail_stack(mailstack, tmp_path: Path) -> None:
    """A on the bluff mailbox, B on observer's: A answers B's forged HELP, B ignores it."""
    for user in ("bluff", "observer", "referee"):
        mailstack.clear(user)

    def server(user: str) -> Server:
        return Server(stack_settings(mailstack, f"sqlite:///{tmp_path / (user + '.db')}",
                                     REFEREE_KEY, user=user))
    a, b = server("bluff"), server("observer")
    mailstack.deliver("bluff", mail(mailstack.address("observer"), "HELP\n"),
                      mail_from=mailstack.address("observer"))
    mailstack.wait_for("bluff", 1)
    for _ in range(2):
        a.tick()
        b.tick()
    assert mailstack.fetch_all("bluff") == [] and mailstack.fetch_all("observer") == []
    assert len(mailstack.fetch_all("observer", "pbem-done")) == 1    # A's one answer
    assert len(mailstack.fetch_all("bluff", "pbem-done")) == 1       # the forged HELP
    assert pending(a) == pending(b) == 0
    with Session(b.engine) as session:
        assert session.exec(select(OutboundMail)).all() == []


def test_a_forged_join_does_not_make_an_address_known(server: Server) -> None:
    """Anyone can send JOIN in another's name; until the code is confirmed the address
    stays a stranger, so junk in its name gets at most one answer a day."""
    server.referee.admin(["NEWGAME", "open-1", "OPEN"])
    victim = "victim@elsewhere.example"
    deliver(server, mail(victim, "JOIN open-1 Vic\n", subject="join"))
    codes = len(outbox(server, victim))
    assert codes == 1
    for i in range(3):
        deliver(server, mail(victim, "BDI 5 4\n", subject=f"junk {i}"))
    assert len(outbox(server, victim)) - codes <= 1


# --------------------------------------------------------------------------- mail bombs


@pytest.mark.mailstack
def test_fifty_forged_helps_give_a_player_at_most_the_answers_an_hour(mailstack,
                                                                      tmp_path: Path) -> None:
    """50 HELP mails forged in a player's name through Dovecot and SMTP, the player's own
    order in their midst: the player gets at most answers_per_hour answers to them, the
    last of which says so, and the order is confirmed all the same."""
    with Table(mailstack, tmp_path, ["p1", "p2"]) as table:
        table.referee_sends(*table.setup("g1", "NEWGAME g1 SEED 3 RULES classic DICE 2"))
        table.server.tick()
        table.first_reports_in()
        mover = next(u for u, (_, v) in table.latest.items() if v["to_move"] == v["you"])
        address, view = table.clients[mover].address, table.latest[mover][1]
        helps = [mail(address, "HELP\n", subject=f"help {i}") for i in range(50)]
        for raw in helps[:25]:
            table.send(mover, raw)
        table.reply(mover, client_order_lines(view, random.Random(1)))
        for raw in helps[25:]:
            table.send(mover, raw)
        mailstack.wait_for("bluff", 51, timeout=60)
        table.server.tick()
        table.collect()
        most = table.server.settings.answers_per_hour
        got = table.answers[mover]
        confirmed = [m for m in got if "order received" in str(m["Subject"])]
        assert len(confirmed) == 1 and str(confirmed[0]["In-Reply-To"]) == \
            table.sent_ids[mover][25]
        helped = [m for m in got if m not in confirmed]
        assert len(helped) == most, [str(m["Subject"]) for m in got]
        assert all(str(m["In-Reply-To"]) in table.sent_ids[mover] for m in helped)
        last = " ".join(text_of(helped[-1]).split())
        assert f"at most {most} an hour" in last and "no more answers" in last
        assert not any("no more answers" in text_of(m) for m in helped[:-1])
        with Session(table.server.engine) as session:
            outcomes = [m.outcome or "" for m in session.exec(select(InboundMail))]
        assert sum(f"not answered ({most} answers an hour" in o for o in outcomes) == 50 - most
