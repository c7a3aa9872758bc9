"""The sections of pbem.toml and the check of each value: its type, its range, the
pairs that go together; each mistake a Problem that names the fix."""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pbem.config.settings import (
    AUTH_MODES,
    BackupSettings,
    DatabaseSettings,
    DkimSettings,
    ImapSettings,
    ListenSettings,
    Problem,
    RetentionSettings,
    SecuritySettings,
    Settings,
    SmtpSettings,
    WebSettings,
)
from pbem.text.wording import LANGUAGES

# the sections of pbem.toml and their settings' classes; [server] is Settings' plain fields
SECTION_CLASSES: dict[str, type] = {
    "server": Settings, "imap": ImapSettings, "smtp": SmtpSettings, "listen": ListenSettings,
    "dkim": DkimSettings, "security": SecuritySettings, "web": WebSettings,
    "database": DatabaseSettings, "backup": BackupSettings, "retention": RetentionSettings,
}
# Settings' fields holding another section
NESTED = {"imap": "imap", "smtp": "smtp", "listen": "listen", "dkim": "dkim",
           "security": "security", "web": "web", "database": "db", "backup": "backup",
           "retention": "retention"}
# sections that exist only when written in the file (the others have defaults)
OPTIONAL = frozenset({"imap", "smtp", "listen", "dkim"})


def fields_of(cls: type) -> dict[str, dataclasses.Field[Any]]:
    # keyword-only fields (a shared base's, MailAuthSettings) after the section's own
    ordered = sorted(dataclasses.fields(cls), key=lambda f: f.kw_only is True)
    own = {f.name: f for f in ordered}
    if cls is Settings:
        for name in [*NESTED.values(), "extra"]:
            own.pop(name)
    return own


# each section's settings, to say where a misplaced one belongs
SECTION_FIELDS: dict[str, frozenset[str]] = {
    name: frozenset(fields_of(cls)) for name, cls in SECTION_CLASSES.items()}

_SECRET_WORDS = ("password", "secret", "token", "key")


def is_secret(key: str) -> bool:
    """A setting that is a secret: from the environment too, and masked when shown."""
    return any(word in key for word in _SECRET_WORDS) and not key.endswith("_file") \
        and not key.startswith("tls_")


def environment_name(section: str, key: str) -> str:
    return f"PBEM_{key.upper()}" if section == "server" else f"PBEM_{section}_{key}".upper()


def environment_keys(section: str) -> list[str]:
    """The settings of section the environment may set: every secret-looking one (a key
    file's path too), the database's URL and the mailboxes' login names."""
    keys = [k for k in SECTION_FIELDS[section] if any(w in k for w in _SECRET_WORDS)]
    if section == "server":
        keys.append("database")
    if section in ("imap", "smtp"):
        keys.append("username")
    return sorted(set(keys))


# ---------------------------------------------------------------- checking values

def _hint(cls: type, key: str) -> Any:
    hint = typing.get_type_hints(cls)[key]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return hint


def _example(key: str, f: dataclasses.Field[Any]) -> str:
    default = f.default
    if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    if isinstance(default, bool):
        return f"{key} = {'true' if default else 'false'}"
    if isinstance(default, int | float):
        return f"{key} = {default}"
    if isinstance(default, list):
        return f'{key} = ["..."]'
    return f'{key} = "{default}"' if default not in (dataclasses.MISSING, None, "") \
        else f'{key} = "..."'


def _type_problem(section: str, key: str, value: Any, cls: type) -> Problem | None:
    f = fields_of(cls)[key]
    hint = _hint(cls, key)
    example = _example(key, f)
    shown_value = json.dumps(value) if isinstance(value, str) else repr(value)
    if hint is bool:
        if isinstance(value, bool):
            return None
        return Problem(section, key, f"must be true or false, not {shown_value}",
                       f"write {key} = true or {key} = false (no quotes)")
    if hint is int or hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool) and \
                (hint is float or isinstance(value, int)):
            return None
        kind = "a whole number" if hint is int else "a number"
        fix = f"write {example}"
        if isinstance(value, str):
            fix += " (a bare number: no quotes" + (", no unit)" if key.endswith(
                ("_seconds", "_minutes", "_days", "_bytes")) else ")")
        return Problem(section, key, f"must be {kind}, not {shown_value}", fix)
    if hint is str or hint is Path:
        if isinstance(value, str):
            return None
        return Problem(section, key, f"must be text, not {shown_value}",
                       f"write it in quotes: {example}")
    if typing.get_origin(hint) is list:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return None
        return Problem(section, key, f"must be a list of text, not {shown_value}",
                       f"write {example}")
    return None


def _number_problems(section: str, values: Mapping[str, Any], cls: type) -> list[Problem]:
    problems = []
    for key, value in values.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        # a port we listen on may be 0: the system picks a free one (tests, one-off runs)
        lowest = 0 if section in ("web", "listen") else 1
        if key == "port" and not lowest <= value <= 65535:
            problems.append(Problem(section, key, f"{value} is no port",
                                    "write a port between 1 and 65535"))
        elif value < 0:
            problems.append(Problem(section, key, f"cannot be negative ({value})",
                                    f"write {_example(key, fields_of(cls)[key])}"))
        elif key == "poll_seconds" and value == 0:
            problems.append(Problem(section, key, "must be more than 0",
                                    f"write {_example(key, fields_of(cls)[key])}"))
    return problems


def _database_problem(url: str) -> tuple[str, str] | None:
    """(what, fix) when url is no database URL pbem can open."""
    if url.startswith("sqlite:///"):
        return None
    scheme = url.partition("://")[0]
    if scheme == "postgresql+psycopg":
        return None
    if scheme in ("postgres", "postgresql", "postgresql+psycopg2"):
        if scheme == "postgresql" and importlib.util.find_spec("psycopg2") is not None:
            return None
        rest = masked_url(url).partition("://")[2]   # the error is shown: no password
        return (f"pbem opens PostgreSQL with psycopg (3), and {scheme}:// is not its name",
                f'write database = "postgresql+psycopg://{rest or "USER@HOST/DBNAME"}"')
    if url.startswith("sqlite:"):
        return ("a SQLite URL has three slashes",
                'write database = "sqlite:///pbem.db" (a path relative to this file), or '
                '"sqlite:////var/lib/pbem/pbem.db" (four slashes: an absolute path)')
    return (f"{json.dumps(url)} is no database URL pbem knows",
            'write database = "sqlite:///pbem.db" or '
            '"postgresql+psycopg://USER@HOST/DBNAME"')


def section_problems(section: str, values: dict[str, Any]) -> list[Problem]:
    """The mistakes of one section's values that each setting shows alone: unknown keys,
    types, missing required settings and settings that need another."""
    cls = SECTION_CLASSES[section]
    known = fields_of(cls)
    problems: list[Problem] = []
    for key in sorted(set(values) - set(known)):
        homes = [f"[{other}]" for other, keys in SECTION_FIELDS.items()
                 if other != section and key in keys]
        close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.7)
        fix = (f"it belongs in {' or '.join(homes)}: move it there" if homes else
               f"did you mean {close[0]}?" if close else
               f"remove it (the settings of [{section}] are in docs/configuration.md)")
        problems.append(Problem(section, key, "unknown setting", fix))
    typed = {}
    for key, value in values.items():
        if key in known:
            problem = _type_problem(section, key, value, cls)
            if problem is None:
                typed[key] = value
            else:
                problems.append(problem)
    for key, f in known.items():
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING \
                and key not in values:
            problems.append(Problem(section, key, f"missing: [{section}] needs it",
                                    f"add {_example(key, f)} under [{section}]"))
    problems += _number_problems(section, typed, cls)
    problems += _pair_problems(section, typed)
    if section == "server":
        problems += _server_problems(typed)
    return problems


def _pair_problems(section: str, values: Mapping[str, Any]) -> list[Problem]:
    problems = []
    if section in ("imap", "smtp") and values.get("auth", "password") not in AUTH_MODES:
        return [Problem(section, "auth", f"auth must be one of {', '.join(AUTH_MODES)}, "
                        f"not {json.dumps(values['auth'])}",
                        'write auth = "password" or auth = "oauth2" (docs/providers.md)')]
    if section in ("imap", "smtp"):
        # a token (OAuth2) may stand for the password
        other_secret = values.get("auth") == "oauth2" or any(
            values.get(k) for k in values if is_secret(k) and k != "password")
        if values.get("username") and not values.get("password") and not other_secret:
            problems.append(Problem(section, "password", "missing: username needs it",
                                    f'add password = "..." under [{section}], or better '
                                    f"{environment_name(section, 'password')}(_FILE) in the "
                                    f"environment"))
        if values.get("password") and not values.get("username"):
            problems.append(Problem(section, "username", "missing: password needs it",
                                    f'add username = "..." under [{section}]'))
        if section == "imap" and not values.get("username"):
            if not values.get("password"):
                problems.append(Problem(section, "username",
                                        "missing: pbem logs in to the mailbox with it",
                                        'add username = "bluff@example.org" under [imap]'))
    if section == "listen":
        for one, other in (("tls_cert", "tls_key"), ("tls_key", "tls_cert")):
            if values.get(one) and not values.get(other):
                problems.append(Problem(section, other, "missing: tls_cert and tls_key go "
                                        "together",
                                        f"add {other} = \"...\" (a PEM file) under [listen]"))
    if section == "security" and values.get("require_aligned") and \
            not str(values.get("authserv_id", "")).strip():
        problems.append(Problem(section, "authserv_id", "missing: require_aligned needs it",
                                "write the authserv-id of your mail server (the first word "
                                "of its Authentication-Results header)"))
    if section == "dkim" and not values.get("private_key") and \
            not values.get("private_key_file"):
        problems.append(Problem(section, "private_key_file", "missing: [dkim] needs a key",
                                "set private_key_file = \"dkim.pem\" (`pbem dkim keygen` "
                                "makes one), or PBEM_DKIM_PRIVATE_KEY_FILE in the environment"))
    return problems


def _server_problems(values: Mapping[str, Any]) -> list[Problem]:
    problems = []
    if "database" in values:
        said = _database_problem(values["database"])
        if said is not None:
            problems.append(Problem("server", "database", *said))
    for key in ("language", "referee_language"):
        if key in values and values[key] not in LANGUAGES:
            problems.append(Problem("server", key, f"{json.dumps(values[key])} is no "
                                    f"language pbem speaks",
                                    f"write one of {', '.join(LANGUAGES)}"))
    for key in ("address", "referee"):
        if key in values and "@" not in values[key]:
            problems.append(Problem("server", key, f"{json.dumps(values[key])} is no mail "
                                    "address", f'write a whole address, e.g. {key} = '
                                    f'"{"bluff" if key == "address" else "referee"}@example.org"'))
    return problems


def masked_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    login, at, host = rest.rpartition("@")
    if sep and at and ":" in login:
        return f"{scheme}://{login.partition(':')[0]}:****@{host}"
    return url

