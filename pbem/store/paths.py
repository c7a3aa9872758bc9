"""Where the packaged folders are: inside the wheel, or at the top of a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # pbem/, above store/


def packaged_dir(name: str) -> Path:
    """templates/ or schema/: pbem/_<name> in a wheel, <repo>/<name> in a checkout."""
    installed = _PACKAGE / f"_{name}"
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name
