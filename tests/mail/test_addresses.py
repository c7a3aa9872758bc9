"""The one address rule (pbem.mail.addresses): what the reader takes as a sender is
exactly what the composer can write to, and the sender is the real address, never
something in the display name (issue 16, items 1-3)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pbem.mail.addresses import address_problem, checked_address, parse_sender
from pbem.mail.compose import build_mail, make_message_id
from pbem.mail.read import read_message
from pbem.text.errors import Refusal
from testkit.desk import by_seat, make_server, started_game


def compose_to(address: str) -> bytes:
    return build_mail(from_addr="bluff@bluff.test", to_addrs=[address], subject="answer",
                      text="hello\n", message_id=make_message_id("bluff.test", "test"))


# --------------------------------------------------------------------------- the header

@pytest.mark.parametrize(("header", "address"), [
    ("p3@bluff.test <evil@x.test>", "evil@x.test"),          # an @ in an unquoted name
    ("p1@bluff.test<evil@x.test>", "evil@x.test"),           # ... and no space
    ('"p3@bluff.test" <evil@x.test>', "evil@x.test"),
    ("=?utf-8?q?p1@bluff.test?= <evil@x.test>", "evil@x.test"),
    ("Ann <Ann@Example.ORG>", "ann@example.org"),
    ("<ann@example.org>", "ann@example.org"),
    ("ann@example.org", "ann@example.org"),
    ("ann@example.org (Ann, p1@bluff.test)", "ann@example.org"),
    ('"Smith, Ann (the <boss>)" <ann@example.org>', "ann@example.org"),
    ("Ann <ann@example.org> (comment)", "ann@example.org"),
    ("ann@example.org,", "ann@example.org"),
    ("bluff@localhost", "bluff@localhost"),
])
def test_the_sender_is_the_real_address(header: str, address: str) -> None:
    assert parse_sender(header).address == address
    compose_to(address)                    # and it is an address the server can write to


@pytest.mark.parametrize(("header", "why"), [
    ("р1@bluff.test", "outside ASCII"),                      # a Cyrillic "р"
    ("Ann <аnn@example.org>", "outside ASCII"),
    ("ann@exämple.org", "outside ASCII"),
    ("p1\x01@bluff.test", "control character"),
    ("p1@bluff.test\x7f", "control character"),
    ("Evil <p1@bluff.test> <evil@x.test>", "two addresses"),
    ("<p1@bluff.test> evil@x.test", "text after"),
    ("p1@bluff.test, evil@x.test", "several senders"),
    ("undisclosed-recipients:;", "group"),
    ("Team: p1@bluff.test, p2@bluff.test;", "group"),
    ('"unterminated <p1@bluff.test>', "not closed"),
    ("Ann <p1@bluff.test", "not closed"),
    ("(p1@bluff.test", "not closed"),
    ("not an address at all", "space"),
    ("MAILER-DAEMON", "name@domain"),
    ("a..b@example.org", "name part"),
    ('"a"@example.org', "name part"),
    ('"p1@bluff.test"', "name part"),
    ("a@[192.0.2.1]", "host name"),
    ("a@example.org.", "host name"),
    ("=?utf-8?q?a?=@example.org", "encoded word"),
    ("x" + "." * 20_000 + "@evil.test", "longer than"),
    ("", "no sender"),
])
def test_a_header_without_one_usable_address_names_no_sender(header: str, why: str) -> None:
    found = parse_sender(header)
    assert found.address is None
    assert found.problem is not None and why in found.problem


def test_the_local_part_of_a_refused_address_is_kept_for_bounce_detection() -> None:
    assert parse_sender("MAILER-DAEMON").local_part == "mailer-daemon"
    assert parse_sender("Mail System <MAILER-DAEMON>").local_part == "mailer-daemon"


def test_the_composer_refuses_what_the_reader_refuses() -> None:
    for spec in ["р1@bluff.test", "p1\x01@bluff.test", "a..b@x.test", "a@b", "a@b@c"]:
        if address_problem(spec) is None:
            compose_to(spec)
            continue
        with pytest.raises(ValueError):
            compose_to(spec)
        with pytest.raises(ValueError):
            checked_address(spec)


# --------------------------------------------------------------------------- properties

ADDRESS_CHARS = st.sampled_from(list("ab1.-_+@<>\"(),;:\\ \x00\x01\x7f") +
                                ["р", "ä", "\u2028", "=?", "?="])
ADDRESS_LIKE = st.lists(ADDRESS_CHARS, max_size=30).map("".join)
HEADERS = st.one_of(
    st.text(max_size=60),
    ADDRESS_LIKE,
    st.builds(lambda name, addr: f"{name} <{addr}>", ADDRESS_LIKE, ADDRESS_LIKE),
    st.builds(lambda name, addr: f'"{name}" <{addr}>', st.text(max_size=20), ADDRESS_LIKE),
)


@settings(max_examples=400, deadline=None)
@given(header=HEADERS)
@example(header="p3@bluff.test <evil@x.test>")
@example(header="р1@bluff.test")
def test_what_the_reader_takes_the_composer_can_write_to(header: str) -> None:
    found = parse_sender(header)
    if found.address is None:
        assert found.problem
        return
    assert found.problem is None
    assert address_problem(found.address) is None
    compose_to(found.address)
    # the address is the angle address when there is one, never the display name's
    if "<" in header:
        assert found.address in header.lower().split("<", 1)[1]


@settings(max_examples=300, deadline=None)
@given(spec=st.one_of(ADDRESS_LIKE, st.text(max_size=40)))
def test_one_rule_both_ways(spec: str) -> None:
    """address_problem decides for the composer and for the reader alike."""
    if address_problem(spec) is None:
        compose_to(spec)
        assert parse_sender(spec).address == spec.lower()
        assert parse_sender(f"Someone <{spec}>").address == spec.lower()
    else:
        with pytest.raises(ValueError):
            compose_to(spec)
        assert parse_sender(f"Someone <{spec}>").address is None


def test_the_reader_reports_why_it_found_no_sender() -> None:
    msg = read_message("From: р1@bluff.test\r\n\r\nBID 3 fives\r\n".encode())
    assert msg.from_addr is None
    assert msg.sender_problem is not None and "outside ASCII" in msg.sender_problem
    msg = read_message(b"From: a@x.test\r\nFrom: b@x.test\r\n\r\nBID 3 fives\r\n")
    assert msg.from_addr is None and msg.sender_problem == "the mail has several From headers"
    msg = read_message(b"Subject: none\r\n\r\nhi\r\n")
    assert msg.from_addr is None and msg.sender_problem == "no sender address"


# --------------------------------------------------------------------------- referee commands

@pytest.mark.parametrize("address", ["р1@bluff.test", "a..b@example.org", "ann@exämple.org",
                                     "ann@example.org."])
def test_add_and_replace_refuse_an_address_the_server_cannot_write_to(tmp_path, clock,
                                                                     address: str) -> None:
    """The same rule as for a sender: before, ADD took these and every mail to them failed."""
    server = make_server(tmp_path, clock)
    started_game(server)
    for line in [f"ADD g1 {address} Ann", f"REPLACE g1 2 {address} Ann"]:
        with pytest.raises(Refusal) as refused:
            server.referee.admin(line.split())
        assert "not a mail address this server can write to" in str(refused.value)
    assert address not in {p.email for p in by_seat(server).values()}
