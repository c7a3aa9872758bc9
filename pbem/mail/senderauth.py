"""Is a mail really from the domain in its From? What our own mail server says about it.

The receiving mail server checks SPF, DKIM and DMARC and writes what it found
into an ``Authentication-Results`` header (RFC 8601) on top of the mail; for mail
that reaches pbem's own listener directly, pbem is that server
(pbem.mail.arrival_auth strips the headers the mail came with and writes its own). Only
that header counts: anyone can write an Authentication-Results header into a
mail they send, with any authserv-id, ours included. So only the *topmost*
block of Authentication-Results headers carrying the configured authserv-id
is read (the headers a mail server adds stand together at the top; what a
sender wrote sits below the mail server's own Received header), and within
it, for each method, the topmost result.

The mail is *aligned* when DMARC passed, or (no DMARC verdict) when SPF
passed for an envelope domain, or DKIM for a signing domain, aligned with the
From domain (RFC 7489 relaxed alignment, approximated without the public
suffix list: the same domain, or one a subdomain of the other). Parsing is
the ``authres`` package's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import authres  # type: ignore[import-untyped]

from pbem.mail.headers import HeaderBlock, as_text

__all__ = ["Verdict", "aligned_domain", "check_sender", "trusted_results"]

HEADER = "authentication-results"
# headers a mail server's filters may write between two of its Authentication-Results
_FILTER_HEADERS = re.compile(r"arc-.*|received-spf|x-spam.*|x-virus.*|dkim-filter|"
                             r"x-dkim.*|x-dmarc.*|x-rspamd.*", re.IGNORECASE)
_COMMENT = re.compile(r"\([^()]*\)")


@dataclass(frozen=True)
class Result:
    method: str        # spf | dkim | dmarc | ...
    result: str        # pass | fail | softfail | none | ...
    properties: dict[str, str]   # "smtp.mailfrom" -> value, "header.d" -> value, ...


@dataclass(frozen=True)
class Verdict:
    """aligned: True / False, or None when our mail server said nothing about the mail."""

    aligned: bool | None
    reason: str


def aligned_domain(from_domain: str, other: str) -> bool:
    """Relaxed alignment, approximated: the same domain or one a subdomain of the other."""
    a, b = from_domain.lower().strip().rstrip("."), other.lower().strip().rstrip(".")
    if not a or not b:
        return False
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def authserv_id(value: str) -> str:
    """The authserv-id of an Authentication-Results value (comments and version dropped)."""
    text = " ".join(value.split())
    for _ in range(5):   # nested comments, a few levels
        text = _COMMENT.sub(" ", text)
    first = text.split(";", 1)[0].split()
    return first[0].strip('"').lower() if first else ""


def _header_items(head: HeaderBlock) -> list[tuple[str, str]]:
    """The mail's header fields in order, as text on one line each."""
    return [(f.name, " ".join(as_text(f.value).split())) for f in head.fields]


def trusted_results(headers: Sequence[tuple[str, str]], server_id: str) -> list[list[Result]]:
    """The results of each trusted Authentication-Results header, topmost first.

    The trusted block begins at the topmost header with ``server_id`` and ends at the
    first header that is neither one of ours nor a filter's (a Received, say).
    """
    wanted = server_id.strip().lower()
    if not wanted:
        return []
    block: list[list[Result]] = []
    started = False
    for name, value in headers:
        ours = name.lower() == HEADER and authserv_id(value) == wanted
        if not started:
            started = ours
        elif not ours and not _FILTER_HEADERS.fullmatch(name):
            break
        if ours:
            block.append(_parse(value))
    return block


def _parse(value: str) -> list[Result]:
    try:
        header = authres.AuthenticationResultsHeader.parse(f"Authentication-Results: {value}")
    except Exception:  # noqa: BLE001 - authres raises SyntaxError, ValueError, ... on junk
        return []
    results = []
    for r in header.results:
        method = str(getattr(r, "method", "") or "").lower()
        if not method:
            continue
        props = {f"{p.type}.{p.name}".lower(): str(p.value or "").strip().lower()
                 for p in getattr(r, "properties", [])}
        results.append(Result(method, str(r.result or "").lower(), props))
    return results


def _first(block: Iterable[list[Result]], method: str) -> list[Result]:
    """The results of ``method`` in the topmost header that has any."""
    for results in block:
        found = [r for r in results if r.method == method]
        if found:
            return found
    return []


def _domain_of(value: str) -> str:
    return value.rpartition("@")[2].strip().strip("<>").strip()


def check_sender(head: HeaderBlock, from_addr: str, server_id: str) -> Verdict:
    """Whether our mail server found the mail whose own header block is ``head`` (as
    pbem.mail.read read it, within the caps of pbem.mail.headers) aligned with the
    domain of ``from_addr``."""
    from_domain = _domain_of(from_addr)
    block = trusted_results(_header_items(head), server_id)
    if not block:
        return Verdict(None, f"the mail carries no Authentication-Results from {server_id}")
    dmarc = [r for r in _first(block, "dmarc")
             if aligned_domain(from_domain, r.properties.get("header.from", from_domain))]
    if dmarc:
        if dmarc[0].result == "pass":
            return Verdict(True, f"DMARC pass for {from_domain}")
        if dmarc[0].result in ("fail", "reject", "quarantine"):
            return Verdict(False, f"DMARC {dmarc[0].result} for {from_domain}")
    seen: list[str] = []
    for r in _first(block, "spf"):
        domain = _domain_of(r.properties.get("smtp.mailfrom", "")) or \
            _domain_of(r.properties.get("smtp.helo", ""))
        if r.result == "pass" and aligned_domain(from_domain, domain):
            return Verdict(True, f"SPF pass for {domain}")
        seen.append(f"SPF {r.result}" + (f" for {domain}" if domain else ""))
    for r in _first(block, "dkim"):
        domain = r.properties.get("header.d") or _domain_of(r.properties.get("header.i", ""))
        if r.result == "pass" and aligned_domain(from_domain, domain):
            return Verdict(True, f"DKIM pass for {domain}")
        seen.append(f"DKIM {r.result}" + (f" for {domain}" if domain else ""))
    if dmarc:
        seen.insert(0, f"DMARC {dmarc[0].result}")
    found = "; ".join(seen) if seen else "no SPF, DKIM or DMARC result"
    return Verdict(False, f"neither SPF nor DKIM passed for {from_domain} ({found})")
