"""The shipped units leave the listener its file descriptors, and deploy/pbem.toml's
[listen] example names only settings pbem knows, with the defaults it documents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pbem.config import ConfigError, ListenSettings, load_settings

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


@pytest.mark.parametrize(("lines", "complaint"), [
    ('tls_cert = "c.pem"', "tls_cert and tls_key go together"),
    ("require_tls = true", "require_tls: needs tls_cert"),
    ("max_connections = 5\nmax_connections_per_ip = 6", "max_connections_per_ip"),
])
def test_a_listen_setting_that_cannot_work_stops_pbem(tmp_path: Path, lines: str,
                                                       complaint: str) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text(f"[listen]\n{lines}\n")
    with pytest.raises(ConfigError, match=complaint):
        load_settings(config, env={})


def test_the_certificate_paths_are_relative_to_the_config(tmp_path: Path) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text('[listen]\ntls_cert = "tls/c.pem"\ntls_key = "tls/k.pem"\n')
    listen = load_settings(config, env={}).listen
    assert listen is not None and listen.tls_cert == str(tmp_path / "tls" / "c.pem")
