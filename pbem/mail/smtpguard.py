"""aiosmtpd's SMTP protocol with the limits an internet-facing listener needs.

- A cap on connections at once, in all and from one IP address: one more is told
  ``421 4.7.0`` and closed before it costs more than a moment (the file descriptors
  of the process are not the attacker's to take).
- DATA read within bounded memory: aiosmtpd (1.4) keeps every fragment of an
  over-long line until the line ends, and keeps all of a mail in memory while it
  arrives. Here a line over the limit is dropped as it is read, and a mail's bytes
  go to a spooled temporary file (in memory up to ``SPOOL_MEMORY``, on disk beyond):
  clients that stall mid-DATA hold a few hundred KB each, not their mail. A client
  that keeps sending past twice the size limit is answered and disconnected.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections import Counter
from typing import Any

from aiosmtpd.smtp import SMTP

__all__ = ["SPOOL_MEMORY", "Gate", "GuardedSMTP"]

log = logging.getLogger(__name__)

SPOOL_MEMORY = 256 * 1024
TOO_MANY = b"421 4.7.0 Too many connections, try again later\r\n"


class Gate:
    """Counts the connections at once; runs on the listener's event loop only."""

    def __init__(self, total: int, per_ip: int) -> None:
        self.total, self.per_ip = total, per_ip
        self.by_ip: Counter[str] = Counter()
        self.open = 0

    def enter(self, ip: str) -> bool:
        if self.open >= self.total or self.by_ip[ip] >= self.per_ip:
            log.warning("refused a connection from %s: %d open, %d from there (the caps: "
                        "%d, %d a client)", ip, self.open, self.by_ip[ip], self.total,
                        self.per_ip)
            return False
        self.by_ip[ip] += 1
        self.open += 1
        return True

    def leave(self, ip: str) -> None:
        self.open -= 1
        self.by_ip[ip] -= 1
        if self.by_ip[ip] <= 0:
            del self.by_ip[ip]


class GuardedSMTP(SMTP):
    """aiosmtpd's SMTP with the caps above. ``smtp_DATA`` replaces a command the way
    aiosmtpd's docs show (smtp.rst, "Subclassing"). The asyncio Protocol callbacks are
    an override kept on purpose (bench/house.py's KEPT_OVERRIDES): aiosmtpd has no hook
    when a connection opens or closes, and the cap must count both; each calls the
    library's own after its check."""

    def __init__(self, handler: Any, *, gate: Gate, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._gate = gate
        self._ip: str | None = None        # set while this connection counts at the gate
        self._refused = False

    # --- the connection cap --------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._ip is None and not self._refused:       # not the STARTTLS hand-over
            peer = transport.get_extra_info("peername")
            ip = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
            if not self._gate.enter(ip):
                self._refused = True
                write = getattr(transport, "write", None)
                if write is not None:
                    write(TOO_MANY)
                transport.close()
                return
            self._ip = ip
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        if self._refused:
            return
        ip, self._ip = self._ip, None
        if ip is not None:
            self._gate.leave(ip)
        super().connection_lost(error)

    def eof_received(self) -> bool | None:
        if self._refused:
            return False
        result: bool | None = super().eof_received()
        return result

    # --- DATA in bounded memory ------------------------------------------------

    async def smtp_DATA(self, arg: str) -> None:
        if await self.check_helo_needed() or await self.check_auth_needed("DATA"):
            return
        assert self.envelope is not None
        if not self.envelope.rcpt_tos:
            await self.push("503 5.5.1 Error: need RCPT command")
            return
        if arg:
            await self.push("501 5.5.4 Syntax: DATA")
            return
        await self.push("354 End data with <CR><LF>.<CR><LF>")
        limit = self.data_size_limit or 0
        reader = self._reader
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)
        try:
            size = 0
            trouble = ""            # the reply once the mail cannot be taken
            in_long_line = False    # inside a line longer than the limit
            while self.transport is not None:
                try:
                    line = await reader.readuntil(b"\r\n")
                except asyncio.LimitOverrunError as e:
                    size += len(await reader.read(e.consumed))
                    in_long_line = True
                    trouble = trouble or "500 5.5.2 Line too long (RFC 5321 4.5.3.1.6)"
                else:
                    if in_long_line:         # the end of the over-long line
                        in_long_line = False
                        size += len(line)
                    elif line == b".\r\n":
                        break
                    else:
                        size += len(line)
                        if not trouble:
                            spool.write(line[1:] if line.startswith(b".") else line)
                if limit and size > limit and not trouble:
                    trouble = "552 5.3.4 Error: too much mail data"
                if limit and size > 2 * limit:   # still sending: no reason to read on
                    await self.push(trouble + ", closing the connection")
                    if self.transport is not None:
                        self.transport.close()
                    return
            else:                                # the connection went: no mail
                return
            if trouble:
                self._set_post_data_state()  # type: ignore[no-untyped-call]
                await self.push(trouble)
                return
            spool.seek(0)
            content = spool.read()
        finally:
            spool.close()
        self.envelope.content = self.envelope.original_content = content
        status = await self._call_handler_hook("DATA")
        self._set_post_data_state()  # type: ignore[no-untyped-call]
        await self.push("250 OK" if not isinstance(status, str) else status)
