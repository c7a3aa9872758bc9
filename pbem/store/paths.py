"""Where the packaged folders are: inside the wheel, or at the top of a checkout."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # pbem/, above store/


def packaged_dir(name: str) -> Path:
    """templates/ or schema/: pbem/_<name> in a wheel, <repo>/<name> in a checkout."""
    installed = _PACKAGE / f"_{name}"
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable (best effort: a folder that cannot be
    opened or synced, as on some file systems, is left as it is)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
