"""Sender checks: only our mail server's Authentication-Results count, and they decide
whether a mail is aligned with its From domain (DMARC, or SPF / DKIM for that domain)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.config import ConfigError, SecuritySettings, load_settings
from pbem.mail.headers import read_mail_header
from pbem.mail.senderauth import Verdict, aligned_domain, authserv_id, check_sender, trusted_results

MX = "mx.bluff.test"
FROM = "ann@player.example"


def mail(*headers: str, from_addr: str = FROM) -> bytes:
    """Headers top to bottom as a mail server stores them, then the sender's own."""
    lines = [*headers, f"From: Ann <{from_addr}>", "To: bluff@bluff.test", "Subject: orders",
             "", "BID 3 4", ""]
    return "\r\n".join(lines).encode()


def checked(raw: bytes, from_addr: str, server_id: str) -> Verdict:
    """check_sender on the mail's header block, read as the reader reads it."""
    return check_sender(read_mail_header(raw), from_addr, server_id)


RECEIVED = "Received: from out.player.example by mx.bluff.test with ESMTPS id 1"


def ar(results: str, server: str = MX) -> str:
    return f"Authentication-Results: {server}; {results}"


@pytest.mark.parametrize("results, aligned, words", [
    ("dmarc=pass (p=reject) header.from=player.example", True, "DMARC pass"),
    ("dmarc=fail (p=none) header.from=player.example", False, "DMARC fail"),
    ("spf=pass smtp.mailfrom=ann@player.example", True, "SPF pass"),
    ("spf=pass smtp.mailfrom=bounces@mail.player.example", True, "SPF pass"),
    ("spf=pass smtp.mailfrom=bounce@esp.example; dkim=fail header.d=player.example", False,
     "SPF pass for esp.example; DKIM fail"),
    ("dkim=pass header.d=player.example header.s=s1", True, "DKIM pass"),
    ("dkim=pass header.i=@news.player.example", True, "DKIM pass"),
    ("dkim=pass header.d=esp.example; spf=softfail smtp.mailfrom=ann@player.example", False,
     "SPF softfail"),
    ("spf=none smtp.mailfrom=ann@player.example; dkim=none", False, "SPF none"),
    ("none", False, "no SPF, DKIM or DMARC result"),
    ("dmarc=pass header.from=other.example; spf=fail smtp.mailfrom=ann@player.example", False,
     "SPF fail"),
])
def test_results_decide_alignment(results: str, aligned: bool, words: str) -> None:
    verdict = checked(mail(ar(results), RECEIVED), FROM, MX)
    assert verdict.aligned is aligned and words in verdict.reason


def test_without_our_header_there_is_no_verdict() -> None:
    for raw in (mail(RECEIVED), mail(ar("dmarc=pass header.from=player.example",
                                        server="mx.other.example"), RECEIVED)):
        verdict = checked(raw, FROM, MX)
        assert verdict.aligned is None and MX in verdict.reason


def test_a_header_the_sender_wrote_below_our_received_is_ignored() -> None:
    forged = ar("dmarc=pass header.from=player.example")
    raw = mail(ar("spf=fail smtp.mailfrom=ann@player.example"), RECEIVED, forged)
    assert checked(raw, FROM, MX).aligned is False
    # and when our server wrote nothing at all about SPF/DKIM/DMARC:
    assert checked(mail(ar("none"), RECEIVED, forged), FROM, MX).aligned is False


def test_our_servers_results_split_over_several_headers_all_count() -> None:
    raw = mail("Received: by dovecot (LMTP)", ar("dmarc=none header.from=player.example"),
               "ARC-Seal: i=1; a=rsa-sha256; cv=none", ar("dkim=pass header.d=player.example"),
               RECEIVED)
    verdict = checked(raw, FROM, MX)
    assert verdict.aligned is True and "DKIM pass" in verdict.reason


def test_the_topmost_result_of_a_method_wins() -> None:
    raw = mail(ar("dmarc=fail header.from=player.example"),
               ar("dmarc=pass header.from=player.example"), RECEIVED)
    assert checked(raw, FROM, MX).aligned is False


def test_a_mangled_header_of_ours_counts_as_no_result_not_as_a_reason_to_look_below() -> None:
    raw = mail(f"Authentication-Results: {MX}; ;;; ===", RECEIVED,
               ar("dmarc=pass header.from=player.example"))
    assert checked(raw, FROM, MX).aligned is False


def test_authserv_id_reading() -> None:
    assert authserv_id("mx.bluff.test; spf=pass") == "mx.bluff.test"
    assert authserv_id(" MX.Bluff.Test (our mx) 1 ; none") == "mx.bluff.test"
    assert authserv_id('"mx.bluff.test"; none') == "mx.bluff.test"
    assert authserv_id("") == ""


def test_aligned_domain() -> None:
    assert aligned_domain("player.example", "player.example")
    assert aligned_domain("player.example", "mail.player.example")
    assert aligned_domain("news.player.example", "player.example")
    assert not aligned_domain("player.example", "evilplayer.example")
    assert not aligned_domain("player.example", "")


HEADER_NAMES = st.sampled_from(["Received", "Authentication-Results", "X-Spam-Status",
                                "DKIM-Signature", "Received-SPF", "X-Other"])
VALUES = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=80)


@given(st.lists(st.tuples(HEADER_NAMES, VALUES), max_size=8))
def test_whatever_the_sender_writes_below_our_received_changes_nothing(
        below: list[tuple[str, str]]) -> None:
    top = [ar("spf=fail smtp.mailfrom=ann@player.example"), RECEIVED]
    injected = [f"{n}: {v}" for n, v in below] + [ar("dmarc=pass header.from=player.example")]
    assert checked(mail(*top, *injected), FROM, MX) == checked(mail(*top), FROM, MX)


@given(st.lists(st.tuples(HEADER_NAMES, VALUES), max_size=8), VALUES)
def test_any_headers_give_a_verdict_without_an_exception(headers: list[tuple[str, str]],
                                                         server: str) -> None:
    raw = mail(*(f"{n}: {v}" for n, v in headers))
    verdict = checked(raw, FROM, server or MX)
    assert verdict.aligned in (True, False, None) and verdict.reason
    assert isinstance(trusted_results([(n, v) for n, v in headers], server), list)


def test_security_settings(tmp_path: Path) -> None:
    toml = tmp_path / "pbem.toml"
    toml.write_text('[security]\nrequire_aligned = true\nauthserv_id = "mx.bluff.test"\n')
    assert load_settings(toml, env={}).security == SecuritySettings(True, "mx.bluff.test")
    assert load_settings(None, env={}).security == SecuritySettings(False, "")
    toml.write_text("[security]\nrequire_aligned = true\n")
    with pytest.raises(ConfigError, match="authserv_id"):
        load_settings(toml, env={})
    toml.write_text("[security]\nrequire_alinged = true\n")
    with pytest.raises(ConfigError, match="security"):
        load_settings(toml, env={})
