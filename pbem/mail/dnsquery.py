"""DNS look-ups for the listener's own sender checks (SPF, DKIM, DMARC), through dnspython.

One resolver object carries its servers: the system's (/etc/resolv.conf) or those of
``[listen] dns_servers`` ("192.0.2.53", "127.0.0.1:5353"), so a test points pbem at its
own DNS fixture by configuration, never by patching a library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dns.exception
import dns.nameserver
import dns.resolver

__all__ = ["DnsTrouble", "Resolver"]


class DnsTrouble(Exception):
    """No answer could be had (timeout, no server answered): a temporary error."""


def _nameserver(spec: str) -> dns.nameserver.Nameserver:
    host, port = spec.strip(), 53
    if host.startswith("["):                       # [::1]:5353
        host, _, rest = host[1:].partition("]")
        port = int(rest.lstrip(":") or 53)
    elif host.count(":") == 1:                     # 127.0.0.1:5353 (a bare IPv6 has more)
        host, _, number = host.partition(":")
        port = int(number)
    return dns.nameserver.Do53Nameserver(host, port)


class Resolver:
    """TXT, A, AAAA, MX and PTR records of a name; [] when there are none."""

    def __init__(self, servers: Sequence[str] = (), timeout: float = 5.0) -> None:
        if servers:
            self._resolver = dns.resolver.Resolver(configure=False)
            self._resolver.nameservers = [_nameserver(s) for s in servers]
        else:
            self._resolver = dns.resolver.Resolver()
        self._resolver.lifetime = timeout
        self._resolver.timeout = min(timeout, 2.0)

    def records(self, name: str, qtype: str) -> list[Any]:
        try:
            answer = self._resolver.resolve(name, qtype, search=False,
                                            raise_on_no_answer=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return []
        except (dns.exception.Timeout, dns.resolver.NoNameservers,
                dns.resolver.NoResolverConfiguration) as exc:
            raise DnsTrouble(f"DNS {qtype} {name}: {exc}") from exc
        except dns.exception.DNSException:    # a malformed name, say: no record
            return []
        return list(answer.rrset or [])

    def txt(self, name: str) -> list[bytes]:
        """Each TXT record of the name, its strings joined."""
        return [b"".join(r.strings) for r in self.records(name, "TXT")]
