"""The SASL initial responses of XOAUTH2 and OAUTHBEARER (RFC 7628), and what an IDLE
watch takes for news (pure logic: examples and properties)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pbem.mail.idle import _is_bye, _is_exists
from pbem.mail.oauth import sasl_oauthbearer, sasl_xoauth2

names = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=",="),
                min_size=1, max_size=40)
tokens = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=200)


def test_the_documented_examples() -> None:
    assert sasl_xoauth2("someuser@example.com", "ya29.vF9dft4qmTc2Nvb3RlckBhdHRhdmlzdGEuY29tCg") \
        == ("user=someuser@example.com\x01auth=Bearer "
            "ya29.vF9dft4qmTc2Nvb3RlckBhdHRhdmlzdGEuY29tCg\x01\x01")
    assert sasl_oauthbearer("user@example.com", "vF9dft4qmTc2Nvb3RlckBhdHRhdmlzdGEuY29tCg") \
        == "n,a=user@example.com,\x01auth=Bearer vF9dft4qmTc2Nvb3RlckBhdHRhdmlzdGEuY29tCg\x01\x01"


@given(names, tokens)
def test_xoauth2_names_the_user_and_the_bearer_token(user: str, token: str) -> None:
    said = sasl_xoauth2(user, token)
    assert said.endswith("\x01\x01")
    fields = dict(part.split("=", 1) for part in said.split("\x01") if part)
    assert fields == {"user": user, "auth": f"Bearer {token}"}


@given(names, tokens)
def test_oauthbearer_has_the_gs2_header_then_the_bearer_token(user: str, token: str) -> None:
    header, auth, *rest = sasl_oauthbearer(user, token).split("\x01")
    assert header == f"n,a={user},"
    assert auth == f"auth=Bearer {token}"
    assert rest == ["", ""]


@given(st.integers(0, 2**32), st.sampled_from([b"EXISTS", b"RECENT", b"EXPUNGE", b"FETCH"]))
def test_only_exists_is_news_of_mail(count: int, what: bytes) -> None:
    assert _is_exists((count, what)) is (what == b"EXISTS")
    assert not _is_bye((count, what))


def test_bye_and_odd_responses() -> None:
    assert _is_bye((b"BYE", b"Server shutting down."))
    assert not _is_exists((b"OK", b"Still here"))
    assert not _is_exists(b"garbage") and not _is_bye(())
