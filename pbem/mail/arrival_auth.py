"""The listener's own sender checks: what a receiving mail server does before pbem sees a mail.

Mail that reaches the listener straight from the internet has passed no mail server
of ours, so any ``Authentication-Results`` header in it was written by its sender
(RFC 8601 section 5: a receiver must remove such headers). ``stamp`` removes every
one of them, checks SPF (pyspf), DKIM (dkimpy) and DMARC itself through the
``authheaders`` package, and puts its own header on top with ``[security]
authserv_id``: pbem.mail.senderauth then reads the mail as it reads one fetched from
a mailbox, so ``require_aligned`` means the same on both paths.
"""

from __future__ import annotations

import ipaddress
import logging
import re

import authheaders  # type: ignore[import-untyped]
import dkim  # type: ignore[import-untyped]
import spf  # type: ignore[import-untyped]
from authres import AuthenticationResultsHeader  # type: ignore[import-untyped]

from pbem.mail.dnsquery import DnsTrouble, Resolver

__all__ = ["authenticate", "stamp", "strip_results"]

log = logging.getLogger(__name__)

_HEADER_END = re.compile(rb"\r?\n\r?\n")
_RESULTS_FIELD = re.compile(rb"authentication-results[ \t]*:", re.IGNORECASE)
_MAX_HEADER = 256 * 1024   # a header block longer than this is body to us (pbem.mail.headers)


def strip_results(raw: bytes) -> bytes:
    """The mail without any Authentication-Results header field (continuation lines too)."""
    end = _HEADER_END.search(raw, 0, _MAX_HEADER)
    cut = end.start() if end else min(len(raw), _MAX_HEADER)
    head, rest = raw[:cut], raw[cut:]
    if not _RESULTS_FIELD.search(head):
        return raw
    kept: list[bytes] = []
    dropping = False
    for line in head.splitlines(keepends=True):
        if line[:1] not in (b" ", b"\t"):     # a field begins (else: its continuation)
            dropping = bool(_RESULTS_FIELD.match(line))
        if not dropping:
            kept.append(line)
    out = b"".join(kept).rstrip(b"\r\n")
    if not out:                                # the header held nothing else
        return rest.lstrip(b"\r\n") if end is None else rest[rest.index(b"\n") + 1:]
    return out + rest


class _Spf(spf.query):  # type: ignore[misc]
    """pyspf's check, its DNS through our resolver.

    An override kept on purpose (bench/house.py's KEPT_OVERRIDES): pyspf (2.0) takes no
    resolver; every look-up goes through ``query.dns``, which calls the module global
    ``spf.DNSLookup``. Replacing that global would change every check in the process;
    this subclass changes only the checks made here. authheaders' own SPF check calls
    pyspf's ``check2`` (no resolver either), and writing RFC 7208's check_host ourselves
    would trade one redefined method for a second SPF engine to keep right."""

    def __init__(self, resolver: Resolver, **kw: object) -> None:
        super().__init__(**kw)
        self._resolver = resolver

    def dns(self, name: str, qtype: str, cnames: object = None,
            ignore_void: bool = False) -> list[object]:
        name = str(name).rstrip(".").lower()
        if not name or not all(0 < len(label) < 64 for label in name.split(".")):
            return []
        key = (name, qtype)
        if key in self.cache:
            return list(self.cache[key])
        try:
            rdatas = self._resolver.records(name, qtype)
        except DnsTrouble as exc:
            raise spf.TempError(str(exc)) from exc
        result: list[object] = []
        for r in rdatas:
            if qtype in ("A", "AAAA"):
                result.append(r.address)
            elif qtype == "MX":
                result.append((r.preference, r.exchange))
            elif qtype == "PTR":
                result.append(r.target.to_text(True))
            elif qtype in ("TXT", "SPF"):
                result.append(tuple(r.strings))
        if not result and not ignore_void:
            self.void_lookups += 1
            if self.void_lookups > spf.MAX_VOID_LOOKUPS:
                raise spf.PermError(f"Void lookup limit of {spf.MAX_VOID_LOOKUPS} exceeded")
        self.cache[key] = result
        return result


def _spf_result(resolver: Resolver, ip: str, mail_from: str, helo: str) -> object:
    try:
        ipaddress.ip_address(ip)
        result, _code, reason = _Spf(resolver, i=ip, s=mail_from, h=helo or "unknown",
                                     timeout=20).check()
    except ValueError:     # no IP address (a Unix socket): nothing to check
        result, reason = "none", "no client IP address"
    return authheaders.SPFAuthenticationResult(result=result, reason=reason,
                                                smtp_mailfrom=mail_from, smtp_helo=helo)


def authenticate(raw: bytes, *, authserv_id: str, ip: str, helo: str, mail_from: str,
                 resolver: Resolver) -> str:
    """The Authentication-Results value (no field name) of our SPF, DKIM and DMARC checks."""

    def txt_bytes(name: bytes | str, timeout: float = 5) -> bytes | None:
        try:
            records = resolver.txt(name.decode() if isinstance(name, bytes) else name)
        except DnsTrouble as exc:
            raise dkim.DnsTimeoutError(str(exc)) from exc
        return records[0] if records else None

    def txt_text(name: str, timeout: float = 5) -> str | None:
        records = resolver.txt(name)    # DnsTrouble: DMARC temperror below
        return records[0].decode("utf-8", "replace") if records else None

    spf_result = _spf_result(resolver, ip, mail_from, helo)
    dkim_result = authheaders.check_dkim(raw, dnsfunc=txt_bytes)
    try:
        dmarc_result = authheaders.check_dmarc(raw, spf_result, dkim_result, dnsfunc=txt_text)
        results = [spf_result, dkim_result, dmarc_result]
    except DnsTrouble:
        results = [spf_result, dkim_result,
                   authheaders.DMARCAuthenticationResult(result="temperror")]
    header = str(AuthenticationResultsHeader(authserv_id=authserv_id, results=results))
    return header.partition(":")[2].strip()


def stamp(raw: bytes, *, authserv_id: str, ip: str, helo: str, mail_from: str,
          resolver: Resolver | None) -> bytes:
    """The mail as pbem keeps it: foreign Authentication-Results gone, ours on top (when
    an authserv_id and a resolver are given). A check that fails outright (a bug in a
    library, a mail it cannot read) leaves the mail without results: not aligned."""
    clean = strip_results(raw)
    if not authserv_id or resolver is None:
        return clean
    try:
        value = authenticate(clean, authserv_id=authserv_id, ip=ip, helo=helo,
                             mail_from=mail_from, resolver=resolver)
    except Exception:   # noqa: BLE001 - the checks read hostile bytes; no verdict then
        log.warning("checking SPF/DKIM/DMARC of a mail from %r failed", mail_from,
                    exc_info=True)
        return clean
    value = " ".join(value.split())
    return b"Authentication-Results: " + value.encode("utf-8", "replace") + b"\r\n" + clean
