"""Whom the listener takes mail for: the server's own addresses and nothing else.

A listener that says 250 to any RCPT TO is listed as an open relay by every scanner,
even though pbem forwards nothing. So only the configured addresses, and the VERP
return paths pbem sends its mail with (``local+b.<token>@domain``, pbem.mail.bounces),
are taken, and ``postmaster`` of our domains, which RFC 5321 (4.5.1) says every
mail server must accept (its mail is read like any stranger's); every other address of our domains is unknown (550 5.1.1), and an address
elsewhere, or one of the old relay tricks (``%`` hack, ``!`` bang path, ``@a:b@c``
source route, a quoted local part carrying an ``@``), is a relay attempt (550 5.7.1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pbem.mail.bounces import VERP_TAG

__all__ = ["RELAY_DENIED", "UNKNOWN_USER", "Recipients"]

UNKNOWN_USER = "550 5.1.1 No such user here"
RELAY_DENIED = "550 5.7.1 Relaying denied: this server takes mail only for its own address"
_TOKEN = re.compile(r"[a-z0-9]{1,64}")


@dataclass(frozen=True)
class Recipients:
    addresses: frozenset[str]

    @classmethod
    def of(cls, addresses: Iterable[str]) -> Recipients:
        return cls(frozenset(a.strip().lower().rstrip(".") for a in addresses if a.strip()))

    @property
    def domains(self) -> frozenset[str]:
        return frozenset(a.rpartition("@")[2] for a in self.addresses)

    def refusal(self, address: str) -> str | None:
        """None when the address is ours, else the SMTP reply that refuses it."""
        wanted = address.strip().strip("<>").lower().rstrip(".")
        if wanted in self.addresses or self._verp(wanted):
            return None
        local, at, domain = wanted.rpartition("@")
        if wanted == "postmaster" or (local == "postmaster" and domain in self.domains):
            return None
        if (not at or not local or any(c in local for c in '%!@:"\\')
                or wanted.startswith("@") or domain not in self.domains):
            return RELAY_DENIED
        return UNKNOWN_USER

    def _verp(self, address: str) -> bool:
        local, _, domain = address.rpartition("@")
        base, plus, detail = local.partition("+")
        tag, dot, token = detail.partition(".")
        return (bool(plus) and tag == VERP_TAG and bool(dot) and bool(_TOKEN.fullmatch(token))
                and f"{base}@{domain}" in self.addresses)
