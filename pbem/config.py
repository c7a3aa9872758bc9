"""pbem.toml: the server's settings. Secrets may come from the environment.

Environment variables override the file: PBEM_DATABASE, PBEM_REFEREE_KEY,
PBEM_REFEREE_KEY_SHA256, PBEM_IMAP_PASSWORD, PBEM_SMTP_PASSWORD (and PBEM_IMAP_USERNAME,
PBEM_SMTP_USERNAME), PBEM_DKIM_PRIVATE_KEY (the PEM text) or PBEM_DKIM_PRIVATE_KEY_FILE,
PBEM_WEB_SECRET.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbem.errors import PbemError
from pbem.wording import LANGUAGES, ngettext


class ConfigError(PbemError):
    pass


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
                 "auth": "oauth2", "oauth_provider": "google", "oauth_scopes": [_GOOGLE_MAIL]},
    },
    "outlook": {   # Outlook.com and Microsoft 365 alike
        "imap": {"host": "outlook.office365.com", "port": 993, "ssl": True, "auth": "oauth2",
                 "oauth_provider": "microsoft", "oauth_scopes": [_MS_IMAP],
                 "spam_folder": "Junk Email"},
        "smtp": {"host": "smtp.office365.com", "port": 587, "ssl": False, "starttls": True,
                 "auth": "oauth2", "oauth_provider": "microsoft", "oauth_scopes": [_MS_SMTP]},
    },
    "fastmail": {
        "imap": {"host": "imap.fastmail.com", "port": 993, "ssl": True, "spam_folder": "Spam"},
        "smtp": {"host": "smtp.fastmail.com", "port": 465, "ssl": True, "starttls": False},
    },
    "yahoo": {
        "imap": {"host": "imap.mail.yahoo.com", "port": 993, "ssl": True,
                 "spam_folder": "Bulk"},
        "smtp": {"host": "smtp.mail.yahoo.com", "port": 465, "ssl": True, "starttls": False},
    },
    "icloud": {
        "imap": {"host": "imap.mail.me.com", "port": 993, "ssl": True, "spam_folder": "Junk"},
        "smtp": {"host": "smtp.mail.me.com", "port": 587, "ssl": False, "starttls": True},
    },
}
_OAUTH_SHARED = ("oauth_provider", "oauth_client_id", "oauth_tenant", "oauth_token_uri",
                 "oauth_mechanism", "oauth_token_file", "oauth_refresh_token",
                 "oauth_client_secret")


def _with_provider(section: str, values: dict[str, Any], base: Path,
                   env: dict[str, str]) -> dict[str, Any]:
    """An [imap] or [smtp] table with its provider's preset under it, the OAuth2 secrets
    from the environment (never from pbem.toml) and the token file next to pbem.toml."""
    for secret in ("oauth_refresh_token", "oauth_client_secret"):
        if secret in values:
            raise ConfigError(f"[{section}]: put {secret} in the environment "
                              f"(PBEM_{section.upper()}_{secret.upper()}) or in "
                              "oauth_token_file, not in pbem.toml")
        if env.get(f"PBEM_{section.upper()}_{secret.upper()}"):
            values[secret] = env[f"PBEM_{section.upper()}_{secret.upper()}"]
    name = str(values.get("provider", "")).lower()
    if name:
        if name not in PROVIDERS:
            raise ConfigError(f"[{section}] provider must be one of {', '.join(PROVIDERS)}, "
                              f"not {name!r} (or leave it out and give host, port ...)")
        values = {**PROVIDERS[name][section], **values, "provider": name}
    if values.get("oauth_token_file"):
        token_file = base / Path(values["oauth_token_file"]).expanduser()
        values["oauth_token_file"] = str(token_file)
        if values.get("auth") == "oauth2":
            _check_token_file(section, token_file)
    return values


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
    # key is always accepted (pbem.security)
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
    imap: ImapSettings | None = None
    smtp: SmtpSettings | None = None
    listen: ListenSettings | None = None
    dkim: DkimSettings | None = None
    security: SecuritySettings = field(default_factory=SecuritySettings)
    web: WebSettings = field(default_factory=WebSettings)
    db: DatabaseSettings = field(default_factory=DatabaseSettings)   # [database]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def domain(self) -> str:
        return self.address.rpartition("@")[2] or "localhost"

    @property
    def tick_seconds(self) -> float:
        """How often `pbem serve` ticks: [imap] poll_seconds, 10 s without a mailbox."""
        return self.imap.poll_seconds if self.imap is not None else 10.0


def _section(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"[{name}] must be a table")
    return dict(value)


def _build(cls: type, values: dict[str, Any], name: str) -> Any:
    _refuse_unknown(name, values)
    try:
        return cls(**values)
    except TypeError as exc:
        raise ConfigError(f"[{name}]: {exc}") from exc


def _fields(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


# each section's settings, to say where a misplaced one belongs
SECTION_FIELDS: dict[str, frozenset[str]] = {
    "server": _fields(Settings) - {"imap", "smtp", "listen", "dkim", "security", "web", "db",
                                   "extra"},
    "imap": _fields(ImapSettings), "smtp": _fields(SmtpSettings),
    "listen": _fields(ListenSettings), "dkim": _fields(DkimSettings),
    "security": _fields(SecuritySettings), "web": _fields(WebSettings),
    "database": _fields(DatabaseSettings),
}


def _refuse_unknown(section: str, values: dict[str, Any]) -> None:
    """A setting the section does not know stops pbem, saying the section it belongs in
    when another section knows it (``poll_seconds`` under [server]: it is [imap]'s)."""
    unknown = sorted(set(values) - SECTION_FIELDS[section])
    if not unknown:
        return
    said = []
    for key in unknown:
        homes = [f"[{other}]" for other, known in SECTION_FIELDS.items()
                 if other != section and key in known]
        said.append(f"{key} (it belongs in {' or '.join(homes)})" if homes else key)
    raise ConfigError(f"[{section}]: unknown {ngettext('setting', 'settings', len(unknown))} "
                      f"{', '.join(said)}")


def load_settings(path: Path | None, env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ) if env is None else env
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"no config file at {path}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
    base = Path(path).resolve().parent if path is not None else Path.cwd()
    server = _section(data, "server") or {}
    for key, var in (("database", "PBEM_DATABASE"), ("referee_key", "PBEM_REFEREE_KEY"),
                     ("referee_key_sha256", "PBEM_REFEREE_KEY_SHA256")):
        if env.get(var):
            server[key] = env[var]
    for key in ("outbox_dir", "templates_dir"):
        if key in server:
            server[key] = base / Path(server[key]).expanduser()
    database = server.get("database", "sqlite:///pbem.db")
    if database.startswith("sqlite:///") and not database.startswith("sqlite:////") \
            and ":memory:" not in database:
        # a relative SQLite path is relative to the config file, not to wherever we run
        server["database"] = "sqlite:///" + str(base / database.removeprefix("sqlite:///"))
    # the .eml outbox goes with the data: next to a SQLite database, else next to the config
    url = str(server.get("database", database))
    sqlite = url if url.startswith("sqlite:///") else ""
    data_dir = (Path(sqlite.removeprefix("sqlite:///")).parent
                if sqlite and ":memory:" not in sqlite else base)
    server.setdefault("outbox_dir", data_dir / "pbem-outbox")
    server.setdefault("outage_minutes", OUTAGE_MINUTES)
    imap = _section(data, "imap")
    smtp = _section(data, "smtp")
    for section, prefix in ((imap, "PBEM_IMAP_"), (smtp, "PBEM_SMTP_")):
        if section is not None:
            for key in ("username", "password"):
                if env.get(prefix + key.upper()):
                    section[key] = env[prefix + key.upper()]
    if imap is not None:
        imap = _with_provider("imap", imap, base, env)
    if smtp is not None:
        if imap is not None and "provider" not in smtp and imap.get("provider"):
            smtp["provider"] = imap["provider"]
        smtp = _with_provider("smtp", smtp, base, env)
        if imap is not None and smtp.get("auth") == "oauth2" == imap.get("auth"):
            # one account, one app: [smtp] takes [imap]'s login unless it says otherwise
            for key in ("username", *_OAUTH_SHARED):
                if key in imap and key not in smtp:
                    smtp[key] = imap[key]
    listen = _section(data, "listen")
    if listen is not None:
        for key in ("tls_cert", "tls_key"):
            if listen.get(key):
                listen[key] = str(base / Path(listen[key]).expanduser())
    dkim = _dkim_section(data, env, base)
    security = _section(data, "security")
    if security is not None and security.get("require_aligned") and \
            not str(security.get("authserv_id", "")).strip():
        raise ConfigError("[security]: require_aligned needs the authserv_id of your mail "
                          "server (the first word of its Authentication-Results header)")
    web = _section(data, "web") or {}
    if env.get("PBEM_WEB_SECRET"):
        web["secret"] = env["PBEM_WEB_SECRET"]
    _refuse_unknown("server", server)
    for key in ("language", "referee_language"):
        if server.get(key, "en") not in LANGUAGES:
            raise ConfigError(f"[server] {key} must be one of {', '.join(LANGUAGES)}, "
                              f"not {server[key]!r}")
    if not isinstance(server.get("send_while_handling", True), bool):
        raise ConfigError("[server] send_while_handling must be true or false")
    return Settings(
        **server,
        imap=_build(ImapSettings, imap, "imap") if imap is not None else None,
        smtp=_build(SmtpSettings, smtp, "smtp") if smtp is not None else None,
        listen=_build(ListenSettings, listen, "listen") if listen is not None else None,
        dkim=dkim,
        security=_build(SecuritySettings, security, "security") if security is not None
        else SecuritySettings(),
        web=_build(WebSettings, web, "web"),
        db=_build(DatabaseSettings, _section(data, "database") or {}, "database"),
    )


def _dkim_section(data: dict[str, Any], env: dict[str, str], base: Path) -> DkimSettings | None:
    """[dkim], the key from the environment winning over private_key_file."""
    dkim = _section(data, "dkim")
    if dkim is None:
        return None
    if "private_key" in dkim:
        raise ConfigError("[dkim]: put the key in a file (private_key_file) or in the "
                          "environment (PBEM_DKIM_PRIVATE_KEY), not in pbem.toml")
    if env.get("PBEM_DKIM_PRIVATE_KEY_FILE"):
        dkim["private_key_file"] = env["PBEM_DKIM_PRIVATE_KEY_FILE"]
    if env.get("PBEM_DKIM_PRIVATE_KEY"):
        dkim["private_key"] = env["PBEM_DKIM_PRIVATE_KEY"]
    if dkim.get("private_key_file"):
        dkim["private_key_file"] = str(base / Path(dkim["private_key_file"]).expanduser())
    if not dkim.get("private_key") and not dkim.get("private_key_file"):
        raise ConfigError("[dkim]: set private_key_file (or PBEM_DKIM_PRIVATE_KEY_FILE / "
                          "PBEM_DKIM_PRIVATE_KEY in the environment)")
    settings: DkimSettings = _build(DkimSettings, dkim, "dkim")
    return settings
