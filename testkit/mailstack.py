"""A private, real mail stack on loopback for tests: Dovecot (IMAP + LMTP) plus an
aiosmtpd SMTP front end that relays into Dovecot over LMTP.

Plain module (no pytest import) so scripts and benchmarks can use it too::

    stack = MailStack().start()
    stack.deliver("p1@bluff.test", b"Subject: hi\\r\\n\\r\\nbody\\r\\n")
    msgs = stack.wait_for("p1", 1)
    stack.stop()

Everything lives in a fresh temp dir; nothing under /etc is touched. Ports are
chosen by the kernel (bind to port 0) and a clash with another process that grabs
the same port in between is detected and retried with new ports.

Facts this relies on (Debian 12, Dovecot 2.3):
- ``dovecot -F -c FILE`` runs a self-contained instance in the foreground, so we
  own the master process and can wait for it to exit.
- mail must be stored as a non-root user (``nobody``/``nogroup`` when run as root).
- ``auth_failure_delay = 0`` and a high ``mail_max_userip_connections`` keep tests
  fast; ``log_path`` keeps the log inside the temp dir.
- the anvil auth penalty is switched off (otherwise one failed login delays every
  later login from 127.0.0.1 by 2 s and more); a failed login itself still takes
  ~0.5 s (Dovecot answers delayed failures from a 500 ms timer).
- the SMTP front end refuses unknown recipients at RCPT time with 550 5.1.1; a known
  user's plus address (``bluff+anything@``) is delivered to that user's INBOX.
- ``smtplib.LMTP`` reads ONE reply after DATA but LMTP sends one per recipient, so
  the relay makes one LMTP transaction per recipient.
"""
from __future__ import annotations

import asyncio
import atexit
import base64
import contextlib
import grp
import os
import pwd
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from imapclient import IMAPClient

from testkit.net import LOOPBACK, free_ports, log_since, log_size, port_open, wait_closed

DEFAULT_USERS = ("bluff", "referee", "p1", "p2", "p3", "p4", "p5", "p6", "observer")
DEFAULT_DOMAIN = "bluff.test"
PASSWORD = "secret"

_SBIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/sbin")
_LIBEXEC_SUFFIXES = ("lib/dovecot", "libexec/dovecot")


class MailStackError(RuntimeError):
    """The test mail stack could not be started or used."""


class _PortClash(MailStackError):
    pass


# --------------------------------------------------------------------------- discovery


def _find_dovecot() -> str | None:
    found = shutil.which("dovecot")
    if found:
        return found
    for d in _SBIN_DIRS:
        cand = Path(d) / "dovecot"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def _libexec_dir(dovecot: str) -> Path | None:
    prefix = Path(os.path.realpath(dovecot)).parent.parent
    for suffix in _LIBEXEC_SUFFIXES:
        d = prefix / suffix
        if (d / "imap").exists() and (d / "lmtp").exists():
            return d
    return None


def dovecot_available() -> bool:
    """True when the dovecot binary plus its imap and lmtp services are installed."""
    dovecot = _find_dovecot()
    return dovecot is not None and _libexec_dir(dovecot) is not None


# --------------------------------------------------------------------------- SMTP -> LMTP


class _LmtpRelay:
    """aiosmtpd handler: refuses unknown recipients at RCPT time (550 5.1.1) and hands
    each accepted message to Dovecot over LMTP, one transaction per recipient."""

    def __init__(self, stack: MailStack | _RelayProcessStack) -> None:
        self.stack = stack

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        throttled = self.stack.throttled_answer("RCPT")
        if throttled is not None:
            return throttled
        refusal = self.stack.refusals.get(address.lower())
        if refusal is not None and refusal[0] == "RCPT":
            return refusal[1]
        local, at, domain = address.lower().rpartition("@")
        if f"{local.split('+', 1)[0]}{at}{domain}" not in self.stack.addresses:  # user+detail
            return f"550 5.1.1 <{address}>: user unknown"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    def _deliver(self, mail_from: str, rcpts: list[str], data: bytes) -> dict:
        failed: dict[str, tuple[int, bytes]] = {}
        try:
            # Fresh connection per message: a cached one goes stale when Dovecot restarts.
            with smtplib.LMTP(LOOPBACK, self.stack.lmtp_port, timeout=10) as c:
                for rcpt in rcpts:
                    try:
                        c.sendmail(mail_from, [rcpt], data)
                    except smtplib.SMTPRecipientsRefused as e:
                        failed.update(e.recipients)
                    except smtplib.SMTPResponseException as e:
                        failed[rcpt] = (e.smtp_code, e.smtp_error)
        except (OSError, smtplib.SMTPException) as e:
            for rcpt in rcpts:
                failed.setdefault(rcpt, (451, f"4.3.0 LMTP unavailable: {e}".encode()))
        return failed

    async def handle_DATA(self, server, session, envelope):
        throttled = self.stack.throttled_answer("DATA")
        if throttled is not None:
            return throttled
        refusals = self.stack.refusals
        for rcpt in envelope.rcpt_tos:
            refusal = refusals.get(rcpt.lower())
            if refusal is not None and refusal[0] == "DATA":
                return refusal[1]
        loop = asyncio.get_running_loop()
        failed = await loop.run_in_executor(
            None, self._deliver, envelope.mail_from or "", list(envelope.rcpt_tos),
            envelope.original_content)
        if not failed:
            return "250 2.0.0 Message accepted for delivery"
        # Strict on purpose (test helper): any failed recipient fails the whole message.
        code, msg = next(iter(failed.values()))
        text = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        return f"{code} {text}"


class _BearerRelay(_LmtpRelay):
    """The relay that also takes AUTH XOAUTH2 and OAUTHBEARER (RFC 7628), asking
    ``bearer(token)`` for the token's user (None: refused). Mail without AUTH is relayed
    as before (the players' test mail); who logged in is kept in ``stack.logins``."""

    def __init__(self, stack: MailStack, bearer: Callable[[str], str | None]) -> None:
        super().__init__(stack)
        self.bearer = bearer

    def _check(self, args: list[str], oauthbearer: bool) -> AuthResult:
        try:
            said = base64.b64decode(args[1]).decode() if len(args) > 1 else ""
        except (ValueError, UnicodeDecodeError):
            return AuthResult(success=False)
        fields = dict(part.split("=", 1) for part in said.split("\x01") if "=" in part)
        user = fields.get("user", "")
        if oauthbearer:   # n,a=user,
            user = next((p[2:] for p in said.split("\x01")[0].split(",")
                         if p.startswith("a=")), "")
        token = fields.get("auth", "").removeprefix("Bearer ")
        owner = self.bearer(token)
        if owner is None or owner.lower() != user.lower():
            self.stack.logins.append(("refused", user))
            return AuthResult(success=False)
        self.stack.logins.append(("ok", user))
        return AuthResult(success=True, auth_data=user)

    async def _answer(self, server: Any, result: AuthResult) -> AuthResult:
        if result.success:
            return result
        # said here: aiosmtpd leaves a refused custom mechanism unanswered
        await server.push("535 5.7.8 Authentication credentials invalid")
        return AuthResult(success=False, handled=True)

    async def auth_XOAUTH2(self, server: Any, args: list[str]) -> AuthResult:  # noqa: N802
        return await self._answer(server, self._check(args, oauthbearer=False))

    async def auth_OAUTHBEARER(self, server: Any, args: list[str]) -> AuthResult:  # noqa: N802
        return await self._answer(server, self._check(args, oauthbearer=True))


def start_controller(handler, host: str = LOOPBACK, port: int = 0, attempts: int = 5,
                     **kwargs) -> Controller:
    """Start an aiosmtpd Controller; port 0 picks a free port (retried on a clash)."""
    last: Exception | None = None
    for _ in range(attempts if port == 0 else 1):
        p = port or free_ports(1, host)[0]
        ctl = Controller(handler, hostname=host, port=p, **kwargs)
        try:
            ctl.start()
            return ctl
        except OSError as e:  # port taken between choosing and binding
            last = e
            try:
                ctl.stop(no_assert=True)
            except Exception:
                pass
    raise MailStackError(f"could not start SMTP server on {host}: {last}")


# --------------------------------------------------------------------------- the stack


class MailStack:
    """Private Dovecot (IMAP + LMTP) plus an SMTP front end on free loopback ports."""

    imap_host = LOOPBACK
    smtp_host = LOOPBACK

    def __init__(self, users: Iterable[str] = DEFAULT_USERS, domain: str = DEFAULT_DOMAIN,
                 password: str = PASSWORD, base_dir: str | os.PathLike | None = None,
                 relay_processes: int = 0, extra_config: str = "",
                 bearer: Callable[[str], str | None] | None = None) -> None:
        """``relay_processes`` > 0 runs the SMTP front end in that many processes of its
        own, as a real MTA is: a benchmark's client then does not share its interpreter
        (the GIL), and its connections are served in parallel. ``extra_config``: more
        dovecot.conf lines (``imap_capability = ...`` for a server without IDLE)."""
        self.extra_config = extra_config
        # the SMTP front end takes AUTH XOAUTH2 / OAUTHBEARER, bearer(token) naming the
        # token's user (testkit/oauthserver.py); logins: ("ok" | "refused", user) each
        self.bearer = bearer
        self.logins: list[tuple[str, str]] = []
        self.domain = domain
        self.relay_processes = relay_processes
        self._relays: list[subprocess.Popen] = []
        self.password = password
        self.users = [u if "@" in u else f"{u}@{domain}" for u in users]
        self.addresses = {u.lower() for u in self.users}
        self._base_arg = base_dir
        self.base_dir: Path | None = None
        self.imap_port = 0
        self.lmtp_port = 0
        self.smtp_port = 0
        self._proc: subprocess.Popen | None = None
        self._smtp: Controller | None = None
        self._own_dir = False
        # address -> (stage, reply): the front end refuses it so (refusing)
        self.refusals: dict[str, tuple[str, str]] = {}
        # (stage, reply, mails left or None, until or None): the front end throttles all mail
        self._throttle: tuple[str, str, int | None, float | None] | None = None
        self.throttled = 0      # the mails the front end answered so (throttling)

    # ---- lifecycle ----------------------------------------------------------------

    def start(self) -> MailStack:
        if self._proc is not None:
            return self
        if not dovecot_available():
            raise MailStackError("dovecot (imapd + lmtpd) is not installed")
        if self.base_dir is None:
            if self._base_arg is None:
                self.base_dir = Path(tempfile.mkdtemp(prefix="pbem-mailstack-"))
                self._own_dir = True
            else:
                self.base_dir = Path(self._base_arg).resolve()
                self.base_dir.mkdir(parents=True, exist_ok=True)
            self._prepare_dir()
        try:
            self.start_dovecot()
            if self.relay_processes:
                self._start_relay_processes()
            elif self._smtp is None and self.bearer is not None:
                self._smtp = start_controller(_BearerRelay(self, self.bearer), self.smtp_host,
                                              auth_require_tls=False)
                self.smtp_port = self._smtp.port
            elif self._smtp is None:
                self._smtp = start_controller(_LmtpRelay(self), self.smtp_host)
                self.smtp_port = self._smtp.port
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Stop the SMTP front end and Dovecot (waiting for it to exit); remove the dir."""
        if self._smtp is not None:
            try:
                self._smtp.stop()
            finally:
                self._smtp = None
        self._stop_relay_processes()
        self.stop_dovecot()
        if self._own_dir and self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
        atexit.unregister(self.stop)

    def __enter__(self) -> MailStack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start_dovecot(self, attempts: int = 5) -> None:
        """(Re)start Dovecot; keeps the previous ports unless another process took one."""
        if self.running:
            return
        assert self.base_dir is not None, "call start() first"
        last: Exception | None = None
        for i in range(attempts):
            if i > 0 or not self.imap_port:
                self.imap_port, self.lmtp_port = free_ports(2)
            self._write_config()
            try:
                self._launch()
                return
            except _PortClash as e:
                last = e
        raise MailStackError(f"dovecot could not bind free ports: {last}")

    def stop_dovecot(self, timeout: float = 10.0) -> None:
        """Kill the Dovecot master and WAIT for it (and its children) to exit."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:  # stragglers (login/imap processes) share the master's process group
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        wait_closed(self.imap_port, self.lmtp_port, seconds=3)

    def master_pid(self) -> int:
        """The Dovecot master's pid (its children serve IMAP and LMTP)."""
        assert self._proc is not None, "dovecot is not running"
        return self._proc.pid

    # IMAP outage simulation (Dovecot serves IMAP and LMTP; both go down together).
    stop_imap = stop_dovecot
    start_imap = start_dovecot

    @contextlib.contextmanager
    def refusing(self, address: str, reply: str, at: str = "RCPT") -> Iterator[None]:
        """Within the block the SMTP front end answers mail to ``address`` with ``reply``
        at RCPT, or (``at="DATA"``) after its DATA, as a player's mail server that refuses
        the address for good ("550 5.1.1 ...") or for now ("450 4.2.1 ..."). The front
        end in this process only (relay_processes=0). Unknown users are refused at RCPT
        anyway (550 5.1.1)."""
        key = address.lower()
        self.refusals[key] = (at.upper(), reply)
        try:
            yield
        finally:
            self.refusals.pop(key, None)

    @contextlib.contextmanager
    def throttling(self, reply: str = "451 4.7.0 Try again later, rate limit exceeded",
                   at: str = "RCPT", mails: int | None = None,
                   seconds: float | None = None) -> Iterator[None]:
        """Within the block the SMTP front end answers every mail with ``reply`` at RCPT
        (or after its DATA), as a provider's rate limit does ("451 4.7.0", "421 4.7.0"):
        for the next ``mails`` mails, or for ``seconds``, or (neither) until the block
        ends. ``throttled`` counts the mails so answered. This process's front end only."""
        until = time.monotonic() + seconds if seconds is not None else None
        self._throttle = (at.upper(), reply, mails, until)
        try:
            yield
        finally:
            self._throttle = None

    def throttled_answer(self, stage: str) -> str | None:
        """The throttling reply for a mail at ``stage``, or None (counted when given)."""
        throttle = getattr(self, "_throttle", None)
        if throttle is None or throttle[0] != stage:
            return None
        at, reply, left, until = throttle
        if (left is not None and left <= 0) or (until is not None and time.monotonic() > until):
            return None
        if left is not None:
            self._throttle = (at, reply, left - 1, until)
        self.throttled += 1
        return reply

    def restart(self) -> None:
        self.stop_dovecot()
        self.start_dovecot()

    # ---- internals ----------------------------------------------------------------

    def _start_relay_processes(self) -> None:
        """``relay_processes`` SMTP front ends in processes of their own, all taking
        connections from one listening socket (as an MTA serves each in parallel)."""
        if self._relays:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, 0))
        listener.listen(128)
        root = Path(__file__).resolve().parent.parent
        try:
            for _ in range(self.relay_processes):
                relay = subprocess.Popen(
                    [sys.executable, "-m", "testkit.mailstack", "relay", str(listener.fileno()),
                     str(self.lmtp_port), ",".join(sorted(self.addresses))],
                    cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    pass_fds=(listener.fileno(),))
                self._relays.append(relay)
                assert relay.stdout is not None
                line = relay.stdout.readline()
                if line.strip() != b"ready":
                    raise MailStackError(f"a relay process did not start: {line!r}")
            self.smtp_port = listener.getsockname()[1]
        finally:
            listener.close()   # the relays hold it

    def _stop_relay_processes(self) -> None:
        relays, self._relays = self._relays, []
        for relay in relays:
            assert relay.stdin is not None
            relay.stdin.close()   # the relay's cue to stop
        for relay in relays:
            try:
                relay.wait(10)
            except subprocess.TimeoutExpired:
                relay.kill()
                relay.wait()

    def _mail_owner(self) -> tuple[str, str]:
        if os.geteuid() == 0:
            user = "nobody"
            try:
                group = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
            except KeyError:
                group = "nogroup"
            return user, group
        return pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name

    def _prepare_dir(self) -> None:
        d = self.base_dir
        assert d is not None
        for sub in ("run", "state", "mail"):
            (d / sub).mkdir(exist_ok=True)
        os.chmod(d, 0o755)  # the auth process (user dovecot) must reach the passwd-file
        user, group = self._mail_owner()
        if os.geteuid() == 0:
            shutil.chown(d / "mail", user, group)
        users = d / "users"
        users.write_text("".join(f"{u}:{{PLAIN}}{self.password}::::::\n" for u in self.users))
        os.chmod(users, 0o644)

    def _write_config(self) -> None:
        d = self.base_dir
        assert d is not None
        user, group = self._mail_owner()
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
    port = {self.imap_port}
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
    port = {self.lmtp_port}
  }}
}}
{rootless}{self.extra_config}
"""
        (d / "dovecot.conf").write_text(conf)

    def _launch(self) -> None:
        d = self.base_dir
        assert d is not None
        dovecot = _find_dovecot()
        assert dovecot is not None
        offset = log_size(d / "dovecot.log")
        stderr_path = d / "dovecot.stderr"
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                [dovecot, "-F", "-c", str(d / "dovecot.conf")],
                stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                start_new_session=True)  # own process group: stop() kills all of it
        self._proc = proc
        deadline = time.monotonic() + 15
        while True:
            log = log_since(d / "dovecot.log", offset)
            if proc.poll() is not None:
                self._proc = None
                text = log + stderr_path.read_text(errors="replace")
                if "Address already in use" in text:
                    raise _PortClash(text.strip().splitlines()[-1] if text.strip() else "")
                raise MailStackError(f"dovecot exited with {proc.returncode}:\n{text}")
            # "starting up" is logged after all listeners are bound, so an open port
            # is ours and not another process's.
            if "starting up" in log and port_open(self.imap_port) and port_open(self.lmtp_port):
                return
            if time.monotonic() > deadline:
                self.stop_dovecot()
                raise MailStackError(f"dovecot did not come up in time:\n{log}")
            time.sleep(0.01)

    # ---- mail helpers -------------------------------------------------------------

    def address(self, user: str) -> str:
        return user if "@" in user else f"{user}@{self.domain}"

    def deliver(self, to_addr: str | Iterable[str], raw_bytes: bytes,
                mail_from: str = "tester@bluff.test") -> None:
        """Send raw_bytes into the stack over SMTP (raises on any refusal)."""
        rcpts = [to_addr] if isinstance(to_addr, str) else list(to_addr)
        rcpts = [self.address(r) for r in rcpts]
        with smtplib.SMTP(self.smtp_host, self.smtp_port, timeout=10) as s:
            refused = s.sendmail(mail_from, rcpts, raw_bytes)
        if refused:
            raise MailStackError(f"recipients refused: {refused}")

    def maildir(self, user: str) -> Path:
        """The user's Maildir (``mail_location = maildir:~/Maildir``), made when missing."""
        assert self.base_dir is not None, "call start() first"
        local, _, domain = self.address(user).partition("@")
        root = self.base_dir / "mail" / domain / local / "Maildir"
        owner = self._mail_owner() if os.geteuid() == 0 else None
        for path in (root.parent.parent, root.parent, root,
                     *(root / sub for sub in ("tmp", "new", "cur"))):
            if not path.is_dir():
                path.mkdir()
                if owner is not None:
                    shutil.chown(path, *owner)
        return root

    def deliver_many(self, user: str, raws: Iterable[bytes]) -> int:
        """Put mails straight into user's INBOX, as a local delivery agent does: each is
        written into the Maildir's tmp/ then renamed into new/, where Dovecot picks it up
        at its next look. Far faster than LMTP for tens of thousands of mails (no fsync,
        no connection per mail); takes an iterable, so the mails can be streamed.
        Returns how many were delivered."""
        root = self.maildir(user)
        owner = self._mail_owner() if os.geteuid() == 0 else None
        uid = pwd.getpwnam(owner[0]).pw_uid if owner else -1
        gid = grp.getgrnam(owner[1]).gr_gid if owner else -1
        stamp, host = int(time.time()), socket.gethostname().replace("/", "_").replace(":", "_")
        count = 0
        for raw in raws:
            name = f"{stamp}.M{count}P{os.getpid()}Q{time.monotonic_ns()}.{host},S={len(raw)}"
            tmp = root / "tmp" / name
            with open(tmp, "wb") as f:
                f.write(raw)
            if owner is not None:
                os.chown(tmp, uid, gid)
            os.rename(tmp, root / "new" / name)
            count += 1
        return count

    def imap(self, user: str) -> IMAPClient:
        """A logged-in IMAPClient for user (caller logs out)."""
        client = IMAPClient(self.imap_host, self.imap_port, ssl=False, timeout=10)
        try:
            client.login(self.address(user), self.password)
        except Exception:
            client.shutdown()
            raise
        return client

    def fetch_all(self, user: str, folder: str = "INBOX") -> list[bytes]:
        """Raw messages in folder, in UID order; [] when the folder does not exist."""
        client = self.imap(user)
        try:
            if not client.folder_exists(folder):
                return []
            client.select_folder(folder, readonly=True)
            uids = client.search(["ALL"])
            if not uids:
                return []
            data = client.fetch(uids, ["BODY.PEEK[]"])
            return [data[u][b"BODY[]"] for u in sorted(data)]
        finally:
            client.logout()

    def append(self, user: str, *raws: bytes, folder: str = "INBOX") -> None:
        """Put raws into user's folder over IMAP, as they are (no SMTP, no LMTP)."""
        client = self.imap(user)
        try:
            for raw in raws:
                client.append(folder, raw)
        finally:
            client.logout()

    def wait_for(self, user: str, count: int, folder: str = "INBOX",
                 timeout: float = 10) -> list[bytes]:
        """Poll until folder holds at least count messages; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            msgs = self.fetch_all(user, folder)
            if len(msgs) >= count:
                return msgs
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.address(user)}/{folder}: {len(msgs)} messages after "
                    f"{timeout}s, wanted {count}")
            time.sleep(0.02)

    def clear(self, user: str, folder: str | None = None) -> None:
        """Empty a mailbox. With folder=None: empty INBOX and delete every other folder."""
        client = self.imap(user)
        try:
            folders = [folder] if folder else sorted(
                (f[2] for f in client.list_folders()), reverse=True)  # children first
            for name in folders:
                if name.upper() == "INBOX" or folder:
                    if not client.folder_exists(name):
                        continue
                    client.select_folder(name)
                    uids = client.search(["ALL"])
                    if uids:
                        client.delete_messages(uids)
                        client.expunge()
                    client.close_folder()
                else:
                    client.delete_folder(name)
        finally:
            client.logout()


class _RelayProcessStack:
    """What a front end process knows of its MailStack (what _LmtpRelay asks of it): the
    LMTP port and the addresses; throttling and refusals are the main process's own."""

    def __init__(self, lmtp_port: int, addresses: set[str]) -> None:
        self.lmtp_port, self.addresses = lmtp_port, addresses
        self.refusals: dict[str, tuple[str, str]] = {}

    def throttled_answer(self, stage: str) -> str | None:
        return None


def _serve_relay(listener_fd: int, lmtp_port: int, addresses: str) -> None:
    """One SMTP front end process (MailStack(relay_processes=N)) on the listening socket it
    was given: says "ready", and runs until its standard input is closed."""
    import threading

    from aiosmtpd.smtp import SMTP

    handler = _LmtpRelay(_RelayProcessStack(lmtp_port, set(addresses.split(","))))
    loop = asyncio.new_event_loop()
    listener = socket.socket(fileno=listener_fd)
    server = loop.run_until_complete(loop.create_server(lambda: SMTP(handler), sock=listener))
    print("ready", flush=True)

    def wait_for_eof() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(loop.stop)

    threading.Thread(target=wait_for_eof, daemon=True).start()
    loop.run_forever()
    server.close()
    tasks = asyncio.all_tasks(loop)   # the connections still open: closed quietly
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.wait(tasks))
    loop.close()


if __name__ == "__main__" and sys.argv[1:2] == ["relay"]:
    _serve_relay(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
