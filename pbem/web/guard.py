"""The web app's outermost layer: every request logged without its secrets, the security
headers added, and any crash turned into a plain 500 page (the traceback to the log only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from pbem.text.links import redact

log = logging.getLogger("pbem.web")

SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy",
     (b"default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; "
      b"form-action 'self'; base-uri 'none'; frame-ancestors 'none'")),
]
WATCHED = ("/healthz", "/metrics")   # what monitoring asks for (docs/monitoring.md)


class Guard:
    """Outermost: logs every request without its secrets, adds the security headers, and
    turns any crash into a plain 500 page (the traceback goes to the log only). A client
    that leaves in the middle of its request is the request's one log line, no error."""

    def __init__(self, app: ASGIApp, fallback: Callable[[Scope], bytes]) -> None:
        self.app = app
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state: dict[str, object] = {"status": 500, "sent": False}

        async def guarded_send(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start":
                state["status"], state["sent"] = message["status"], True
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        path = redact(scope.get("path", ""))
        try:
            await self.app(scope, receive, guarded_send)
        except ClientDisconnect:   # gone mid-upload: nobody to answer, nothing went wrong
            state["status"] = "client disconnected"
        except Exception:
            log.exception("error answering %s %s", scope.get("method"), path)
            if not state["sent"]:
                headers = [(b"content-type", b"text/html; charset=utf-8"),
                           (b"cache-control", b"no-store")]
                await guarded_send({"type": "http.response.start", "status": 500,
                                    "headers": headers})
                await send({"type": "http.response.body", "body": self.fallback(scope)})
        finally:
            # a monitor asks every few seconds: its answers in the log only when not 200
            quiet = path in WATCHED and state["status"] == 200
            log.log(logging.DEBUG if quiet else logging.INFO, "%s %s %s %.1fms",
                    scope.get("method"), path, state["status"],
                    (time.perf_counter() - started) * 1000)
