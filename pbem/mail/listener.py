"""The embedded SMTP listener (aiosmtpd): accepts mail directly, without a mailbox.

A message is answered with 250 only after ``store(raw, envelope_from, rcpts)`` has
returned (it runs in a worker thread and must save durably). If ``store`` raises
the client gets ``451 4.3.0`` and retries later, so nothing is lost. Messages
larger than ``max_bytes`` are refused with 552 by aiosmtpd itself.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiosmtpd.controller import Controller

log = logging.getLogger(__name__)

StoreFn = Callable[[bytes, str, list[str]], None]


class _StoreHandler:
    def __init__(self, store: StoreFn, executor: ThreadPoolExecutor) -> None:
        self.store = store
        self.executor = executor

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        loop = asyncio.get_running_loop()
        raw = envelope.original_content
        if raw is None:
            raw = envelope.content if isinstance(envelope.content, bytes) else b""
        mail_from = envelope.mail_from or ""
        rcpts = list(envelope.rcpt_tos)
        try:
            await loop.run_in_executor(self.executor, self.store, raw, mail_from, rcpts)
        except Exception:
            log.exception("storing a mail from %r for %r failed; answered 451", mail_from,
                          rcpts)
            return "451 4.3.0 Temporary failure storing the message, try again later"
        return "250 2.0.0 OK: message stored"


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class MailListener:
    """SMTP server on host:port (port 0 picks a free port; see ``port`` after start)."""

    def __init__(self, store: StoreFn, host: str = "127.0.0.1", port: int = 2525,
                 max_bytes: int = 10_000_000) -> None:
        self.store = store
        self.host = host
        self.port = port
        self.max_bytes = max_bytes
        self._controller: Controller | None = None
        self._executor: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"MailListener({self.host}:{self.port})"

    def __enter__(self) -> MailListener:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._controller is not None:
            return
        executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pbem-smtp-store")
        handler = _StoreHandler(self.store, executor)
        want = self.port
        attempts = 5 if want == 0 else 1
        last: Exception | None = None
        for _ in range(attempts):
            port = want or _free_port(self.host)
            ctl = Controller(handler, hostname=self.host, port=port,
                             data_size_limit=self.max_bytes)
            try:
                ctl.start()
            except OSError as e:  # the port was taken between choosing and binding
                last = e
                try:
                    ctl.stop(no_assert=True)
                except Exception:
                    pass
                continue
            self._controller, self._executor, self.port = ctl, executor, port
            log.info("%r: listening", self)
            return
        executor.shutdown(wait=False)
        raise OSError(f"cannot listen for SMTP on {self.host}:{want}: {last}")

    def stop(self) -> None:
        """Stop accepting, then wait for stores that are still running."""
        ctl, self._controller = self._controller, None
        executor, self._executor = self._executor, None
        if ctl is not None:
            ctl.stop()
        if executor is not None:
            executor.shutdown(wait=True)
