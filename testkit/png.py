"""Reading a browser screenshot (PNG) back, to check that a page is not blank: a tiny
decoder (8-bit RGB/RGBA, not interlaced: what Chromium writes), standard library only."""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of raw pixel bytes)."""
    assert png.startswith(SIGNATURE), "not a PNG"
    pos, data, header = len(SIGNATURE), b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            data += chunk
        elif kind == b"IEND":
            break
    assert header is not None, "no IHDR"
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unexpected PNG {header}"
    step = 3 if colour == 2 else 4
    raw = zlib.decompress(data)
    stride = width * step
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(step, stride):
                line[i] = (line[i] + line[i - step]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - step] if i >= step else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                left = line[i - step] if i >= step else 0
                up_left = previous[i - step] if i >= step else 0
                line[i] = (line[i] + _paeth(left, previous[i], up_left)) & 0xFF
        rows.append(bytes(line))
        previous = bytes(line)
    return width, step, rows


def distinct_colours(png: bytes) -> int:
    """How many different colours the image has (a blank page has one or two)."""
    _, step, rows = pixels(png)
    seen: set[bytes] = set()
    for row in rows:
        seen.update(row[i:i + 3] for i in range(0, len(row), step))
    return len(seen)
