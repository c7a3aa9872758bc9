"""The colour arithmetic of the picture tests (testkit.colours): colour-blindness
simulation, CIELAB distance and dark-mode inversion, as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from testkit.colours import (
    DARK_MODES,
    VISIONS,
    contrast,
    darkened,
    distance,
    lab,
    parse,
    simulate,
)

channels = st.integers(0, 255)
colours = st.tuples(channels, channels, channels).map(lambda c: tuple(v / 255 for v in c))


@given(channels, st.sampled_from(VISIONS))
def test_a_grey_looks_the_same_to_every_vision(level: int, vision: str) -> None:
    grey = (level / 255,) * 3
    assert distance(simulate(grey, vision), grey) < 1.0  # type: ignore[arg-type]


@given(colours, colours)
def test_the_distance_is_symmetric_and_zero_only_for_one_colour(one: tuple, other: tuple) -> None:
    assert abs(distance(one, other) - distance(other, one)) < 1e-9
    assert distance(one, one) == 0
    if distance(one, other) == 0:
        assert max(abs(a - b) for a, b in zip(one, other, strict=True)) < 1 / 255


def test_red_and_green_look_alike_to_a_deuteranope_but_not_otherwise() -> None:
    red, green = parse("#d62728"), parse("#2ca02c")
    assert distance(red, green) > 60
    assert distance(simulate(red, "deuteranopia"), simulate(green, "deuteranopia")) < 25
    assert distance(simulate(red, "protanopia"), simulate(green, "protanopia")) < 40


@given(colours)
def test_a_full_dark_mode_turns_lightness_over_and_twice_is_no_change(rgb: tuple) -> None:
    once = darkened(rgb, "full")
    twice = darkened(once, "full")
    assert distance(twice, rgb) < 1.0
    light, turned = (max(c) + min(c) for c in (rgb, once))
    assert abs(light + turned - 2) < 1e-9


@given(colours)
def test_a_partial_dark_mode_leaves_dark_colours_alone(rgb: tuple) -> None:
    if max(rgb) + min(rgb) <= 1:
        assert darkened(rgb, "partial") == rgb
    else:
        assert lab(darkened(rgb, "partial"))[0] <= lab(rgb)[0] + 1e-6


def test_white_turns_black_and_black_stays_in_both_dark_modes() -> None:
    for mode in DARK_MODES:
        assert darkened((1.0, 1.0, 1.0), mode) == (0.0, 0.0, 0.0)
    assert darkened((0.0, 0.0, 0.0), "partial") == (0.0, 0.0, 0.0)
    assert contrast((1.0, 1.0, 1.0), (0.0, 0.0, 0.0)) == 21.0


def test_the_old_mail_bars_were_lost_in_a_dark_mode() -> None:
    """#333 solid and #fff outlined bars: on Outlook's dark background (the white page
    turned black), the solid one all but vanished."""
    page = darkened(parse("#ffffff"), "partial")
    assert distance(darkened(parse("#333333"), "partial"), page) < 22
    ours = parse("#3b6ea5")
    for mode in DARK_MODES:
        assert distance(darkened(ours, mode), darkened(parse("#ffffff"), mode)) > 30
