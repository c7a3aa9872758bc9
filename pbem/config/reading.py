"""Finding pbem.toml, reading it with the environment's overrides and secret files,
and showing the settings it gives (`pbem config show`)."""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pbem.config.providers import token_file_problems, with_providers
from pbem.config.sections import (
    NESTED,
    OPTIONAL,
    SECTION_CLASSES,
    SECTION_FIELDS,
    environment_keys,
    environment_name,
    fields_of,
    is_secret,
    masked_url,
    section_problems,
)
from pbem.config.settings import OUTAGE_MINUTES, ConfigError, Problem, Settings

# ---------------------------------------------------------------- where the config is

SYSTEM_CONFIG = Path("/etc/pbem/pbem.toml")
CONFIG_VARIABLE = "PBEM_CONFIG"
EMBEDDED = "the embedded defaults"


def find_config(given: str | Path | None, env: Mapping[str, str], *,
                system: Path = SYSTEM_CONFIG) -> Path | None:
    """The config file: -c, else $PBEM_CONFIG, else the system's (when it is there)."""
    if given:
        return Path(given).expanduser()
    if env.get(CONFIG_VARIABLE):
        return Path(env[CONFIG_VARIABLE]).expanduser()
    return system if system.is_file() else None


def command_settings(given: str | Path | None, env: Mapping[str, str] | None = None, *,
                     system: Path = SYSTEM_CONFIG, cwd: Path | None = None) -> Settings:
    """The settings of a command that works on the games (tick, serve, admin, db, ...).

    Without a config file the embedded defaults serve only where they were used before:
    a pbem.db already in the current folder (or a database from PBEM_DATABASE). Otherwise
    pbem would make an empty database wherever it happens to run and answer "no games"."""
    env = dict(os.environ) if env is None else dict(env)
    path = find_config(given, env, system=system)
    if path is None:
        here = Path.cwd() if cwd is None else cwd
        if not (here / "pbem.db").is_file() and not _has_database_variable(env):
            raise ConfigError(
                f"no config file: pbem looked at -c (not given), ${CONFIG_VARIABLE} (not set) "
                f"and {system} (not there), and there is no pbem.db in {here}. Write a "
                f"pbem.toml (see docs/configuration.md; `pbem config check -c pbem.toml` "
                f"checks it) and run with -c pbem.toml, or set {CONFIG_VARIABLE}, or put it "
                f"at {system}")
    elif not given and env.get(CONFIG_VARIABLE) and not path.exists():
        raise ConfigError(f"{CONFIG_VARIABLE} names {path}: there is no such file; fix "
                          f"{CONFIG_VARIABLE} or unset it")
    return load_settings(path, env)


def _has_database_variable(env: Mapping[str, str]) -> bool:
    names = ("PBEM_DATABASE", "PBEM_DATABASE_FILE")
    folder = env.get("CREDENTIALS_DIRECTORY")
    return any(env.get(name) for name in names) or bool(
        folder and any((Path(folder) / name).is_file() for name in ("PBEM_DATABASE",
                                                                     "pbem_database")))


# ---------------------------------------------------------------- secrets from files

# a PBEM_..._FILE that is itself a setting (a path pbem reads), not a secret's file
_PATH_VARIABLES = frozenset({"PBEM_DKIM_PRIVATE_KEY_FILE"})


def _secret_text(path: Path) -> str:
    return path.read_text(encoding="utf-8").rstrip("\r\n")


def with_secret_files(env: Mapping[str, str]) -> tuple[dict[str, str], list[Problem]]:
    """env with PBEM_X filled from PBEM_X_FILE or from systemd's credential PBEM_X
    ($CREDENTIALS_DIRECTORY, LoadCredential=; its name in any case, - for _): a secret
    kept out of the environment, where `ps e` and crash reports show it. The variable
    itself wins over its file, the file over the credential."""
    out, problems = dict(env), []
    for name, value in env.items():
        if not (name.startswith("PBEM_") and name.endswith("_FILE")) or not value \
                or name in _PATH_VARIABLES:
            continue
        target = name.removesuffix("_FILE")
        if env.get(target):
            continue
        try:
            out[target] = _secret_text(Path(value).expanduser())
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(what=f"cannot read {value} "
                                         f"({getattr(exc, 'strerror', None) or exc})",
                                    fix=f"point {name} at a readable file holding {target}",
                                    origin=name))
    folder = env.get("CREDENTIALS_DIRECTORY")
    if folder:
        try:
            entries = sorted(Path(folder).iterdir())
        except OSError:
            entries = []
        for entry in entries:
            target = entry.name.upper().replace("-", "_")
            if target.startswith("PBEM_") and not out.get(target) and entry.is_file():
                try:
                    out[target] = _secret_text(entry)
                except (OSError, UnicodeDecodeError) as exc:
                    problems.append(Problem(what=f"cannot read the credential {entry} ({exc})",
                                            fix="check LoadCredential= in the service",
                                            origin=target))
    return out, problems


# ---------------------------------------------------------------- reading the file

@dataclass
class Loaded:
    """A config read and checked: its settings (None when it has problems), every
    mistake, where it came from and the environment variables that overrode it."""

    source: str
    settings: Settings | None
    problems: list[Problem]
    overridden: list[str]

    def error(self) -> ConfigError:
        lines = [p.said(self.source) for p in self.problems]
        if len(lines) == 1:
            return ConfigError(lines[0], tuple(self.problems))
        return ConfigError(f"{len(lines)} mistakes in {self.source}:\n" +
                           "\n".join(f"  {line}" for line in lines), tuple(self.problems))


def read_config(path: Path | None, env: Mapping[str, str] | None = None) -> Loaded:
    """Read and check path (None: the embedded defaults) with env's overrides."""
    env, problems = with_secret_files(dict(os.environ) if env is None else env)
    source = str(path) if path is not None else EMBEDDED
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Loaded(source, None, [Problem(what="there is no such file",
                                                 fix="check the path given to -c or in "
                                                     f"{CONFIG_VARIABLE}")], [])
        except (OSError, UnicodeDecodeError) as exc:
            return Loaded(source, None, [Problem(what=f"cannot read it ({exc})")], [])
        except tomllib.TOMLDecodeError as exc:
            return Loaded(source, None, [Problem(
                what=f"is not valid TOML: {exc}",
                fix='fix that line (key = value, text in "quotes", sections as [name])')], [])
    base = Path(path).resolve().parent if path is not None else Path.cwd()
    sections: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        if name in SECTION_CLASSES and (isinstance(value, dict)
                                        or name not in SECTION_FIELDS["server"]):
            if isinstance(value, dict):
                sections[name] = dict(value)
            else:
                problems.append(Problem(name, "", "must be a section, not a setting",
                                        f"write [{name}] on a line of its own, its settings "
                                        "below it"))
            continue
        if isinstance(value, dict):
            close = difflib.get_close_matches(name, list(SECTION_CLASSES), n=1, cutoff=0.6)
            problems.append(Problem(name, "", "unknown section",
                                    f"did you mean [{close[0]}]?" if close else
                                    f"the sections are {', '.join(SECTION_CLASSES)}"))
        else:
            homes = [f"[{s}]" for s, keys in SECTION_FIELDS.items() if name in keys]
            problems.append(Problem("", name, "a setting outside any section",
                                    f"put it under {' or '.join(homes)}" if homes else
                                    "remove it, or put it under the section it belongs to"))
    overridden: list[str] = []
    origins: dict[tuple[str, str], str] = {}
    for name in SECTION_CLASSES:
        if name not in sections and name in OPTIONAL:
            continue
        values = sections.setdefault(name, {})
        for secret in ("oauth_refresh_token", "oauth_client_secret"):
            if name in ("imap", "smtp") and secret in values:
                problems.append(Problem(name, secret, "a secret in the config file",
                                        f"put it in the environment "
                                        f"({environment_name(name, secret)}) or in "
                                        "oauth_token_file, not in pbem.toml"))
        if name == "dkim" and "private_key" in values:
            problems.append(Problem("dkim", "private_key", "a private key in the config file",
                                    "put the key in a file (private_key_file) or in the "
                                    "environment (PBEM_DKIM_PRIVATE_KEY), not in pbem.toml"))
        for key in environment_keys(name):
            variable = environment_name(name, key)
            if env.get(variable):
                values[key] = env[variable]
                origins[(name, key)] = variable
                overridden.append(variable)
    problems += with_providers(sections)
    for name, values in sections.items():
        for problem in section_problems(name, values):
            origin = origins.get((problem.section, problem.key), "")
            problems.append(dataclasses.replace(problem, origin=origin))
    if problems:
        return Loaded(source, None, problems, overridden)
    _resolve_paths(sections, base)
    problems += token_file_problems(sections)
    if problems:
        return Loaded(source, None, problems, overridden)
    built: dict[str, Any] = {}
    for name, values in sections.items():
        try:
            built[name] = SECTION_CLASSES[name](**values) if name != "server" else values
        except ConfigError as exc:
            # the class's own check ("fetchers must be between 1 and 64"): its key first
            what = str(exc).removeprefix(f"[{name}]").lstrip(": ")
            key, _, rest = what.partition(" ")
            problems.append(Problem(name, key, rest) if key in SECTION_FIELDS[name] and rest
                            else Problem(name, "", what))
    if problems:
        return Loaded(source, None, problems, overridden)
    settings = Settings(**built.pop("server"),
                        **{NESTED[name]: value for name, value in built.items()})
    return Loaded(source, settings, [], overridden)


def _resolve_paths(sections: dict[str, dict[str, Any]], base: Path) -> None:
    """Relative paths are relative to the config file, not to wherever pbem runs; the
    .eml outbox goes with the data (next to a SQLite database, else next to the config)."""
    server = sections["server"]
    for key in ("outbox_dir", "templates_dir"):
        if key in server:
            server[key] = base / Path(server[key]).expanduser()
    database = server.get("database", "sqlite:///pbem.db")
    if database.startswith("sqlite:///") and not database.startswith("sqlite:////") \
            and ":memory:" not in database:
        database = "sqlite:///" + str(base / database.removeprefix("sqlite:///"))
        server["database"] = database
    sqlite = database if database.startswith("sqlite:///") else ""
    data_dir = (Path(sqlite.removeprefix("sqlite:///")).parent
                if sqlite and ":memory:" not in sqlite else base)
    server.setdefault("outbox_dir", data_dir / "pbem-outbox")
    backup = sections.setdefault("backup", {})
    backup["dir"] = str(base / Path(backup["dir"]).expanduser() if backup.get("dir")
                        else data_dir / "pbem-backups")
    server.setdefault("outage_minutes", OUTAGE_MINUTES)
    for name, keys in (("listen", ("tls_cert", "tls_key")), ("dkim", ("private_key_file",))):
        for key in keys:
            if sections.get(name, {}).get(key):
                sections[name][key] = str(base / Path(sections[name][key]).expanduser())
    for name in ("imap", "smtp"):
        if sections.get(name, {}).get("oauth_token_file"):
            sections[name]["oauth_token_file"] = str(
                base / Path(sections[name]["oauth_token_file"]).expanduser())


def load_settings(path: Path | None, env: Mapping[str, str] | None = None) -> Settings:
    """The settings of path (None: the embedded defaults); every mistake at once as a
    ConfigError."""
    loaded = read_config(path, env)
    if loaded.settings is None:
        raise loaded.error()
    return loaded.settings


# ---------------------------------------------------------------- showing it


def _toml_value(key: str, value: Any) -> str:
    if value is None:
        return "(not set)"
    if is_secret(key):
        return '"****"' if value else '""'
    if key == "database":
        value = masked_url(str(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return json.dumps(str(value))


def effective_config(loaded: Loaded) -> str:
    """The settings pbem runs with, as TOML: defaults filled in, the environment's
    overrides applied, secrets masked."""
    settings = loaded.settings
    assert settings is not None
    lines = [f"# pbem's effective config, from {loaded.source}"]
    if loaded.overridden:
        lines.append(f"# from the environment: {', '.join(sorted(loaded.overridden))}")
    for name, cls in SECTION_CLASSES.items():
        part = settings if name == "server" else getattr(settings, NESTED[name])
        lines.append("")
        if part is None:
            lines.append(f"# [{name}] is not set" + {
                "imap": ": no mailbox is read",
                "smtp": f": answers are written as .eml files to {settings.outbox_dir}",
                "listen": ": no SMTP listener", "dkim": ": mail is not signed"}.get(name, ""))
            continue
        lines.append(f"[{name}]")
        for key in fields_of(cls):
            value = getattr(part, key)
            if value is None:
                lines.append(f"# {key} is not set")
            else:
                lines.append(f"{key} = {_toml_value(key, value)}")
    return "\n".join(lines) + "\n"
