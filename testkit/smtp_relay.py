"""The test mail stack's SMTP front end (testkit/mailstack.py): an aiosmtpd handler that
relays each accepted mail into Dovecot over LMTP, the same taking OAuth logins, and the
front end run in processes of its own.

Plain module (no pytest import), like testkit/mailstack.py.

Facts this relies on:
- the front end refuses unknown recipients at RCPT time with 550 5.1.1; a known
  user's plus address (``bluff+anything@``) is delivered to that user's INBOX.
- ``smtplib.LMTP`` reads ONE reply after DATA but LMTP sends one per recipient, so
  the relay makes one LMTP transaction per recipient.
"""
from __future__ import annotations

import asyncio
import base64
import smtplib
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from testkit.net import LOOPBACK, free_ports

if TYPE_CHECKING:
    from testkit.mailstack import MailStack


# the stack's error, here in its lowest module (testkit.mailstack raises it too)
class MailStackError(RuntimeError):
    """The test mail stack could not be started or used."""


class LmtpRelay:
    """aiosmtpd handler: refuses unknown recipients at RCPT time (550 5.1.1) and hands
    each accepted message to Dovecot over LMTP, one transaction per recipient."""

    def __init__(self, stack: MailStack | RelayProcessStack) -> None:
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


class BearerRelay(LmtpRelay):
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


def start_relay_processes(count: int, lmtp_port: int, addresses: set[str],
                          relays: list[subprocess.Popen]) -> int:
    """``count`` SMTP front ends in processes of their own, all taking connections from
    one listening socket (as an MTA serves each in parallel), each put in ``relays`` as it
    starts (so that a failure leaves the started ones to stop); returns their port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((LOOPBACK, 0))
    listener.listen(128)
    root = Path(__file__).resolve().parent.parent
    try:
        for _ in range(count):
            relay = subprocess.Popen(
                [sys.executable, "-m", "testkit.smtp_relay", "relay", str(listener.fileno()),
                 str(lmtp_port), ",".join(sorted(addresses))],
                cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                pass_fds=(listener.fileno(),))
            relays.append(relay)
            assert relay.stdout is not None
            line = relay.stdout.readline()
            if line.strip() != b"ready":
                raise MailStackError(f"a relay process did not start: {line!r}")
        return int(listener.getsockname()[1])
    finally:
        listener.close()   # the relays hold it


def stop_relay_processes(relays: list[subprocess.Popen]) -> None:
    """Stop the front end processes (closing their standard input) and wait for them."""
    for relay in relays:
        assert relay.stdin is not None
        relay.stdin.close()   # the relay's cue to stop
    for relay in relays:
        try:
            relay.wait(10)
        except subprocess.TimeoutExpired:
            relay.kill()
            relay.wait()


class RelayProcessStack:
    """What a front end process knows of its MailStack (what LmtpRelay asks of it): the
    LMTP port and the addresses; throttling and refusals are the main process's own."""

    def __init__(self, lmtp_port: int, addresses: set[str]) -> None:
        self.lmtp_port, self.addresses = lmtp_port, addresses
        self.refusals: dict[str, tuple[str, str]] = {}

    def throttled_answer(self, stage: str) -> str | None:
        return None


def serve_relay(listener_fd: int, lmtp_port: int, addresses: str) -> None:
    """One SMTP front end process (MailStack(relay_processes=N)) on the listening socket it
    was given: says "ready", and runs until its standard input is closed."""
    import threading

    from aiosmtpd.smtp import SMTP

    handler = LmtpRelay(RelayProcessStack(lmtp_port, set(addresses.split(","))))
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
    serve_relay(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
