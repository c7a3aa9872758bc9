"""The settings' classes: one frozen dataclass a section of pbem.toml, each checking
what it alone can (a mode, a pair of settings), and ``Settings``, the whole; a mistake is a
``Problem``, all of them one ``ConfigError`` (pbem.config.reading collects them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pbem.text.errors import PbemError


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


@dataclass(frozen=True, kw_only=True)
class MailAuthSettings:
    """How [imap] and [smtp] log in: the same settings in both sections. Keyword-only,
    so each section's own fields keep their places (and `config show` lists these
    last, pbem.config.sections.fields_of)."""

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


@dataclass(frozen=True)
class ImapSettings(MailAuthSettings):
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

    def __post_init__(self) -> None:
        if not 1 <= self.fetchers <= 64:
            raise ConfigError("[imap] fetchers must be between 1 and 64")
        _check_auth(self, "imap")


@dataclass(frozen=True)
class SmtpSettings(MailAuthSettings):
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

    def __post_init__(self) -> None:
        if not 1 <= self.connections <= 32:
            raise ConfigError("[smtp] connections must be between 1 and 32")
        if self.per_minute < 0 or self.per_day < 0:
            raise ConfigError("[smtp] per_minute and per_day must be 0 (no limit) or more")
        _check_auth(self, "smtp")


AUTH_MODES = ("password", "oauth2")
OAUTH_MECHANISMS = ("xoauth2", "oauthbearer")
OAUTH_PROVIDERS = ("", "microsoft", "google")


def _check_auth(settings: MailAuthSettings, section: str) -> None:
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
    # SQLite: a turn's reports made into mails by a process of its own beside the tick
    # (pbem.runner.composer), on the other core; false: in the turn's transaction (a small
    # machine spares the second process's memory). One core: no composer whatever this says
    compose_apart: bool = True
    # ... started only at a tick's Nth turn to report: below it the tick makes the turn's
    # reports itself, in the turn's transaction (starting the composer costs about a second
    # and a half of CPU, which a short tick, a cron `pbem tick`, pays and does not win back)
    composer_from_turn: int = 100
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
