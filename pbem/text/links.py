"""Players' private web links: signed, bound to one seat of one game, expiring, revoked
when the seat changes hands.

A private page lives at ``<base_url>/p/<token>`` with the token
``<game id>.<seat>.<player id>.<expires>.<mac>``: ``expires`` is a Unix time (UTC,
whole seconds) and ``mac`` the first 16 bytes of HMAC-SHA256 of the server's
``[web] secret`` over those four numbers and the player's key generation (their
``key_hash``), in base64url without padding.

- Another seat, game or player, or a later expiry, makes a different MAC: a link
  cannot be bent to show someone else's dice.
- ``REPLACE`` gives the seat a new player (a new row, or the old row with a new key):
  every earlier link of the seat stops working, whoever holds it.
- A new secret revokes every link at once.

The token is as good as a key to read a player's dice: it never goes into a log
or a public page (the web app logs ``/p/[private]`` instead).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pbem.text.errors import PbemError

TOKEN_PATTERN = re.compile(r"^(\d{1,12})\.(\d{1,3})\.(\d{1,12})\.(\d{1,12})\.([A-Za-z0-9_-]{22})$")
MAC_BYTES = 16
PRIVATE_PREFIX = "/p/"


class LinkError(PbemError):
    """A private link that does not work; the message says why, politely."""


@dataclass(frozen=True)
class LinkClaim:
    """What a token says about itself; believe it only once ``mac_matches``."""

    game_id: int
    seat: int
    player_id: int
    expires: int                      # Unix seconds
    mac: str

    @property
    def expires_at(self) -> datetime:
        return datetime.fromtimestamp(self.expires, UTC)


def _mac(secret: str, game_id: int, seat: int, player_id: int, generation: str,
         expires: int) -> str:
    if not secret:
        raise ValueError("no [web] secret: private links are off")
    message = f"pbem-web-private/1\n{game_id}\n{seat}\n{player_id}\n{generation}\n{expires}"
    digest = hmac.new(secret.encode(), message.encode(), hashlib.sha256).digest()[:MAC_BYTES]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_token(secret: str, *, game_id: int, seat: int, player_id: int, generation: str,
               expires: datetime) -> str:
    stamp = int(expires.timestamp())
    mac = _mac(secret, game_id, seat, player_id, generation, stamp)
    return f"{game_id}.{seat}.{player_id}.{stamp}.{mac}"


def read_token(token: str) -> LinkClaim:
    """The claim of a well-formed token; raises LinkError for anything else."""
    match = TOKEN_PATTERN.match(token)
    if match is None:
        raise LinkError("this is not a private link of this server")
    game_id, seat, player_id, expires = (int(match.group(i)) for i in range(1, 5))
    return LinkClaim(game_id, seat, player_id, expires, match.group(5))


def mac_matches(secret: str, claim: LinkClaim, generation: str) -> bool:
    """Constant time: was this claim signed by this server for this key generation?"""
    if not secret:
        return False
    want = _mac(secret, claim.game_id, claim.seat, claim.player_id, generation, claim.expires)
    return hmac.compare_digest(want.encode(), claim.mac.encode())


def expired(claim: LinkClaim, now: datetime) -> bool:
    return now.timestamp() >= claim.expires


def private_link(base_url: str, secret: str, days: float, *, game_id: int, seat: int,
                 player_id: int, generation: str, now: datetime) -> str | None:
    """The link a report carries, valid ``days`` from now; None when the web pages are
    not set up (no base URL or no secret)."""
    if not base_url or not secret:
        return None
    token = make_token(secret, game_id=game_id, seat=seat, player_id=player_id,
                       generation=generation, expires=now + timedelta(days=days))
    return base_url.rstrip("/") + PRIVATE_PREFIX + token


def key_generation(key_hash: str, key: str) -> str:
    """What a link is bound to besides the seat: the player's key digest (rows made before
    key digests were kept have only the key)."""
    return key_hash or hashlib.sha256(key.strip().encode()).hexdigest()


_TOKEN_LIKE = re.compile(r"\d+\.\d+\.\d+\.\d+\.[A-Za-z0-9_-]+")


def redact(path: str, limit: int = 200) -> str:
    """A request path as it may be logged: a private link's token never is, even in an
    odd path; long paths are cut."""
    for prefix in (PRIVATE_PREFIX, "/api" + PRIVATE_PREFIX):
        if path.startswith(prefix):
            return prefix + "[private]"
    path = _TOKEN_LIKE.sub("[private]", path)
    return path if len(path) <= limit else path[:limit] + "..."
