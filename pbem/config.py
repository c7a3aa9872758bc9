"""pbem.toml: the server's settings, checked as a whole before pbem starts.

Where: -c FILE, else $PBEM_CONFIG, else /etc/pbem/pbem.toml (find_config). Every mistake
(an unknown section or key, a wrong type, a missing or lone setting) is collected as a
Problem naming its file, section, key and fix, and all of them are raised at once.

Environment variables override the file: PBEM_DATABASE, PBEM_IMAP_USERNAME,
PBEM_SMTP_USERNAME and every secret-looking setting as PBEM_<SECTION>_<KEY> (PBEM_<KEY> for
[server]): PBEM_REFEREE_KEY, PBEM_REFEREE_KEY_SHA256, PBEM_IMAP_PASSWORD, PBEM_SMTP_PASSWORD,
PBEM_DKIM_PRIVATE_KEY (the PEM text) or PBEM_DKIM_PRIVATE_KEY_FILE, PBEM_WEB_SECRET. Each
may instead be read from a file, PBEM_X_FILE, or from systemd's credentials
($CREDENTIALS_DIRECTORY/PBEM_X, LoadCredential=).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import json
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbem.text.errors import PbemError
from pbem.text.wording import LANGUAGES


@dataclass(frozen=True)
class Problem:
    """One mistake of a config: where (section, key), what is wrong and the fix."""

    section: str = ""
    key: str = ""
    what: str = ""
    fix: str = ""
    origin: str = ""     # the environment variable the value came from

    def said(self, source: str) -> str:
        where = f"[{self.section}]" if self.section else ""
        where = f"{where} {self.key}".strip()
        if self.origin:
            where = f"{where} (from {self.origin})".strip()
        head = ": ".join(part for part in (source, where) if part)
        return f"{head}: {self.what}" + (f"; {self.fix}" if self.fix else "")


class ConfigError(PbemError):
    def __init__(self, message: str, problems: tuple[Problem, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


OUTAGE_MINUTES = 15.0


@dataclass(frozen=True)
class ImapSettings:
    host: str
    port: int = 993
    ssl: bool = True
    username: str = ""
    password: str = ""
    folder: str = "INBOX"
    done_folder: str = "pbem-done"
    # a mail that cannot be stored (twice) is moved here: it never blocks the folder
    quarantine_folder: str = "pbem-quarantine"
    poll_seconds: float = 60.0
    # workers that may poll the folder at once (PostgreSQL), each a share of its mail by
    # UID (pbem.mail.imap.Share); 1: one poller at a time
    fetchers: int = 1
    # `pbem serve` keeps a connection IDLE on the folder (RFC 2177) and fetches the moment
    # mail arrives; poll_seconds is then only the fallback (pbem.mail.idle)
    idle: bool = True
    # a provider's preset (PROVIDERS) filled in the settings not given
    provider: str = ""
    # where the provider files mail it takes for spam: mail from players and known
    # addresses found there is handled as if it came to the folder ("": not looked at)
    spam_folder: str = ""
    # "password", or "oauth2" (XOAUTH2 / OAUTHBEARER: Microsoft takes nothing else); the
    # oauth_ settings say how pbem gets its access tokens (pbem.mail.oauth, `pbem oauth`)
    auth: str = "password"
    oauth_provider: str = ""            # microsoft (msal), google, or "": oauth_token_uri
    oauth_client_id: str = ""
    oauth_tenant: str = "common"        # Microsoft's directory (tenant) id
    oauth_token_uri: str = ""
    oauth_scopes: tuple[str, ...] = ()
    oauth_mechanism: str = "xoauth2"    # or "oauthbearer" (RFC 7628)
    oauth_token_file: str = ""          # JSON with refresh_token (and client_secret), mode 600
    oauth_refresh_token: str = ""       # from the environment only, never pbem.toml
    oauth_client_secret: str = ""       # from the environment only

    def __post_init__(self) -> None:
        if not 1 <= self.fetchers <= 64:
            raise ConfigError("[imap] fetchers must be between 1 and 64")
        _check_auth(self, "imap")


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int = 587
    ssl: bool = False
    starttls: bool = True
    username: str | None = None
    password: str | None = None
    # envelope sender bluff+b.<token>@domain (VERP): a bounce names the mail it is for.
    # Only for a mailbox that takes plus addresses (user+anything@domain).
    verp: bool = False
    # SMTP connections used at once to drain the outbox (a crash repeats at most one mail
    # per connection, docs/guarantees.md)
    connections: int = 4
    # the send budget: mails handed to the server a minute / a day at most (0: no limit);
    # a provider's preset fills them (docs/providers.md). Counted from the outbox table,
    # so all workers of a site share it.
    per_minute: int = 0
    per_day: int = 0
    provider: str = ""   # a provider's preset (PROVIDERS); [imap]'s when not given
    # "password", or "oauth2" (XOAUTH2 / OAUTHBEARER: Microsoft takes nothing else); the
    # oauth_ settings say how pbem gets its access tokens (pbem.mail.oauth, `pbem oauth`)
    auth: str = "password"
    oauth_provider: str = ""            # microsoft (msal), google, or "": oauth_token_uri
    oauth_client_id: str = ""
    oauth_tenant: str = "common"        # Microsoft's directory (tenant) id
    oauth_token_uri: str = ""
    oauth_scopes: tuple[str, ...] = ()
    oauth_mechanism: str = "xoauth2"    # or "oauthbearer" (RFC 7628)
    oauth_token_file: str = ""          # JSON with refresh_token (and client_secret), mode 600
    oauth_refresh_token: str = ""       # from the environment only, never pbem.toml
    oauth_client_secret: str = ""       # from the environment only

    def __post_init__(self) -> None:
        if not 1 <= self.connections <= 32:
            raise ConfigError("[smtp] connections must be between 1 and 32")
        if self.per_minute < 0 or self.per_day < 0:
            raise ConfigError("[smtp] per_minute and per_day must be 0 (no limit) or more")
        _check_auth(self, "smtp")


AUTH_MODES = ("password", "oauth2")
OAUTH_MECHANISMS = ("xoauth2", "oauthbearer")
OAUTH_PROVIDERS = ("", "microsoft", "google")


def _check_auth(settings: ImapSettings | SmtpSettings, section: str) -> None:
    object.__setattr__(settings, "oauth_scopes", tuple(settings.oauth_scopes))
    if settings.auth not in AUTH_MODES:
        raise ConfigError(f"[{section}] auth must be one of {', '.join(AUTH_MODES)}, "
                          f"not {settings.auth!r}")
    if settings.oauth_mechanism not in OAUTH_MECHANISMS:
        raise ConfigError(f"[{section}] oauth_mechanism must be one of "
                          f"{', '.join(OAUTH_MECHANISMS)}, not {settings.oauth_mechanism!r}")
    if settings.oauth_provider not in OAUTH_PROVIDERS:
        raise ConfigError(f"[{section}] oauth_provider must be microsoft, google or empty "
                          f"(oauth_token_uri), not {settings.oauth_provider!r}")
    if settings.auth == "oauth2":
        if not settings.oauth_client_id:
            raise ConfigError(f"[{section}] auth = \"oauth2\" needs oauth_client_id (the app "
                              "you registered at the provider: docs/providers.md)")
        if not settings.oauth_provider and not settings.oauth_token_uri:
            raise ConfigError(f"[{section}] auth = \"oauth2\" needs oauth_provider or "
                              "oauth_token_uri")
        if not settings.oauth_refresh_token and not settings.oauth_token_file:
            raise ConfigError(f"[{section}] auth = \"oauth2\" needs oauth_token_file (or "
                              f"PBEM_{section.upper()}_OAUTH_REFRESH_TOKEN in the environment); "
                              "`pbem oauth` makes it")


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


def _with_providers(sections: dict[str, dict[str, Any]]) -> list[Problem]:
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


def _token_file_problems(sections: dict[str, dict[str, Any]]) -> list[Problem]:
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


@dataclass(frozen=True)
class DkimSettings:
    """[dkim]: sign every outgoing mail (pbem.mail.dkim). The key is an RSA key in PEM."""

    selector: str
    domain: str = ""                   # default: the domain of the server's address
    private_key_file: str = ""         # or PBEM_DKIM_PRIVATE_KEY(_FILE) in the environment
    private_key: str = ""              # the PEM text itself (from the environment)


@dataclass(frozen=True)
class SecuritySettings:
    """[security]: what the receiving mail server's Authentication-Results must say."""

    # refuse orders from a player's address whose mail is not aligned (DMARC, or SPF/DKIM
    # pass for the From domain) according to the trusted Authentication-Results
    require_aligned: bool = False
    # the authserv-id of our own receiving mail server: only its Authentication-Results count
    authserv_id: str = ""


@dataclass(frozen=True)
class ListenSettings:
    """[listen]: the embedded SMTP listener (pbem.mail.listener), fit to be the domain's MX."""

    host: str = "127.0.0.1"
    port: int = 2525
    # the name in the greeting and EHLO answer (default: the domain of [server] address)
    hostname: str = ""
    # STARTTLS with this certificate chain and key (PEM files); require_tls: MAIL FROM is
    # refused (530 5.7.0) until the client has started TLS
    tls_cert: str = ""
    tls_key: str = ""
    require_tls: bool = False
    # connections at once, in all and from one IP address; more are refused with 421
    max_connections: int = 100
    max_connections_per_ip: int = 10
    # an idle client is dropped after this long (RFC 5321 asks for at least five minutes)
    timeout_seconds: float = 300.0
    # mail from unknown senders kept a day and in all (bytes); over the day's quota such
    # mail is refused (452), over the total the oldest handled junk is dropped first
    junk_bytes_per_day: int = 100_000_000
    junk_bytes_total: int = 1_000_000_000
    # peers (IP addresses) that are mail servers of our own which forward to pbem: their
    # Authentication-Results (with [security] authserv_id) are kept and pbem checks
    # nothing itself; from anyone else every Authentication-Results is stripped and pbem
    # checks SPF, DKIM and DMARC itself
    trusted_relays: list[str] = field(default_factory=list)
    # DNS servers for those checks ("192.0.2.53" or "127.0.0.1:5353"); empty: the system's
    dns_servers: list[str] = field(default_factory=list)
    # mails one client IP / one envelope sender may hand over a minute (0: no limit);
    # past it the client is told 451 4.7.1 (try later); trusted_relays are not counted by IP
    mails_per_minute_per_ip: int = 120
    mails_per_minute_per_sender: int = 60

    def __post_init__(self) -> None:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ConfigError("[listen]: tls_cert and tls_key go together")
        if self.require_tls and not self.tls_cert:
            raise ConfigError("[listen]: require_tls needs tls_cert and tls_key")
        if not 1 <= self.max_connections_per_ip <= self.max_connections:
            raise ConfigError("[listen]: max_connections_per_ip must be between 1 and "
                              "max_connections")
        if self.junk_bytes_per_day < 0 or self.junk_bytes_total < 0:
            raise ConfigError("[listen]: the junk quotas cannot be negative")


@dataclass(frozen=True)
class WebSettings:
    """[web]: the read-only game pages (`pbem web`)."""

    host: str = "127.0.0.1"
    port: int = 8080
    # where the pages are reached from outside ("https://bluff.example.org"); reports carry
    # a private link only when this and the secret are set
    base_url: str = ""
    # signs the players' private links (HMAC); from PBEM_WEB_SECRET too
    secret: str = ""
    link_days: float = 30.0          # a private link works this long after its report
    page_size: int = 25              # games per page of the index
    max_upload_bytes: int = 2_000_000   # the largest record the verify page reads
    cache_seconds: int = 60          # max-age of the pages of running games


SYNCHRONOUS = ("normal", "full")


@dataclass(frozen=True)
class DatabaseSettings:
    """[database]: how SQLite commits (PostgreSQL keeps its own server settings).

    synchronous "normal" (the default): WAL with synchronous=NORMAL, a commit is not
    flushed to disk at once; a process crash (even SIGKILL) loses nothing, a power loss
    or OS crash may lose the last commits but never corrupts the database. "full": every
    commit is flushed (an fsync), so a commit survives a power loss too; slower.
    """

    synchronous: str = "normal"

    def __post_init__(self) -> None:
        if str(self.synchronous).lower() not in SYNCHRONOUS:
            raise ConfigError(f"[database]: synchronous must be one of {', '.join(SYNCHRONOUS)}"
                              f", not {self.synchronous!r}")
        object.__setattr__(self, "synchronous", str(self.synchronous).lower())


@dataclass(frozen=True)
class BackupSettings:
    """[backup]: the backups of a SQLite database (pbem.store.backup, `pbem db backup`).

    Before each migration (a new pbem's first start, `pbem db upgrade`) the database is
    backed up into ``dir``, and the newest ``keep`` of those backups are kept; so are the
    newest ``keep`` that `pbem db backup` writes there. keep 0: none before a migration.
    """

    dir: str = ""      # default: pbem-backups beside the database file
    keep: int = 3


@dataclass(frozen=True)
class RetentionSettings:
    """[retention]: how long the mail itself is kept once it has done its work (pbem.runner.retention).

    A handled mail's text is cut to its header ``inbound_days`` after its game ended (mail
    of no game, or of no game of its sender that is still on: that long after it was
    handled); the row stays. The .eml files of the outbox go ``outbox_days`` after they were
    written, on the same terms. 0: kept for ever. Moves, records and the audit stay always.
    """

    inbound_days: float = 90.0
    outbox_days: float = 90.0


@dataclass(frozen=True)
class Settings:
    database: str = "sqlite:///pbem.db"
    address: str = "bluff@localhost"
    referee: str = "referee@localhost"
    referee_key: str = ""
    outbox_dir: Path = Path("pbem-outbox")      # .eml files when no [smtp] is set
    templates_dir: Path | None = None           # the referee's template overrides
    max_mail_bytes: int = 10_000_000
    # a gap between ticks longer than this is an outage: deadlines that passed meanwhile
    # move by the down time. None (the default of a bare Settings): no outage check;
    # load_settings (pbem.toml, the CLI) defaults it to OUTAGE_MINUTES.
    outage_minutes: float | None = None
    # the referee key as its hex SHA-256 (instead of referee_key: nothing to steal from the file)
    referee_key_sha256: str = ""
    # failing mails (a wrong key ...) per address and window that are answered; past it
    # they are dropped unanswered, the owner told once a day. Never a lock-out: the right
    # key is always accepted (pbem.store.security)
    auth_failure_limit: int = 5
    auth_failure_window_minutes: float = 60.0
    # answers a day to an unknown address: no backscatter, no mail loops
    stranger_answers_per_day: int = 1
    # answers an hour to a known address's mail that is no game mail (HELP, LIST, errors):
    # no mail bomb through the server in a player's name; game answers are not counted
    answers_per_hour: int = 10
    # soft bounces (delays) of mail to one address in a row before the referee is told
    # (0: never); a hard bounce tells the referee at once (pbem.services.bounces)
    soft_bounce_limit: int = 3
    # a mail or outbox row claimed by a process that died is taken over after this long
    # (at once when the dead process ran on this host)
    claim_lease_seconds: float = 300.0
    # how long a tick waits for another process that is processing mail
    lock_wait_seconds: float = 30.0
    # with [smtp], a tick sends each mail's answers (and a turn's reports) as soon as its
    # transaction commits, while it handles the next mail (pbem.outbox.Stream); false: all
    # at the end (as the .eml outbox always does)
    send_while_handling: bool = True
    # the language of mail to someone pbem does not know yet (a stranger, a first JOIN
    # written in English words), and of the referee's notices and answers: en, de or cs
    language: str = "en"
    referee_language: str = "en"
    # `pbem status`, /healthz and serve's watchdog: the server is unwell when its last tick
    # is older than this (not set: five ticks' interval, at least 300 s), or when mail has
    # waited longer than stuck_mail_seconds to be handled, or past its time to be sent
    late_tick_seconds: float | None = None
    stuck_mail_seconds: float = 1800.0
    imap: ImapSettings | None = None
    smtp: SmtpSettings | None = None
    listen: ListenSettings | None = None
    dkim: DkimSettings | None = None
    security: SecuritySettings = field(default_factory=SecuritySettings)
    web: WebSettings = field(default_factory=WebSettings)
    db: DatabaseSettings = field(default_factory=DatabaseSettings)   # [database]
    backup: BackupSettings = field(default_factory=BackupSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"

    @property
    def backup_folder(self) -> Path:
        """Where backups go: [backup] dir, else pbem-backups beside the SQLite file."""
        if self.backup.dir:
            return Path(self.backup.dir)
        file = self.database.removeprefix("sqlite:///").partition("?")[0]
        beside = self.database.startswith("sqlite:///") and ":memory:" not in file
        return (Path(file).expanduser().parent if beside else Path()) / "pbem-backups"

    @property
    def tick_seconds(self) -> float:
        """How often `pbem serve` ticks: [imap] poll_seconds, 10 s without a mailbox."""
        return self.imap.poll_seconds if self.imap is not None else 10.0

    @property
    def tick_late_after(self) -> float:
        """Seconds after which the last tick is late (late_tick_seconds)."""
        if self.late_tick_seconds is not None:
            return self.late_tick_seconds
        return max(300.0, 5 * self.tick_seconds)


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


# ---------------------------------------------------------------- the sections

# the sections of pbem.toml and their settings' classes; [server] is Settings' plain fields
SECTION_CLASSES: dict[str, type] = {
    "server": Settings, "imap": ImapSettings, "smtp": SmtpSettings, "listen": ListenSettings,
    "dkim": DkimSettings, "security": SecuritySettings, "web": WebSettings,
    "database": DatabaseSettings, "backup": BackupSettings, "retention": RetentionSettings,
}
# Settings' fields holding another section
_NESTED = {"imap": "imap", "smtp": "smtp", "listen": "listen", "dkim": "dkim",
           "security": "security", "web": "web", "database": "db", "backup": "backup",
           "retention": "retention"}
# sections that exist only when written in the file (the others have defaults)
_OPTIONAL = frozenset({"imap", "smtp", "listen", "dkim"})


def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    own = {f.name: f for f in dataclasses.fields(cls)}
    if cls is Settings:
        for name in [*_NESTED.values(), "extra"]:
            own.pop(name)
    return own


# each section's settings, to say where a misplaced one belongs
SECTION_FIELDS: dict[str, frozenset[str]] = {
    name: frozenset(_fields(cls)) for name, cls in SECTION_CLASSES.items()}

_SECRET_WORDS = ("password", "secret", "token", "key")


def is_secret(key: str) -> bool:
    """A setting that is a secret: from the environment too, and masked when shown."""
    return any(word in key for word in _SECRET_WORDS) and not key.endswith("_file") \
        and not key.startswith("tls_")


def environment_name(section: str, key: str) -> str:
    return f"PBEM_{key.upper()}" if section == "server" else f"PBEM_{section}_{key}".upper()


def _environment_keys(section: str) -> list[str]:
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
    f = _fields(cls)[key]
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
                                    f"write {_example(key, _fields(cls)[key])}"))
        elif key == "poll_seconds" and value == 0:
            problems.append(Problem(section, key, "must be more than 0",
                                    f"write {_example(key, _fields(cls)[key])}"))
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
        rest = _masked_url(url).partition("://")[2]   # the error is shown: no password
        return (f"pbem opens PostgreSQL with psycopg (3), and {scheme}:// is not its name",
                f'write database = "postgresql+psycopg://{rest or "USER@HOST/DBNAME"}"')
    if url.startswith("sqlite:"):
        return ("a SQLite URL has three slashes",
                'write database = "sqlite:///pbem.db" (a path relative to this file), or '
                '"sqlite:////var/lib/pbem/pbem.db" (four slashes: an absolute path)')
    return (f"{json.dumps(url)} is no database URL pbem knows",
            'write database = "sqlite:///pbem.db" or '
            '"postgresql+psycopg://USER@HOST/DBNAME"')


def _section_problems(section: str, values: dict[str, Any]) -> list[Problem]:
    """The mistakes of one section's values that each setting shows alone: unknown keys,
    types, missing required settings and settings that need another."""
    cls = SECTION_CLASSES[section]
    known = _fields(cls)
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
        if name not in sections and name in _OPTIONAL:
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
        for key in _environment_keys(name):
            variable = environment_name(name, key)
            if env.get(variable):
                values[key] = env[variable]
                origins[(name, key)] = variable
                overridden.append(variable)
    problems += _with_providers(sections)
    for name, values in sections.items():
        for problem in _section_problems(name, values):
            origin = origins.get((problem.section, problem.key), "")
            problems.append(dataclasses.replace(problem, origin=origin))
    if problems:
        return Loaded(source, None, problems, overridden)
    _resolve_paths(sections, base)
    problems += _token_file_problems(sections)
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
                        **{_NESTED[name]: value for name, value in built.items()})
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

def _masked_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    login, at, host = rest.rpartition("@")
    if sep and at and ":" in login:
        return f"{scheme}://{login.partition(':')[0]}:****@{host}"
    return url


def _toml_value(key: str, value: Any) -> str:
    if value is None:
        return "(not set)"
    if is_secret(key):
        return '"****"' if value else '""'
    if key == "database":
        value = _masked_url(str(value))
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
        part = settings if name == "server" else getattr(settings, _NESTED[name])
        lines.append("")
        if part is None:
            lines.append(f"# [{name}] is not set" + {
                "imap": ": no mailbox is read",
                "smtp": f": answers are written as .eml files to {settings.outbox_dir}",
                "listen": ": no SMTP listener", "dkim": ": mail is not signed"}.get(name, ""))
            continue
        lines.append(f"[{name}]")
        for key in _fields(cls):
            value = getattr(part, key)
            if value is None:
                lines.append(f"# {key} is not set")
            else:
                lines.append(f"{key} = {_toml_value(key, value)}")
    return "\n".join(lines) + "\n"
