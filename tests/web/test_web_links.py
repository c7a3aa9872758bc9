"""The private links' tokens (pbem.text.links): signed for one seat of one game and one key
generation, expiring, and never logged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.text.links import (
    LinkError,
    expired,
    key_generation,
    mac_matches,
    make_token,
    private_link,
    read_token,
    redact,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SECRET = "s3cret"
ids = st.integers(min_value=1, max_value=10**9)
seats = st.integers(min_value=1, max_value=6)
generations = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)


def token(**changes: object) -> str:
    fields: dict[str, object] = {"game_id": 7, "seat": 3, "player_id": 41,
                                 "generation": "a" * 64, "expires": NOW + timedelta(days=30)}
    fields.update(changes)
    return make_token(SECRET, **fields)  # type: ignore[arg-type]


def test_a_link_carries_its_claim_and_checks() -> None:
    claim = read_token(token())
    assert (claim.game_id, claim.seat, claim.player_id) == (7, 3, 41)
    assert claim.expires_at == NOW + timedelta(days=30)
    assert mac_matches(SECRET, claim, "a" * 64)
    assert not expired(claim, NOW) and expired(claim, NOW + timedelta(days=30))


def test_another_secret_or_key_generation_does_not_check() -> None:
    claim = read_token(token())
    assert not mac_matches("other", claim, "a" * 64)
    assert not mac_matches(SECRET, claim, "b" * 64)     # the seat was REPLACEd: a new key
    assert not mac_matches("", claim, "a" * 64)         # no secret: no private pages at all


def test_private_link_needs_a_base_url_and_a_secret() -> None:
    made: dict[str, Any] = {"game_id": 7, "seat": 3, "player_id": 41,
                            "generation": "a" * 64, "now": NOW}
    assert private_link("", SECRET, 30, **made) is None
    assert private_link("https://bluff.example.org", "", 30, **made) is None
    link = private_link("https://bluff.example.org/", SECRET, 30, **made)
    assert link is not None and link.startswith("https://bluff.example.org/p/7.3.41.")
    claim = read_token(link.rsplit("/", 1)[1])
    assert claim.expires_at == NOW + timedelta(days=30)


@pytest.mark.parametrize("bad", ["", "x", "7.3.41.1", "7.3.41.1.short", "7.3.41.1." + "A" * 23,
                                 "-7.3.41.1." + "A" * 22, "7.3.41.1." + "A" * 21 + "=",
                                 "7.3.41.99999999999999." + "A" * 22, "../../etc/passwd"])
def test_malformed_tokens_are_refused(bad: str) -> None:
    with pytest.raises(LinkError):
        read_token(bad)


@given(ids, seats, ids, generations, st.integers(min_value=1, max_value=4_000_000_000))
def test_any_link_checks_for_exactly_its_own_claim(game_id: int, seat: int, player_id: int,
                                                   generation: str, stamp: int) -> None:
    expires = datetime.fromtimestamp(stamp, UTC)
    text = make_token(SECRET, game_id=game_id, seat=seat, player_id=player_id,
                      generation=generation, expires=expires)
    claim = read_token(text)
    assert mac_matches(SECRET, claim, generation)
    for other in (f"{game_id + 1}.{seat}.{player_id}.{stamp}",
                  f"{game_id}.{seat % 6 + 1}.{player_id}.{stamp}",
                  f"{game_id}.{seat}.{player_id + 1}.{stamp}",
                  f"{game_id}.{seat}.{player_id}.{stamp + 86400}"):
        bent = read_token(f"{other}.{claim.mac}")
        assert not mac_matches(SECRET, bent, generation)


@given(st.integers(min_value=0, max_value=21), st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                               "abcdefghijklmnopqrstuvwxyz"
                                                               "0123456789-_"))
def test_changing_any_character_of_the_mac_breaks_it(at: int, char: str) -> None:
    text = token()
    head, mac = text.rsplit(".", 1)
    if mac[at] == char:
        return
    bent = read_token(f"{head}.{mac[:at]}{char}{mac[at + 1:]}")
    assert not mac_matches(SECRET, bent, "a" * 64)


def test_key_generation_is_the_key_digest() -> None:
    assert key_generation("ab" * 32, "anything") == "ab" * 32
    assert key_generation("", "k1") == key_generation("", " k1 ") != key_generation("", "k2")


@given(st.text(max_size=300))
def test_a_logged_path_never_holds_a_token(prefix: str) -> None:
    text = token()
    for path in (f"/p/{text}", f"/api/p/{text}", f"/{prefix}/{text}", f"//p/{text}/x",
                 f"/games/{text}"):
        assert text not in redact(path)
        assert text.rsplit(".", 1)[1] not in redact(path)
    assert redact("/games/g1") == "/games/g1"
    assert len(redact("/" + "a" * 5000)) < 210
