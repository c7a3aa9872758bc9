"""pbem.mail.throttle: mails a client IP and an envelope sender may hand the listener
within a sliding window (pure logic: hypothesis and examples)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pbem.mail.throttle import IntakeThrottle, SlidingCounts

events = st.lists(st.tuples(st.floats(min_value=0, max_value=30, allow_nan=False),
                            st.sampled_from("abc")), max_size=200)


@given(events, st.integers(min_value=1, max_value=6),
       st.floats(min_value=0.5, max_value=50, allow_nan=False))
def test_a_key_is_refused_exactly_when_its_window_is_full(steps, most, window) -> None:
    counts, now = SlidingCounts(most, window), 0.0
    taken: dict[str, list[float]] = {}
    for step, key in steps:
        now += step
        recent = [t for t in taken.get(key, []) if t > now - window]
        assert counts.take(key, now) == (len(recent) < most)
        if len(recent) < most:
            taken.setdefault(key, []).append(now)
    for key, times in taken.items():   # never more than `most` in any window
        assert all(sum(t <= u < t + window for u in times) <= most for t in times), key


@given(st.lists(st.text(min_size=1, max_size=3), max_size=100),
       st.integers(min_value=1, max_value=10))
def test_the_keys_kept_are_bounded(keys, max_keys) -> None:
    counts = SlidingCounts(1, 60, max_keys=max_keys)
    for key in keys:
        counts.take(key, 0.0)
        assert len(counts) <= max_keys


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_ip_and_a_sender_are_slowed_apart() -> None:
    clock = Clock()
    throttle = IntakeThrottle(per_ip=3, per_sender=2, window=60, clock=clock)
    assert throttle.admit("192.0.2.1", "a@x.test") is None
    assert throttle.admit("192.0.2.1", "A@x.test") is None
    said = throttle.admit("192.0.2.1", "a@x.test")       # the sender's third in a minute
    assert said is not None and said.startswith("451 4.7.1") and "sender" in said
    assert throttle.admit("192.0.2.1", "b@x.test") is not None   # the IP's fourth
    assert throttle.admit("198.51.100.7", "b@x.test") is None    # another client
    clock.now = 61
    assert throttle.admit("192.0.2.1", "a@x.test") is None       # the window has passed


def test_zero_is_no_limit_and_unknown_clients_pass() -> None:
    throttle = IntakeThrottle(per_ip=0, per_sender=0, clock=Clock())
    assert all(throttle.admit("192.0.2.1", "a@x.test") is None for _ in range(1000))
    limited = IntakeThrottle(per_ip=1, per_sender=1, clock=Clock())
    assert all(limited.admit(None, None) is None for _ in range(10))
    assert limited.admit(None, "") is None
