"""Colour arithmetic for the picture tests: how a colour looks to a reader with
deuteranopia or protanopia (the Machado, Oliveira and Fernandes 2009 matrices at full
severity, applied to linear RGB), how far apart two colours look (CIE76 distance in
CIELAB, D65), and how a mail program's dark mode turns a colour (a full lightness
inversion, and the "partial" one that darkens only light colours). Pure functions."""

from __future__ import annotations

import re

RGB = tuple[float, float, float]          # sRGB, each 0..1

# Machado et al. 2009, severity 1.0 (each row sums to 1: greys stay grey)
MACHADO = {
    "deuteranopia": ((0.367322, 0.860646, -0.227968),
                     (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "protanopia": ((0.152286, 1.052583, -0.204868),
                   (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
}
VISIONS = ("normal", *MACHADO)


def parse(colour: str) -> RGB:
    """'#1f4e8c', '#fff' or 'rgb(31, 78, 140)' as an sRGB triple."""
    text = colour.strip().lower()
    if text.startswith("#"):
        digits = text[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        assert len(digits) == 6, colour
        return tuple(int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]
    numbers = re.findall(r"[\d.]+", text)
    assert text.startswith("rgb") and len(numbers) >= 3, colour
    return tuple(float(n) / 255 for n in numbers[:3])  # type: ignore[return-value]


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _gamma(c: float) -> float:
    c = min(1.0, max(0.0, c))
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def simulate(rgb: RGB, vision: str) -> RGB:
    """The colour as a reader with that vision sees it ('normal': as it is)."""
    if vision == "normal":
        return rgb
    matrix = MACHADO[vision]
    lin = [_linear(c) for c in rgb]
    return tuple(_gamma(sum(m * c for m, c in zip(row, lin, strict=True)))  # type: ignore[return-value]
                 for row in matrix)


def lab(rgb: RGB) -> RGB:
    """CIELAB (D65) of an sRGB colour."""
    r, g, b = (_linear(c) for c in rgb)
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def distance(one: RGB, other: RGB) -> float:
    """CIE76 distance: about 2.3 is just noticeable, 20 tells lines apart at a glance."""
    a, b = lab(one), lab(other)
    return sum((p - q) ** 2 for p, q in zip(a, b, strict=True)) ** 0.5


def closest_pair(colours: list[str], vision: str) -> tuple[float, str, str]:
    """The two colours that look most alike to that vision, and how far apart."""
    best = (float("inf"), "", "")
    for i, one in enumerate(colours):
        for other in colours[i + 1:]:
            d = distance(simulate(parse(one), vision), simulate(parse(other), vision))
            best = min(best, (d, one, other))
    return best


def luminance(rgb: RGB) -> float:
    r, g, b = (_linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(one: RGB, other: RGB) -> float:
    """The WCAG contrast ratio, 1 to 21."""
    hi, lo = sorted((luminance(one), luminance(other)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _invert_lightness(rgb: RGB, only_light: bool) -> RGB:
    """The colour with its HSL lightness turned over (l -> 1 - l), hue and saturation
    kept; only_light: colours darker than the middle are left as they are."""
    hi, lo = max(rgb), min(rgb)
    light = (hi + lo) / 2
    if only_light and light <= 0.5:
        return rgb
    if hi == lo:
        return (1 - light,) * 3
    d = hi - lo
    sat = d / (2 - hi - lo) if light > 0.5 else d / (hi + lo)
    r, g, b = rgb
    if hi == r:
        hue = ((g - b) / d) % 6
    elif hi == g:
        hue = (b - r) / d + 2
    else:
        hue = (r - g) / d + 4
    new = 1 - light
    chroma = (1 - abs(2 * new - 1)) * sat
    xx = chroma * (1 - abs(hue % 2 - 1))
    m = new - chroma / 2
    sector = int(hue) % 6
    r1, g1, b1 = ((chroma, xx, 0.0), (xx, chroma, 0.0), (0.0, chroma, xx),
                  (0.0, xx, chroma), (xx, 0.0, chroma), (chroma, 0.0, xx))[sector]
    return (r1 + m, g1 + m, b1 + m)


DARK_MODES = ("full", "partial")


def darkened(rgb: RGB, mode: str) -> RGB:
    """The colour as a mail program's dark mode paints it: 'full' turns every lightness
    over (the Gmail app), 'partial' only the light ones (Outlook's, roughly)."""
    return _invert_lightness(rgb, only_light=mode == "partial")
