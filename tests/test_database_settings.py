"""[database]: how SQLite commits is a setting (synchronous NORMAL by default, or FULL).

With WAL and synchronous=NORMAL a commit is not flushed to disk at once: a process crash
(the crash tests kill with SIGKILL) loses nothing, a power loss may lose the last commits
but never corrupts the database. FULL flushes every commit. README "Guarantees" says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from pbem.config import ConfigError, DatabaseSettings, load_settings
from tests.deskkit import Clock, make_server

# PRAGMA synchronous reads back as a number: 1 NORMAL, 2 FULL
LEVELS = {"normal": 1, "full": 2}


def synchronous_of(tmp_path: Path, db: DatabaseSettings | None) -> int:
    server = make_server(tmp_path, Clock(), **({"db": db} if db is not None else {}))
    with server.engine.connect() as conn:
        level = conn.execute(text("PRAGMA synchronous")).scalar_one()
        mode = conn.execute(text("PRAGMA journal_mode")).scalar_one()
    assert mode == "wal"
    return int(level)


def test_the_default_is_normal_and_full_is_a_setting(tmp_path: Path) -> None:
    assert synchronous_of(tmp_path / "default", None) == LEVELS["normal"]
    assert synchronous_of(tmp_path / "full", DatabaseSettings("full")) == LEVELS["full"]


def test_the_setting_is_read_from_the_database_section(tmp_path: Path) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text('[server]\ndatabase = "sqlite:///x.db"\n[database]\nsynchronous = "FULL"\n')
    assert load_settings(config, env={}).db.synchronous == "full"
    config.write_text('[server]\ndatabase = "sqlite:///x.db"\n')
    assert load_settings(config, env={}).db.synchronous == "normal"


@pytest.mark.parametrize("body", ['synchronous = "off"', 'fsync = "yes"'])
def test_a_wrong_setting_is_refused_with_its_section(tmp_path: Path, body: str) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text(f"[database]\n{body}\n")
    with pytest.raises(ConfigError, match=r"\[database\]"):
        load_settings(config, env={})
