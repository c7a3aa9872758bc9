"""A broken pbem.toml stops pbem before it starts: every mistake named with its file,
section, key and fix, all at once, exit code 2, no traceback (pbem.config.read_config)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pbem import __version__
from pbem.cli import build_parser
from pbem.config import (
    SYSTEM_CONFIG,
    ConfigError,
    command_settings,
    find_config,
    load_settings,
    read_config,
)

ROOT = Path(__file__).resolve().parents[2]
LOGIN = 'username = "bluff@example.org"\npassword = "p"\n'
IMAP = f'[imap]\nhost = "imap.example.org"\n{LOGIN}'

# (the file's text, the section and key named, a piece of the fix)
BROKEN: list[tuple[str, str, str, str]] = [
    ('[smpt]\nhost = "smtp.example.org"\n', "[smpt]", "", "did you mean [smtp]?"),
    ('[imapp]\nhost = "imap.example.org"\n', "[imapp]", "", "did you mean [imap]?"),
    ('[server]\nadress = "bluff@example.org"\n', "[server]", "adress", "did you mean address?"),
    ("[server]\npoll_seconds = 5\n", "[server]", "poll_seconds", "it belongs in [imap]"),
    ('database = "sqlite:///x.db"\n', "", "database", "put it under [server]"),
    (f'{IMAP}port = "abc"\n', "[imap]", "port", "port = 993 (a bare number: no quotes)"),
    (f'{IMAP}poll_seconds = "60s"\n', "[imap]", "poll_seconds", "no quotes, no unit"),
    ("[server]\ndatabase = 5\n", "[server]", "database", 'in quotes: database = "sqlite:///'),
    ('[server]\ndatabase = "postgres://pbem@db/pbem"\n', "[server]", "database",
     'database = "postgresql+psycopg://pbem@db/pbem"'),
    ('[server]\ndatabase = "mysql://pbem@db/pbem"\n', "[server]", "database",
     '"postgresql+psycopg://USER@HOST/DBNAME"'),
    ('[server]\ndatabase = "sqlite://pbem.db"\n', "[server]", "database", "four slashes"),
    (f"[imap]\n{LOGIN}", "[imap]", "host", 'add host = "..." under [imap]'),
    ("[smtp]\nport = 25\n", "[smtp]", "host", 'add host = "..." under [smtp]'),
    ('[imap]\nhost = "h"\nusername = "u"\n', "[imap]", "password", "PBEM_IMAP_PASSWORD(_FILE)"),
    ('[smtp]\nhost = "h"\npassword = "p"\n', "[smtp]", "username", 'add username = "..."'),
    ('[smtp]\nhost = "h"\nssl = "yes"\n', "[smtp]", "ssl", "ssl = true or ssl = false"),
    ('[smtp]\nhost = "h"\nport = 70000\n', "[smtp]", "port", "between 1 and 65535"),
    ('[server]\nlanguage = "fr"\n', "[server]", "language", "one of en, de, cs"),
    ('[server]\naddress = "bluff"\n', "[server]", "address", '"bluff@example.org"'),
    ("[server]\nsend_while_handling = 1\n", "[server]", "send_while_handling", "true or"),
    (f"{IMAP}fetchers = 0\n", "[imap]", "fetchers", "between 1 and 64"),
    ('[smtp]\nhost = "h"\nconnections = 100\n', "[smtp]", "connections", "between 1 and 32"),
    ('[listen]\ntls_cert = "c.pem"\n', "[listen]", "tls_key", "tls_cert and tls_key go"),
    ("[listen]\nrequire_tls = true\n", "[listen]", "require_tls", "needs tls_cert and tls_key"),
    ("[security]\nrequire_aligned = true\n", "[security]", "authserv_id",
     "first word of its Authentication-Results"),
    ('[dkim]\nselector = "s1"\n', "[dkim]", "private_key_file", "pbem dkim keygen"),
    ('[dkim]\nselector = "s1"\nprivate_key = "-----BEGIN"\n', "[dkim]", "private_key",
     "not in pbem.toml"),
    ('[dkim]\nprivate_key_file = "k.pem"\n', "[dkim]", "selector", 'add selector = "..."'),
    ('[database]\nsynchronous = "fast"\n', "[database]", "synchronous", "normal, full"),
    ('[web]\nport = "8080"\n', "[web]", "port", "no quotes"),
    ("[web]\nlink_days = -1\n", "[web]", "link_days", "link_days = 30.0"),
    ('[listen]\ntrusted_relays = "192.0.2.1"\n', "[listen]", "trusted_relays", '["..."]'),
    ('imap = "imap.example.org"\n', "[imap]", "", "write [imap] on a line of its own"),
    ("[server]\naddress = bluff@example.org\n", "", "", "line 2"),
    ("[server]\nmax_mail_bytes = 1.5\n", "[server]", "max_mail_bytes", "a whole number"),
    (f"{IMAP}poll_seconds = 0\n", "[imap]", "poll_seconds", "poll_seconds = 60.0"),
]
# the few run through the real command line (the rest in-process: the same code)
THROUGH_THE_CLI = {0, 5, 6, 8, 11}


def where(path: Path, section: str, key: str) -> str:
    return ": ".join(part for part in (str(path), f"{section} {key}".strip()) if part)


@pytest.mark.parametrize("number", range(len(BROKEN)))
def test_a_broken_config_names_file_section_key_and_fix(tmp_path: Path, number: int) -> None:
    text, section, key, fix = BROKEN[number]
    path = tmp_path / "broken.toml"
    path.write_text(text, encoding="utf-8")
    if number in THROUGH_THE_CLI:
        done = pbem("tick", "-c", str(path), cwd=tmp_path)
        said = done.stderr
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in said and said.startswith("config error: ")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.toml"]   # nothing made
    else:
        with pytest.raises(ConfigError) as refused:
            load_settings(path, env={})
        said = str(refused.value)
    line = next((line for line in said.splitlines() if where(path, section, key) + ":" in line),
                None)
    assert line is not None, said
    assert fix in line, said


def test_every_mistake_is_listed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[server]\ndatabase = 5\n[smpt]\nhost = "h"\n'
                    '[imap]\nport = "abc"\nusername = "u"\n', encoding="utf-8")
    said = str(read_config(path, {}).error())
    assert said.splitlines()[0] == f"5 mistakes in {path}:"
    assert [line.split(": ")[1] for line in said.splitlines()[1:]] == [
        "[smpt]", "[server] database", "[imap] port", "[imap] host", "[imap] password"]


def test_a_value_from_the_environment_names_its_variable(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[server]\naddress = "bluff@example.org"\n', encoding="utf-8")
    said = str(read_config(path, {"PBEM_DATABASE": "postgres://pbem:s3cret@db/pbem"}).error())
    assert said.startswith(f"{path}: [server] database (from PBEM_DATABASE): ")
    assert "s3cret" not in said and "postgresql+psycopg://pbem:****@db/pbem" in said


def test_every_sample_config_of_deploy_is_clean() -> None:
    for sample in sorted((ROOT / "deploy").glob("*.toml")):
        assert read_config(sample, {}).problems == [], sample


# ---------------------------------------------------------------- where the config is

def test_c_wins_over_pbem_config_which_wins_over_the_system_file(tmp_path: Path) -> None:
    system = tmp_path / "etc.toml"
    assert find_config(None, {}, system=system) is None
    system.write_text("", encoding="utf-8")
    assert find_config(None, {}, system=system) == system
    assert find_config(None, {"PBEM_CONFIG": "env.toml"}, system=system) == Path("env.toml")
    assert find_config("c.toml", {"PBEM_CONFIG": "env.toml"}, system=system) == Path("c.toml")
    assert SYSTEM_CONFIG == Path("/etc/pbem/pbem.toml")


def test_without_a_config_pbem_says_where_it_looked_and_makes_nothing(tmp_path: Path) -> None:
    assert not SYSTEM_CONFIG.exists(), "this machine has a system config"
    done = pbem("tick", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    for said in ("-c (not given)", "$PBEM_CONFIG (not set)", "/etc/pbem/pbem.toml (not there)",
                 f"no pbem.db in {tmp_path}", "docs/configuration.md"):
        assert said in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_embedded_defaults_still_serve_where_a_pbem_db_is(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no config file"):
        command_settings(None, {}, system=tmp_path / "none.toml", cwd=tmp_path)
    (tmp_path / "pbem.db").write_bytes(b"")
    settings = command_settings(None, {}, system=tmp_path / "none.toml", cwd=tmp_path)
    assert settings.imap is None and settings.smtp is None
    assert command_settings(None, {"PBEM_DATABASE": "sqlite:////x/pbem.db"},
                            system=tmp_path / "none.toml", cwd=tmp_path / "elsewhere"
                            ).database == "sqlite:////x/pbem.db"


def test_pbem_config_is_read_and_a_missing_one_is_named(tmp_path: Path) -> None:
    path = tmp_path / "from-env.toml"
    path.write_text('[server]\naddress = "bluff@example.org"\n', encoding="utf-8")
    done = pbem("config", "check", cwd=tmp_path, PBEM_CONFIG=str(path))
    assert done.returncode == 0, done.stderr
    assert f"from {path}" in done.stdout and 'address = "bluff@example.org"' in done.stdout
    gone = pbem("tick", cwd=tmp_path, PBEM_CONFIG=str(tmp_path / "gone.toml"))
    assert gone.returncode == 2
    assert f"PBEM_CONFIG names {tmp_path / 'gone.toml'}: there is no such file" in gone.stderr


# ---------------------------------------------------------------- secrets

def test_a_secret_is_read_from_its_file_variable(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[imap]\nhost = "h"\nusername = "u"\n[smtp]\nhost = "h"\n'
                    'username = "u"\npassword = "in-file"\n', encoding="utf-8")
    (tmp_path / "imap-password").write_text("from file\n", encoding="utf-8")
    settings = load_settings(path, {"PBEM_IMAP_PASSWORD_FILE": str(tmp_path / "imap-password")})
    assert settings.imap is not None and settings.imap.password == "from file"
    # the variable itself wins over its file
    settings = load_settings(path, {"PBEM_IMAP_PASSWORD_FILE": str(tmp_path / "imap-password"),
                                    "PBEM_IMAP_PASSWORD": "direct"})
    assert settings.imap is not None and settings.imap.password == "direct"
    said = str(read_config(path, {"PBEM_SMTP_PASSWORD_FILE": str(tmp_path / "gone")}).error())
    assert "(from PBEM_SMTP_PASSWORD_FILE): cannot read" in said
    assert "point PBEM_SMTP_PASSWORD_FILE at a readable file" in said


def test_systemd_credentials_are_read(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[smtp]\nhost = "h"\nusername = "u"\n', encoding="utf-8")
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "PBEM_SMTP_PASSWORD").write_text("smtp secret\n", encoding="utf-8")
    (credentials / "pbem-web-secret").write_text("web secret", encoding="utf-8")
    (credentials / "PBEM_REFEREE_KEY").write_text("credential", encoding="utf-8")
    settings = load_settings(path, {"CREDENTIALS_DIRECTORY": str(credentials),
                                    "PBEM_REFEREE_KEY": "environment"})
    assert settings.smtp is not None and settings.smtp.password == "smtp secret"
    assert settings.web.secret == "web secret"
    assert settings.referee_key == "environment"


def test_config_check_prints_the_effective_config_with_secrets_masked(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[server]\naddress = "bluff@example.org"\nreferee_key = "k3y-in-file"\n'
                    f'{IMAP}', encoding="utf-8")
    done = pbem("config", "check", "-c", str(path), cwd=tmp_path,
                PBEM_IMAP_PASSWORD="imap-s3cret", PBEM_WEB_SECRET="web-s3cret")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for secret in ("k3y-in-file", "imap-s3cret", "web-s3cret"):
        assert secret not in out
    assert 'password = "****"' in out and 'referee_key = "****"' in out
    assert "# from the environment: PBEM_IMAP_PASSWORD, PBEM_WEB_SECRET" in out
    assert f'database = "sqlite:///{tmp_path / "pbem.db"}"' in out    # defaults filled in
    assert "poll_seconds = 60.0" in out
    assert f"# [smtp] is not set: answers are written as .eml files to {tmp_path}" in out
    broken = pbem("config", "check", "-c", str(ROOT / "nowhere.toml"), cwd=tmp_path)
    assert broken.returncode == 2 and "there is no such file" in broken.stderr


# ---------------------------------------------------------------- the command line

def test_version() -> None:
    done = pbem("--version", cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == f"pbem {__version__}"


def test_global_flags_go_before_or_after_the_subcommand() -> None:
    parser = build_parser()
    after = parser.parse_args(["tick", "-v", "-c", "a.toml"])
    assert after.verbose is True and after.config == "a.toml"
    before = parser.parse_args(["-v", "-c", "b.toml", "tick"])
    assert before.verbose is True and before.config == "b.toml"
    plain = parser.parse_args(["tick"])
    assert plain.verbose is False and plain.config is None


def test_tick_v_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[server]\naddress = "bluff@example.org"\n', encoding="utf-8")
    done = pbem("tick", "-v", "-c", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tick: ")


def test_db_current_never_creates_a_database(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[server]\ndatabase = "sqlite:///mistyped/folder/pbem.db"\n',
                    encoding="utf-8")
    done = pbem("db", "current", "-c", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"empty: no database at {tmp_path / 'mistyped/folder/pbem.db'}"
                                  " (nothing created")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pbem.toml"]


def pbem(*words: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith("PBEM_") and k != "CREDENTIALS_DIRECTORY"}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pbem.cli", *words], capture_output=True,
                          text=True, timeout=120, cwd=cwd, env={**environment, **env},
                          check=False)


def test_the_default_database_file_is_the_documented_pbem_db() -> None:
    """The embedded default, the README, the sample config and the demo all name the same
    file, pbem.db: a rename of the code's modules once turned it into "pbem.store.db" in
    all of them at once, which would have left every running server's database behind."""
    from pbem.config import Settings
    root = Path(__file__).resolve().parents[2]
    assert Settings().database == "sqlite:///pbem.db"
    assert 'database = "sqlite:///pbem.db"' in (root / "README.md").read_text(encoding="utf-8")
    assert "/var/lib/pbem/pbem.db" in (root / "deploy" / "pbem.toml").read_text(encoding="utf-8")
    assert "pbem.store.db" not in (root / "pbem" / "demo" / "game.py").read_text(encoding="utf-8")
