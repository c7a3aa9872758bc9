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

Dovecot's files and configuration are testkit/dovecot.py's, the SMTP front end
testkit/smtp_relay.py's (each says the facts it relies on); here the stack is started,
stopped, made to refuse or throttle, and read and written as a test does.
"""
from __future__ import annotations

import atexit
import contextlib
import grp
import os
import pwd
import shutil
import signal
import smtplib
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from aiosmtpd.controller import Controller
from imapclient import IMAPClient

from testkit.dovecot import dovecot_available, find_dovecot, mail_owner, prepare_dir, write_config
from testkit.net import LOOPBACK, free_ports, log_since, log_size, port_open, wait_closed
from testkit.smtp_relay import (
    BearerRelay,
    LmtpRelay,
    MailStackError,
    start_controller,
    start_relay_processes,
    stop_relay_processes,
)

DEFAULT_USERS = ("bluff", "referee", "p1", "p2", "p3", "p4", "p5", "p6", "observer")
DEFAULT_DOMAIN = "bluff.test"
PASSWORD = "secret"


class _PortClash(MailStackError):
    pass


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
            prepare_dir(self.base_dir, self.users, self.password)
        try:
            self.start_dovecot()
            if self.relay_processes:
                if not self._relays:   # in processes of their own, on one socket
                    self.smtp_port = start_relay_processes(self.relay_processes, self.lmtp_port,
                                                           self.addresses, self._relays)
            elif self._smtp is None and self.bearer is not None:
                self._smtp = start_controller(BearerRelay(self, self.bearer), self.smtp_host,
                                              auth_require_tls=False)
                self.smtp_port = self._smtp.port
            elif self._smtp is None:
                self._smtp = start_controller(LmtpRelay(self), self.smtp_host)
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
        relays, self._relays = self._relays, []
        stop_relay_processes(relays)
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
            write_config(self.base_dir, self.imap_port, self.lmtp_port, self.extra_config)
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

    def _launch(self) -> None:
        d = self.base_dir
        assert d is not None
        dovecot = find_dovecot()
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
        owner = mail_owner() if os.geteuid() == 0 else None
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
        owner = mail_owner() if os.geteuid() == 0 else None
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
