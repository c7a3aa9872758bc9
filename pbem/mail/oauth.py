"""OAuth2 logins (XOAUTH2, OAUTHBEARER: RFC 7628) for IMAP and SMTP: Microsoft 365 and
Outlook.com take nothing else, Google prefers it.

A TokenSource turns a refresh token (and the app's client id and secret) into access
tokens, and refreshes one before it runs out: through ``msal`` for Microsoft, and
through ``google-auth`` for Google and any other token endpoint (its Credentials
refresh against whatever ``token_uri`` it is given). Both are the optional extra
``pbem[oauth]``. The refresh token lives outside pbem.toml: in the environment, or in a
token file only its owner may read (pbem refuses one the group or others can read); a
refresh token the provider replaces is written back to that file.

A refresh the provider refuses (the token revoked, the app's secret expired) raises
OAuthRefused, a MailServiceUnavailable: the mail waits in the mailbox and the outbox,
the service is backed off, and ``refused`` is called once until a refresh works again.
"""

from __future__ import annotations

import json
import logging
import os
import smtplib
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import MailServiceUnavailable

log = logging.getLogger(__name__)

MECHANISMS = ("xoauth2", "oauthbearer")
REFRESH_MARGIN = 300.0   # seconds before its end an access token is refreshed
MICROSOFT_AUTHORITY = "https://login.microsoftonline.com/{tenant}"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"


class OAuthRefused(MailServiceUnavailable):
    """No access token: the provider refused the refresh (or it could not be asked)."""


class TokenFileError(ValueError):
    """The token file is missing, unreadable, readable by others, or not a token file."""


@dataclass(frozen=True)
class OAuthGrant:
    """What a TokenSource needs: the app (client id, secret, tenant), where to refresh
    (``provider``: microsoft, google or "" for ``token_uri``), the scopes, and the refresh
    token (given, or in ``token_file``)."""

    client_id: str
    provider: str = ""
    tenant: str = "common"
    token_uri: str = ""
    scopes: tuple[str, ...] = ()
    refresh_token: str = ""
    client_secret: str = ""
    token_file: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def read_token_file(path: str) -> dict[str, str]:
    """The token file's JSON ({"refresh_token": ..., "client_secret": ...}); refused when
    the group or others may read it (it holds the key to the mailbox)."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
    except OSError as exc:
        raise TokenFileError(f"token file {path}: {exc.strerror or exc}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenFileError(f"token file {path} may be read by others (mode "
                             f"{stat.filemode(mode)}): chmod 600 {path}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TokenFileError(f"token file {path}: not the JSON pbem oauth wrote ({exc})") \
            from exc
    if not isinstance(data, dict) or not isinstance(data.get("refresh_token"), str):
        raise TokenFileError(f"token file {path}: no refresh_token in it")
    return {k: v for k, v in data.items() if isinstance(v, str)}


def write_token_file(path: str, data: dict[str, str]) -> None:
    """Write the token file for its owner only (0600), replacing it whole."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1)
        out.write("\n")
    os.replace(tmp, path)


class TokenSource:
    """Fresh access tokens for one grant, shared by the threads that log in."""

    def __init__(self, grant: OAuthGrant, refused: Callable[[str], object] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.grant, self.refused, self.clock = grant, refused, clock
        self._token = ""
        self._expires = 0.0
        self._lock = threading.Lock()
        self._told = False          # refused was called for this run of refusals
        self.refreshes = 0

    def access_token(self) -> str:
        """A token valid for at least REFRESH_MARGIN seconds more (refreshed if need be).
        Raises OAuthRefused."""
        with self._lock:
            if self._token and self.clock() < self._expires - REFRESH_MARGIN:
                return self._token
            try:
                self._token, lasts = self._refresh()
            except OAuthRefused as exc:
                if not self._told:
                    self._told = True
                    log.error("%s", exc)
                    if self.refused is not None:
                        self.refused(str(exc))
                raise
            if self._told:
                log.info("the OAuth2 refresh works again")
            self._told = False
            self._expires = self.clock() + lasts
            self.refreshes += 1
            return self._token

    def forget(self) -> None:
        """The server refused the token: the next login refreshes it."""
        with self._lock:
            self._token = ""

    def _secrets(self) -> tuple[str, str]:
        grant = self.grant
        if grant.refresh_token:
            return grant.refresh_token, grant.client_secret
        if not grant.token_file:
            raise OAuthRefused("OAuth2: no refresh token (set oauth_token_file, or the "
                               "environment; `pbem oauth` makes one)")
        try:
            data = read_token_file(grant.token_file)
        except TokenFileError as exc:
            raise OAuthRefused(f"OAuth2: {exc}") from exc
        return data["refresh_token"], data.get("client_secret", grant.client_secret)

    def _keep_new_refresh_token(self, old: str, new: str | None) -> None:
        """A provider that rotates refresh tokens (Microsoft) hands a new one: kept in the
        token file (a refresh token from the environment is the environment's to keep)."""
        if not new or new == old or not self.grant.token_file:
            return
        try:
            data = read_token_file(self.grant.token_file)
            data["refresh_token"] = new
            write_token_file(self.grant.token_file, data)
        except (OSError, TokenFileError) as exc:
            log.warning("the new OAuth2 refresh token could not be kept in %s: %s",
                        self.grant.token_file, exc)

    def _refresh(self) -> tuple[str, float]:
        refresh_token, secret = self._secrets()
        if self.grant.provider == "microsoft":
            return self._refresh_msal(refresh_token, secret)
        return self._refresh_google_auth(refresh_token, secret)

    def _refresh_msal(self, refresh_token: str, secret: str) -> tuple[str, float]:
        try:
            import msal
        except ImportError as exc:
            raise OAuthRefused("OAuth2 for Microsoft needs msal: pip install 'pbem[oauth]'") \
                from exc
        authority = MICROSOFT_AUTHORITY.format(tenant=self.grant.tenant or "common")
        app: Any = (msal.ConfidentialClientApplication(self.grant.client_id, secret,
                                                       authority=authority)
                    if secret else msal.PublicClientApplication(self.grant.client_id,
                                                                authority=authority))
        try:
            result = app.acquire_token_by_refresh_token(refresh_token, list(self.grant.scopes))
        except Exception as exc:   # the network, the authority's metadata
            raise OAuthRefused(f"OAuth2 refresh at Microsoft failed: {exc}") from exc
        if "access_token" not in result:
            raise OAuthRefused("OAuth2 refresh refused by Microsoft: "
                               f"{result.get('error')}: {result.get('error_description', '')}"
                               .strip())
        self._keep_new_refresh_token(refresh_token, result.get("refresh_token"))
        return str(result["access_token"]), float(result.get("expires_in", 3600))

    def _refresh_google_auth(self, refresh_token: str, secret: str) -> tuple[str, float]:
        try:
            from google.auth.exceptions import GoogleAuthError
            from google.auth.transport.requests import Request
            from google.oauth2.credentials import Credentials
        except ImportError as exc:
            raise OAuthRefused("OAuth2 needs google-auth: pip install 'pbem[oauth]'") from exc
        make: Any = Credentials   # google-auth ships no type hints
        credentials = make(
            None, refresh_token=refresh_token, client_id=self.grant.client_id,
            client_secret=secret or None, scopes=list(self.grant.scopes) or None,
            token_uri=self.grant.token_uri or GOOGLE_TOKEN_URI)
        try:
            credentials.refresh(Request())   # against token_uri, whoever runs it
        except GoogleAuthError as exc:
            said = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
            raise OAuthRefused(f"OAuth2 refresh at {credentials.token_uri} refused: "
                               f"{' '.join(said.split())[:300]}") from exc
        except Exception as exc:   # requests' own: the endpoint unreachable
            raise OAuthRefused(f"OAuth2 refresh at {credentials.token_uri} failed: "
                               f"{' '.join(str(exc).split())[:300]}") from exc
        self._keep_new_refresh_token(refresh_token, credentials.refresh_token)
        expiry = credentials.expiry   # naive UTC, as google-auth keeps it
        lasts = 3600.0 if expiry is None else \
            (expiry - datetime.now(UTC).replace(tzinfo=None)).total_seconds()
        return str(credentials.token), lasts


def sasl_xoauth2(username: str, token: str) -> str:
    """The XOAUTH2 initial response (before base64)."""
    return f"user={username}\x01auth=Bearer {token}\x01\x01"


def sasl_oauthbearer(username: str, token: str) -> str:
    """The OAUTHBEARER initial response of RFC 7628 (before base64)."""
    return f"n,a={username},\x01auth=Bearer {token}\x01\x01"


class OAuthLogin:
    """Logs a connection in with a token from ``source``, by ``mechanism``."""

    def __init__(self, source: TokenSource, username: str, mechanism: str = "xoauth2") -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"no OAuth2 mechanism {mechanism!r}: {', '.join(MECHANISMS)}")
        self.source, self.username, self.mechanism = source, username, mechanism

    def imap(self, client: Any) -> None:
        """imapclient's oauth2_login / oauthbearer_login. Raises OAuthRefused (no token)
        and what the login raises (the token refused: forgotten, so the next is new)."""
        def login(token: str) -> None:
            if self.mechanism == "oauthbearer":
                client.oauthbearer_login(self.username, token)
            else:
                client.oauth2_login(self.username, token)
        self._with_token(login)

    def _with_token(self, login: Callable[[str], object]) -> None:
        """Log in with the token at hand; one the server refuses (it ended early, or was
        revoked) is refreshed and tried once more, so no poll is lost to it."""
        before = self.source.refreshes
        token = self.source.access_token()
        try:
            login(token)
            return
        except Exception:
            self.source.forget()
            if self.source.refreshes != before:   # a new token, refused: no second try
                raise
        login(self.source.access_token())

    def smtp(self, conn: Any) -> None:
        """smtplib's auth() with the SASL initial response; no token is an
        SMTPAuthenticationError, as a refused login is (the outbox waits)."""
        make = sasl_oauthbearer if self.mechanism == "oauthbearer" else sasl_xoauth2

        def login(token: str) -> None:
            conn.auth(self.mechanism.upper(), lambda challenge=None: make(self.username, token),
                      initial_response_ok=True)
        try:
            self._with_token(login)
        except OAuthRefused as exc:
            raise smtplib.SMTPAuthenticationError(530, str(exc).encode()) from exc


# ---- the first refresh token (`pbem oauth`) ------------------------------------------

MICROSOFT_SCOPES = ("https://outlook.office.com/IMAP.AccessAsUser.All",
                    "https://outlook.office.com/SMTP.Send")   # offline_access: msal adds it
GOOGLE_SCOPES = ("https://mail.google.com/",)


def microsoft_consent(client_id: str, tenant: str, say: Callable[[str], object]) -> str:
    """The device-code flow (msal): ``say`` tells the referee where to sign in and which
    code to give; the refresh token once they did. Raises OAuthRefused."""
    try:
        import msal
    except ImportError as exc:
        raise OAuthRefused("pbem oauth microsoft needs msal: pip install 'pbem[oauth]'") \
            from exc
    app: Any = msal.PublicClientApplication(
        client_id, authority=MICROSOFT_AUTHORITY.format(tenant=tenant or "common"))
    flow = app.initiate_device_flow(scopes=list(MICROSOFT_SCOPES))
    if "user_code" not in flow:
        raise OAuthRefused(f"Microsoft refused to start the sign-in: {flow.get('error')}: "
                           f"{flow.get('error_description', '')}")
    say(str(flow["message"]))
    result = app.acquire_token_by_device_flow(flow)
    if "refresh_token" not in result:
        raise OAuthRefused(f"no refresh token from Microsoft: {result.get('error')}: "
                           f"{result.get('error_description', '')}")
    return str(result["refresh_token"])


def google_consent(client_id: str, client_secret: str, port: int,
                   say: Callable[[str], object]) -> str:
    """The installed-app flow (google-auth-oauthlib): ``say`` gives the address to open;
    Google sends the browser back to http://localhost:``port`` (from another machine:
    ssh -L port:localhost:port first). The refresh token. Raises OAuthRefused."""
    try:
        from google_auth_oauthlib.flow import InstalledAppFlow
    except ImportError as exc:
        raise OAuthRefused("pbem oauth google needs google-auth-oauthlib: pip install "
                           "'pbem[oauth]'") from exc
    flow = InstalledAppFlow.from_client_config(
        {"installed": {"client_id": client_id, "client_secret": client_secret,
                       "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                       "token_uri": GOOGLE_TOKEN_URI, "redirect_uris": ["http://localhost"]}},
        scopes=list(GOOGLE_SCOPES))
    credentials = flow.run_local_server(
        port=port, open_browser=False, access_type="offline", prompt="consent",
        authorization_prompt_message="Open this address in a browser and allow pbem to "
        "use the mailbox:\n{url}")
    if not credentials.refresh_token:
        raise OAuthRefused("no refresh token from Google (was the consent given?)")
    say("Google gave pbem a refresh token.")
    return str(credentials.refresh_token)
