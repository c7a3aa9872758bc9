"""A tiny OAuth2 authorization server on loopback for tests: a token endpoint that
turns a refresh token into an access token (RFC 6749 6), and a token introspection
endpoint (RFC 7662) that Dovecot's oauth2 passdb and the test SMTP relay ask whether a
bearer token is good, and for whom.

    tokens = OAuthServer(lifetime=3600).start()
    refresh = tokens.grant("bluff@bluff.test")      # a refresh token for that user
    tokens.revoke(refresh)                          # the next refresh is refused
    tokens.expire_all()                             # every access token handed out so far ends

Plain module (no pytest import), like testkit/mailstack.py.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from testkit.net import LOOPBACK

CLIENT_ID = "pbem-test-client"
CLIENT_SECRET = "pbem-test-secret"


class OAuthServer:
    def __init__(self, lifetime: float = 3600.0) -> None:
        self.lifetime = lifetime
        self.refresh_tokens: dict[str, str] = {}            # refresh token -> user
        self.access_tokens: dict[str, tuple[str, float]] = {}   # token -> (user, ends)
        self.refreshes = 0                                   # access tokens handed out
        self.introspections: list[tuple[str, bool]] = []     # (token, active) asked
        self._lock = threading.Lock()
        self._http: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self._http is not None, "start() first"
        return self._http.server_address[1]

    @property
    def token_uri(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/token"

    @property
    def introspection_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/introspect"

    def start(self) -> OAuthServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:   # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if self.path == "/token":
                    status, body = server._token(form)
                elif self.path == "/introspect":
                    status, body = 200, server._introspect(form.get("token", ""))
                else:
                    status, body = 404, {"error": "not_found"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._http = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def grant(self, user: str) -> str:
        """A new refresh token for user (what the referee's consent at the provider gives)."""
        token = "rt-" + secrets.token_urlsafe(16)
        with self._lock:
            self.refresh_tokens[token] = user
        return token

    def revoke(self, refresh_token: str) -> None:
        """The refresh token is revoked, and every access token of its user ends."""
        with self._lock:
            user = self.refresh_tokens.pop(refresh_token, None)
            self.access_tokens = {t: v for t, v in self.access_tokens.items() if v[0] != user}

    def expire_all(self) -> None:
        with self._lock:
            self.access_tokens = {t: (user, 0.0) for t, (user, _) in self.access_tokens.items()}

    def valid(self, token: str) -> str | None:
        """The user of a good access token, else None."""
        with self._lock:
            user, ends = self.access_tokens.get(token, ("", 0.0))
        return user if user and time.time() < ends else None

    def _token(self, form: dict[str, str]) -> tuple[int, dict[str, object]]:
        if form.get("grant_type") != "refresh_token":
            return 400, {"error": "unsupported_grant_type"}
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return 401, {"error": "invalid_client"}
        with self._lock:
            user = self.refresh_tokens.get(form.get("refresh_token", ""))
            if user is None:
                return 400, {"error": "invalid_grant",
                             "error_description": "the refresh token was revoked"}
            token = "at-" + secrets.token_urlsafe(16)
            self.access_tokens[token] = (user, time.time() + self.lifetime)
            self.refreshes += 1
        return 200, {"access_token": token, "token_type": "Bearer",
                     "expires_in": int(self.lifetime)}

    def _introspect(self, token: str) -> dict[str, object]:
        user = self.valid(token)
        with self._lock:
            self.introspections.append((token, user is not None))
        return {"active": True, "username": user} if user else {"active": False}

    def dovecot_config(self, conf_path: str) -> str:
        """dovecot.conf lines for a passdb that takes these bearer tokens (XOAUTH2 and
        OAUTHBEARER), the passwords still taken as before; ``conf_path``: where the oauth2
        settings are written (write_dovecot_oauth2)."""
        return f"""
auth_mechanisms = plain login xoauth2 oauthbearer
passdb {{
  driver = oauth2
  mechanisms = xoauth2 oauthbearer
  args = {conf_path}
}}
"""

    def write_dovecot_oauth2(self, conf_path: str) -> None:
        with open(conf_path, "w") as out:
            out.write(f"introspection_mode = post\nintrospection_url = {self.introspection_url}\n"
                      "username_attribute = username\nactive_attribute = active\n"
                      "active_value = true\n")
