"""Bounces: flufl.bounce reads each shape of the corpus, the bounce names the mail that
bounced (Message-ID or VERP token), and pbem.outbox matches it to the outbox row it is
for: the game and the seat. A bounce for a mail pbem never sent matches nothing."""

from __future__ import annotations

import dataclasses
import json
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Session, col, select

from pbem.config.settings import SmtpSettings
from pbem.mail.bounces import Bounce, read_bounce, verp_address, verp_tokens
from pbem.outbox import envelope_sender
from pbem.runner.server import Server
from pbem.services.bounces import BouncedMail, bounced_mail
from pbem.store.models import OutboundMail
from testkit.bounce import SHAPES, bounce_bytes
from testkit.desk import SERVER, Clock, make_server, seat_of, started_game
from testkit.e2e import stack_server

SERVER_VERP = verp_address(SERVER, "00aa11bb22cc33dd")


def shape(name: str, message_id: str = "<pbem.report.abc@example.org>",
          rcpt: str = "p3@example.org", server: str = SERVER) -> bytes:
    return bounce_bytes(name, message_id=message_id, rcpt=rcpt, server=server, from_addr=SERVER)


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_is_read_as_a_bounce_for_the_right_address(name: str) -> None:
    bounce = read_bounce(shape(name, server=SERVER_VERP), SERVER)
    assert bounce is not None
    permanent = SHAPES[name][1]
    assert bounce.addresses == {"p3@example.org"}
    assert bounce.is_permanent("p3@example.org") is permanent
    assert (bounce.permanent, bounce.temporary) == (
        (frozenset({"p3@example.org"}), frozenset()) if permanent
        else (frozenset(), frozenset({"p3@example.org"})))
    if name != "verp_only":
        assert bounce.message_ids[0] == "<pbem.report.abc@example.org>"
    else:
        assert bounce.message_ids == ()
    assert bounce.verp_tokens == ("00aa11bb22cc33dd",)
    reason = bounce.reason("p3@example.org")
    assert reason != "no reason given" and len(reason) <= 300


@pytest.mark.parametrize("name, words", [
    ("postfix_dsn", "5.1.1"), ("exim_dsn", "No such user"), ("gmail", "does not exist"),
    ("qmail", "no mailbox here"), ("exchange_ndr", "does not exist"),
    ("postfix_delayed", "Mailbox full"), ("verp_only", "Mailbox disabled")])
def test_the_reason_is_the_mail_servers_words(name: str, words: str) -> None:
    bounce = read_bounce(shape(name), SERVER)
    assert bounce is not None and words in bounce.reason("p3@example.org")


@pytest.mark.parametrize("raw", [
    b"From: p1@example.org\r\nTo: bluff@example.org\r\nSubject: orders\r\n\r\nBID 3 4\r\n",
    (b"From: a@b\r\nAuto-Submitted: auto-replied\r\nSubject: Out of office\r\n\r\n"
     b"I am away until Monday.\r\n"),
    b"",
    b"\x00\xff\xfe garbage",
], ids=["order", "vacation-reply", "empty", "garbage"])
def test_a_mail_that_is_no_bounce_is_none(raw: bytes) -> None:
    assert read_bounce(raw, SERVER) is None


def test_a_bounce_of_our_own_address_names_nobody() -> None:
    assert read_bounce(shape("postfix_dsn", rcpt=SERVER), SERVER) is None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_are_read_without_an_exception(raw: bytes) -> None:
    result = read_bounce(raw, SERVER)
    assert result is None or isinstance(result, Bounce)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(SHAPES)), st.integers(0, 4000))
def test_a_cut_bounce_is_read_or_ignored_never_a_crash(name: str, cut: int) -> None:
    raw = shape(name)
    result = read_bounce(raw[:cut], SERVER)
    if result is not None:   # a cut address may remain, but nothing else
        assert all("@" in a and "p3@example.org".startswith(a) for a in result.addresses)


@given(st.from_regex(r"[a-z0-9]{8,40}", fullmatch=True),
       st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True))
def test_verp_address_and_token_round_trip(token: str, local: str) -> None:
    own = f"{local}@games.example"
    address = verp_address(own, token)
    msg = message_from_bytes(f"To: {address}\r\n\r\nx".encode(), policy=policy.compat32)
    assert verp_tokens(msg, own) == (token,)
    other = message_from_bytes(f"To: x{address}\r\n\r\nx".encode(), policy=policy.compat32)
    assert verp_tokens(other, own) == ()


def test_verp_address_refuses_junk() -> None:
    for address, token in (("bluff@example.org", "AB CD"), ("no-at-sign", "00aa11bb22cc33dd"),
                           ("bluff@example.org", "short")):
        with pytest.raises(ValueError):
            verp_address(address, token)


# --------------------------------------------------------------------------- matching


def reports(server: Server) -> dict[str, OutboundMail]:
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail).where(OutboundMail.kind == "report")
                            .order_by(col(OutboundMail.id))).all()
        for row in rows:
            session.expunge(row)
    return {json.loads(r.rcpts_json)[0]: r for r in rows}


def match(server: Server, raw: bytes) -> BouncedMail | None:
    bounce = read_bounce(raw, SERVER)
    if bounce is None:
        return None
    with Session(server.engine) as session:
        found = bounced_mail(session, bounce)
        if found is not None:
            session.expunge(found.mail)
        return found


@pytest.mark.parametrize("name", sorted(set(SHAPES) - {"verp_only"}))
def test_each_shape_is_matched_to_the_game_and_seat_by_message_id(server: Server,
                                                                  name: str) -> None:
    started_game(server)
    sent = reports(server)["p3@example.org"]
    found = match(server, shape(name, message_id=sent.message_id))
    assert found is not None and found.via == "message-id"
    assert (found.mail.id, found.mail.game_id, found.mail.seat) == (
        sent.id, sent.game_id, seat_of(server, "p3@example.org"))
    assert found.address == "p3@example.org" and found.permanent is SHAPES[name][1]


def verp_server(tmp_path: Path) -> Server:
    """A desk server whose mail goes out with VERP return paths (never ticked here: no
    SMTP server is needed)."""
    return make_server(tmp_path, Clock(), smtp=SmtpSettings(host="127.0.0.1", verp=True))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_is_matched_by_its_verp_return_path(tmp_path: Path, name: str) -> None:
    server = verp_server(tmp_path)
    started_game(server)
    sent = reports(server)["p3@example.org"]
    assert sent.bounce_token
    to = envelope_sender(sent, verp=True)
    assert to == verp_address(SERVER, sent.bounce_token)
    found = match(server, shape(name, message_id="<unknown@example.org>", server=to))
    assert found is not None and found.via == "verp" and found.mail.id == sent.id


def test_mail_queued_without_verp_has_no_bounce_token(server: Server) -> None:
    """[smtp] verp off (the default): no token is drawn, the index of the tokens (only
    those not null, schema 0019) gets no entry, and a bounce still finds its mail by
    its Message-ID."""
    started_game(server)
    sent = reports(server)
    assert sent and all(row.bounce_token is None for row in sent.values())
    assert envelope_sender(sent["p3@example.org"], verp=True) == SERVER   # as before VERP
    with server.engine.connect() as conn:
        raw = conn.connection.driver_connection
        [made] = raw.execute("SELECT sql FROM sqlite_master WHERE name = "
                             "'ix_outbound_mail_bounce_token'").fetchone()
    assert made.endswith("WHERE bounce_token IS NOT NULL"), made
    found = match(server, shape("postfix_dsn", message_id=sent["p3@example.org"].message_id))
    assert found is not None and found.via == "message-id"


def test_a_bounce_for_an_unknown_message_id_matches_nothing(server: Server) -> None:
    started_game(server)
    assert match(server, shape("postfix_dsn", message_id="<nobody-sent@example.org>")) is None


def test_a_forged_bounce_naming_a_player_matches_nothing(server: Server) -> None:
    started_game(server)
    forged = bounce_bytes("forged", message_id="", rcpt="p3@example.org", server=SERVER,
                          from_addr=SERVER)
    assert read_bounce(forged, SERVER) is not None   # it reads as a bounce ...
    assert match(server, forged) is None              # ... for no mail of ours


def test_another_players_message_id_does_not_mark_this_player(server: Server) -> None:
    """p2 knows the Message-ID of their own report: a bounce "for p3" naming it is forged."""
    started_game(server)
    of_p2 = reports(server)["p2@example.org"]
    assert match(server, shape("postfix_dsn", message_id=of_p2.message_id)) is None


def test_an_unknown_verp_token_matches_nothing(server: Server) -> None:
    started_game(server)
    raw = shape("verp_only", server=verp_address(SERVER, "ffffffffffffffff"))
    assert match(server, raw) is None


def test_without_verp_the_envelope_sender_is_the_servers_address(server: Server) -> None:
    started_game(server)
    sent = reports(server)["p1@example.org"]
    assert envelope_sender(sent, verp=False) == SERVER


def test_corpus_files_are_what_the_kit_lists() -> None:
    names = {p.stem for p in (Path(__file__).parents[1] / "corpus" / "bounces").glob("*.eml")}
    assert names == set(SHAPES) | {"forged"}


@pytest.mark.mailstack
def test_with_verp_each_mail_arrives_with_its_own_return_path(mailstack: Any,
                                                              tmp_path: Path) -> None:
    users = ["p1", "p2", "p3", "p4", "p5"]
    server = stack_server(mailstack, tmp_path, users)
    server = Server(dataclasses.replace(server.settings, smtp=dataclasses.replace(
        server.settings.smtp, verp=True)))
    admin = server.referee.admin
    admin(["NEWGAME", "g1", "SEED", "3"])
    for user in users:
        admin(["ADD", "g1", mailstack.address(user), user])
    admin(["START", "g1"])
    assert server.send().sent == 5
    by_rcpt = {json.loads(r.rcpts_json)[0]: r for r in reports(server).values()}
    for user in users:
        raw = mailstack.wait_for(user, 1)[-1]
        return_path = message_from_bytes(raw, policy=policy.compat32)["Return-Path"]
        row = by_rcpt[mailstack.address(user)]
        assert return_path == f"<{verp_address(mailstack.address('bluff'), row.bounce_token)}>"
