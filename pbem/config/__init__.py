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

Its parts, each one job: ``settings`` (the sections' classes and the whole ``Settings``),
``providers`` (the mail providers' presets), ``sections`` (each value checked) and
``reading`` (finding the file, reading it with the environment, showing the result). What
the rest of pbem uses is named here.
"""

from pbem.config.providers import PROVIDERS
from pbem.config.reading import (
    CONFIG_VARIABLE,
    EMBEDDED,
    SYSTEM_CONFIG,
    Loaded,
    command_settings,
    effective_config,
    find_config,
    load_settings,
    read_config,
    with_secret_files,
)
from pbem.config.sections import SECTION_CLASSES, SECTION_FIELDS, environment_name, is_secret
from pbem.config.settings import (
    OUTAGE_MINUTES,
    SYNCHRONOUS,
    BackupSettings,
    ConfigError,
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

__all__ = [
    "CONFIG_VARIABLE", "EMBEDDED", "OUTAGE_MINUTES", "PROVIDERS", "SECTION_CLASSES",
    "SECTION_FIELDS", "SYNCHRONOUS", "SYSTEM_CONFIG", "BackupSettings", "ConfigError",
    "DatabaseSettings", "DkimSettings", "ImapSettings", "ListenSettings", "Loaded", "Problem",
    "RetentionSettings", "SecuritySettings", "Settings", "SmtpSettings", "WebSettings",
    "command_settings", "effective_config", "environment_name", "find_config", "is_secret",
    "load_settings", "read_config", "with_secret_files",
]
