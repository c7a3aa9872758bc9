"""The private Dovecot instance of the test mail stack (testkit/mailstack.py): finding
its binaries, its directory (users, mail) and its configuration. The stack launches it.

Plain module (no pytest import), like testkit/mailstack.py.

Facts this relies on (Debian 12, Dovecot 2.3):
- ``dovecot -F -c FILE`` runs a self-contained instance in the foreground, so we
  own the master process and can wait for it to exit.
- mail must be stored as a non-root user (``nobody``/``nogroup`` when run as root).
- ``auth_failure_delay = 0`` and a high ``mail_max_userip_connections`` keep tests
  fast; ``log_path`` keeps the log inside the temp dir.
- the anvil auth penalty is switched off (otherwise one failed login delays every
  later login from 127.0.0.1 by 2 s and more); a failed login itself still takes
  ~0.5 s (Dovecot answers delayed failures from a 500 ms timer).
"""
from __future__ import annotations

import grp
import os
import pwd
import shutil
from collections.abc import Iterable
from pathlib import Path

from testkit.net import LOOPBACK

_SBIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/sbin")
_LIBEXEC_SUFFIXES = ("lib/dovecot", "libexec/dovecot")


def find_dovecot() -> str | None:
    found = shutil.which("dovecot")
    if found:
        return found
    for d in _SBIN_DIRS:
        cand = Path(d) / "dovecot"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def libexec_dir(dovecot: str) -> Path | None:
    prefix = Path(os.path.realpath(dovecot)).parent.parent
    for suffix in _LIBEXEC_SUFFIXES:
        d = prefix / suffix
        if (d / "imap").exists() and (d / "lmtp").exists():
            return d
    return None


def dovecot_available() -> bool:
    """True when the dovecot binary plus its imap and lmtp services are installed."""
    dovecot = find_dovecot()
    return dovecot is not None and libexec_dir(dovecot) is not None


def mail_owner() -> tuple[str, str]:
    """The user and group mail is stored as: this process's, ``nobody`` when it is root."""
    if os.geteuid() == 0:
        user = "nobody"
        try:
            group = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
        except KeyError:
            group = "nogroup"
        return user, group
    return pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name


def prepare_dir(d: Path, users: Iterable[str], password: str) -> None:
    """The instance's directories in ``d``, and its passwd-file of ``users``."""
    for sub in ("run", "state", "mail"):
        (d / sub).mkdir(exist_ok=True)
    os.chmod(d, 0o755)  # the auth process (user dovecot) must reach the passwd-file
    user, group = mail_owner()
    if os.geteuid() == 0:
        shutil.chown(d / "mail", user, group)
    passwd = d / "users"
    passwd.write_text("".join(f"{u}:{{PLAIN}}{password}::::::\n" for u in users))
    os.chmod(passwd, 0o644)


def write_config(d: Path, imap_port: int, lmtp_port: int, extra_config: str = "") -> None:
    """``d``/dovecot.conf: an instance of its own in ``d``, IMAP and LMTP on loopback at
    these ports, ``extra_config`` appended."""
    user, group = mail_owner()
    rootless = ""
    if os.geteuid() != 0:
        rootless = (
            f"default_internal_user = {user}\n"
            f"default_internal_group = {group}\n"
            f"default_login_user = {user}\n"
            "service anvil {\n  chroot =\n}\n"
            "service imap-login {\n  chroot =\n}\n"
        )
    conf = f"""\
# private Dovecot 2.3 instance for tests (generated)
protocols = imap lmtp
listen = {LOOPBACK}
base_dir = {d}/run
state_dir = {d}/state
instance_name = pbem-mailstack-{os.getpid()}-{d.name}
log_path = {d}/dovecot.log
info_log_path = {d}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
mail_location = maildir:~/Maildir
mail_fsync = never
first_valid_uid = 1
first_valid_gid = 1
# plus addressing: user+detail@domain lands in user's INBOX (VERP bounces use it)
recipient_delimiter = +
protocol imap {{
  mail_max_userip_connections = 100
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {d}/users
  default_fields = uid={user} gid={group} home={d}/mail/%d/%n
}}
service imap-login {{
  inet_listener imap {{
    address = {LOOPBACK}
    port = {imap_port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
# No auth penalty: after a failed login Dovecot otherwise delays every later login
# from the same IP by 2 s and more (a test of a wrong password would slow the rest).
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = {LOOPBACK}
    port = {lmtp_port}
  }}
}}
{rootless}{extra_config}
"""
    (d / "dovecot.conf").write_text(conf)
