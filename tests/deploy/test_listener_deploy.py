"""The shipped units leave the listener its file descriptors, and deploy/pbem.toml's
[listen] example names only settings pbem knows, with the defaults it documents."""

from __future__ import annotations

import re
from pathlib import Path

from pbem.config import ListenSettings, load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_the_units_raise_the_open_files_limit_above_the_connection_cap() -> None:
    for unit in ("pbem.service", "pbem@.service"):
        found = re.search(r"^LimitNOFILE=(\d+)$", (DEPLOY / unit).read_text(), re.MULTILINE)
        assert found and int(found[1]) >= 10 * ListenSettings().max_connections, unit


def test_the_listen_example_loads(tmp_path: Path) -> None:
    text = (DEPLOY / "pbem.toml").read_text()
    block = text[text.index("# [listen]"):text.index("\n\n", text.index("# [listen]"))]
    lines = [line.removeprefix("# ") for line in block.splitlines()]
    config = tmp_path / "pbem.toml"
    config.write_text("\n".join(line for line in lines
                                if not line.startswith(("tls_", "require_tls"))))
    listen = load_settings(config, env={}).listen
    assert listen is not None
    assert listen.max_connections == ListenSettings().max_connections
    assert listen.junk_bytes_per_day == ListenSettings().junk_bytes_per_day
