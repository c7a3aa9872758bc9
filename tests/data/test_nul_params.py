"""A statement's parameters lose their NULs (pbem.store.engines._without_nul): the same values
with U+FFFD for each NUL in text, whatever the nesting; untouched (the same object) when
no text holds one, which is a statement's common case."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pbem.store.engines import _without_nul

_SCALARS = st.one_of(st.text(alphabet=st.sampled_from("ab\x00é")), st.integers(),
                     st.none(), st.binary(max_size=4), st.booleans(), st.floats(allow_nan=False))
_PARAMS = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=3), inner, max_size=4)), max_leaves=12)


def _expected(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {key: _expected(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_expected(inner) for inner in value)
    return value


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(inner) for inner in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(inner) for inner in value)
    return False


@given(_PARAMS)
def test_every_nul_in_text_is_replaced_and_nothing_else_changes(params: Any) -> None:
    scrubbed = _without_nul(params)
    assert scrubbed == _expected(params) and type(scrubbed) is type(params)
    if not _holds_nul(params):
        assert scrubbed is params


def test_bytes_keep_their_nuls_and_a_batch_is_scrubbed_row_by_row() -> None:
    assert _without_nul((b"a\x00b", "c\x00")) == (b"a\x00b", "c\ufffd")
    batch = [("x", 1), ("y\x00", 2)]
    assert _without_nul(batch) == [("x", 1), ("y\ufffd", 2)]
    assert batch == [("x", 1), ("y\x00", 2)]   # the caller's values as they were
