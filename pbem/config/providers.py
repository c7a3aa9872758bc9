"""The mail providers pbem knows (``provider = "gmail"`` in [imap] / [smtp]): their
presets, filled in under the settings given, and the OAuth2 token file's checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pbem.config.settings import ConfigError, Problem

_MS_IMAP = "https://outlook.office.com/IMAP.AccessAsUser.All"
_MS_SMTP = "https://outlook.office.com/SMTP.Send"
_GOOGLE_MAIL = "https://mail.google.com/"
# what `provider = "..."` fills in ([imap], [smtp]); any setting given wins over it
PROVIDERS: dict[str, dict[str, dict[str, Any]]] = {
    "gmail": {
        "imap": {"host": "imap.gmail.com", "port": 993, "ssl": True, "auth": "oauth2",
                 "oauth_provider": "google", "oauth_scopes": [_GOOGLE_MAIL],
                 "spam_folder": "[Gmail]/Spam"},
        "smtp": {"host": "smtp.gmail.com", "port": 587, "ssl": False, "starttls": True,
                 "auth": "oauth2", "oauth_provider": "google", "oauth_scopes": [_GOOGLE_MAIL],
                 "per_minute": 20, "per_day": 500},
    },
    "outlook": {   # Outlook.com and Microsoft 365 alike
        "imap": {"host": "outlook.office365.com", "port": 993, "ssl": True, "auth": "oauth2",
                 "oauth_provider": "microsoft", "oauth_scopes": [_MS_IMAP],
                 "spam_folder": "Junk Email"},
        "smtp": {"host": "smtp.office365.com", "port": 587, "ssl": False, "starttls": True,
                 "auth": "oauth2", "oauth_provider": "microsoft", "oauth_scopes": [_MS_SMTP],
                 "per_minute": 30, "per_day": 10000},
    },
    "fastmail": {
        "imap": {"host": "imap.fastmail.com", "port": 993, "ssl": True, "spam_folder": "Spam"},
        "smtp": {"host": "smtp.fastmail.com", "port": 465, "ssl": True, "starttls": False,
                 "per_minute": 20, "per_day": 2000},
    },
    "yahoo": {
        "imap": {"host": "imap.mail.yahoo.com", "port": 993, "ssl": True,
                 "spam_folder": "Bulk"},
        "smtp": {"host": "smtp.mail.yahoo.com", "port": 465, "ssl": True, "starttls": False,
                 "per_minute": 10, "per_day": 500},
    },
    "icloud": {
        "imap": {"host": "imap.mail.me.com", "port": 993, "ssl": True, "spam_folder": "Junk"},
        "smtp": {"host": "smtp.mail.me.com", "port": 587, "ssl": False, "starttls": True,
                 "per_minute": 10, "per_day": 1000},
    },
}
_OAUTH_SHARED = ("oauth_provider", "oauth_client_id", "oauth_tenant", "oauth_token_uri",
                 "oauth_mechanism", "oauth_token_file", "oauth_refresh_token",
                 "oauth_client_secret")


def with_providers(sections: dict[str, dict[str, Any]]) -> list[Problem]:
    """Put each [imap] / [smtp] provider's preset under the settings given (any setting
    given wins); [smtp] takes [imap]'s provider, and its login and OAuth2 app when both
    use OAuth2 (one account, one app)."""
    problems: list[Problem] = []
    imap, smtp = sections.get("imap"), sections.get("smtp")
    if smtp is not None and imap is not None and "provider" not in smtp \
            and imap.get("provider"):
        smtp["provider"] = imap["provider"]
    for name, values in (("imap", imap), ("smtp", smtp)):
        if values is None:
            continue
        provider = str(values.get("provider", "")).lower()
        if not provider:
            continue
        if provider not in PROVIDERS:
            problems.append(Problem(name, "provider", f"{json.dumps(provider)} is no provider "
                                    "pbem knows", f"write one of {', '.join(PROVIDERS)}, or "
                                    "leave it out and give host, port ..."))
            continue
        sections[name] = {**PROVIDERS[provider][name], **values, "provider": provider}
    imap, smtp = sections.get("imap"), sections.get("smtp")
    if imap is not None and smtp is not None and \
            smtp.get("auth") == "oauth2" == imap.get("auth"):
        for key in ("username", *_OAUTH_SHARED):
            if key in imap and key not in smtp:
                smtp[key] = imap[key]
    return problems


def token_file_problems(sections: dict[str, dict[str, Any]]) -> list[Problem]:
    problems = []
    for name in ("imap", "smtp"):
        values = sections.get(name) or {}
        if values.get("auth") == "oauth2" and values.get("oauth_token_file"):
            try:
                _check_token_file(name, Path(values["oauth_token_file"]))
            except ConfigError as exc:
                what = str(exc).removeprefix(f"[{name}] oauth_token_file ")
                problems.append(Problem(name, "oauth_token_file", what))
    return problems


def _check_token_file(section: str, path: Path) -> None:
    """The token file holds the key to the mailbox: it must be there, and be its owner's
    alone (pbem.mail.oauth refuses it again at each refresh)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(f"[{section}] oauth_token_file {path}: {exc.strerror or exc}; "
                          "`pbem oauth` writes it") from exc
    if mode & 0o077:
        raise ConfigError(f"[{section}] oauth_token_file {path} may be read by others: "
                          f"chmod 600 {path}")
