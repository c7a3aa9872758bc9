"""DKIM signatures (RFC 6376) on every outgoing mail, made with dkimpy.

The signature is added to the final bytes at the moment they leave (SMTP or
the .eml folder alike): a ``SigningSender`` wraps the sender, so whatever
builds the mail, and however it is queued, what goes out is signed.

Signed headers are the ones relays leave alone (From, To, Subject, Date,
Message-ID, the thread headers, MIME-Version, Content-Type, Auto-Submitted),
with relaxed/relaxed canonicalization, which survives re-folded headers and
trailing white space. From is signed twice ("oversigned") so nobody can add a
second From below the signature. Keys are RSA (2048 bits from ``pbem dkim
keygen``): every receiver verifies RSA, not all verify Ed25519 yet.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import sys
from dataclasses import dataclass
from email import policy
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

from pbem.mail.smtp_out import SendResult
from pbem.text.errors import PbemError

log = logging.getLogger(__name__)

#: The headers signed when the mail has them (lower case, in this order).
SIGNED_HEADERS = ("from", "to", "subject", "date", "message-id", "in-reply-to", "references",
                  "mime-version", "content-type", "auto-submitted")
CANONICALIZATION = (b"relaxed", b"relaxed")
KEY_BITS = 2048
_SELECTOR = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
_DOMAIN = _SELECTOR   # the same label syntax


class DkimError(PbemError, ValueError):
    """A key or a DKIM setting that cannot be used."""


def _crlf(raw: bytes) -> bytes:
    return re.sub(rb"(?<!\r)\n", b"\r\n", raw)


def _check_name(what: str, value: str, pattern: re.Pattern[str]) -> str:
    value = value.strip().rstrip(".")
    if not value or len(value) > 253 or not pattern.fullmatch(value):
        raise DkimError(f"not a valid DKIM {what}: {value!r}")
    return value.lower()


@dataclass(frozen=True)
class DkimSigner:
    selector: str
    domain: str
    private_pem: bytes

    def __post_init__(self) -> None:
        object.__setattr__(self, "selector", _check_name("selector", self.selector, _SELECTOR))
        object.__setattr__(self, "domain", _check_name("domain", self.domain, _DOMAIN))
        # dkimpy takes about 0.25 s to import (it loads its DNS resolvers): only a server
        # that signs pays for it, when it makes its signer
        from dkim.crypto import (  # type: ignore[import-untyped]
            UnparsableKeyError,
            parse_pem_private_key,
        )
        try:
            key = parse_pem_private_key(self.private_pem)
        except (UnparsableKeyError, ValueError, IndexError) as exc:
            raise DkimError(f"the DKIM private key is not an RSA key in PEM form: {exc}") from exc
        bits = int(key["modulus"]).bit_length()
        if bits < 1024:   # receivers ignore shorter keys (RFC 8301)
            raise DkimError(f"the DKIM key has {bits} bits; use at least 1024 (2048 is usual)")

    def sign(self, raw: bytes) -> bytes:
        """``raw`` with a DKIM-Signature header on top (raises DkimError if it cannot be)."""
        raw = _crlf(raw)
        present = _header_names(raw)
        include = [h for h in SIGNED_HEADERS if h in present]
        if "from" not in include:
            raise DkimError("a mail without From cannot be signed")
        include.append("from")   # oversign From: a second From added later breaks it
        import dkim  # type: ignore[import-untyped]  # heavy (0.25 s): see __post_init__
        try:
            header = dkim.sign(raw, self.selector.encode(), self.domain.encode(),
                               self.private_pem, canonicalize=CANONICALIZATION,
                               include_headers=[h.encode() for h in include])
        except dkim.DKIMException as exc:
            raise DkimError(f"could not sign the mail: {exc}") from exc
        return _crlf(header) + raw

    @property
    def dns_name(self) -> str:
        return f"{self.selector}._domainkey.{self.domain}"


def _header_names(raw: bytes) -> set[str]:
    head = raw.split(b"\r\n\r\n", 1)[0]
    parsed = BytesHeaderParser(policy=policy.compat32).parsebytes(head + b"\r\n\r\n")
    return {k.lower() for k in parsed}


# --------------------------------------------------------------------------- keys and DNS


def generate_key(bits: int = KEY_BITS) -> bytes:
    """A new RSA private key, PEM (PKCS#1, which every DKIM signer reads)."""
    # cryptography (0.05 s to import) only for `pbem dkim keygen` and the DNS record
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def public_key_b64(private_pem: bytes) -> str:
    """The public half as base64 DER SubjectPublicKeyInfo: the p= of the DNS record."""
    from cryptography.hazmat.primitives import serialization  # heavy: see generate_key
    try:
        key = serialization.load_pem_private_key(private_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise DkimError(f"the DKIM private key cannot be read: {exc}") from exc
    der = key.public_key().public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(der).decode("ascii")


def txt_value(public_b64: str) -> str:
    return f"v=DKIM1; k=rsa; p={public_b64}"


def zone_line(selector: str, domain: str, value: str) -> str:
    """The TXT record as a zone file line, the value cut in strings of at most 255 bytes."""
    chunks = [value[i:i + 255] for i in range(0, len(value), 255)]
    quoted = " ".join(f'"{c}"' for c in chunks)
    return f"{selector}._domainkey.{domain}. IN TXT ( {quoted} )"


def keygen_command(selector: str, domain: str, out: str | None, *, bits: int = KEY_BITS) -> int:
    """``pbem dkim keygen``: write a new key (mode 0600, never over a file) and print
    the DNS TXT record and the [dkim] settings."""
    try:
        selector = _check_name("selector", selector, _SELECTOR)
        domain = _check_name("domain", domain, _DOMAIN)
    except DkimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    path = Path(out) if out else Path(f"dkim-{selector}.{domain}.pem")
    pem = generate_key(bits)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        print(f"error: {path} exists; choose another --out (a key is never overwritten)",
              file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    value = txt_value(public_key_b64(pem))
    print(f"Wrote the private key ({bits} bits) to {path}; keep it secret.\n")
    print("Publish this DNS TXT record:\n")
    print(f"  {zone_line(selector, domain, value)}\n")
    print("(name " + f"{selector}._domainkey.{domain}" + f", value {value})\n")
    print("Then add to pbem.toml (or set PBEM_DKIM_PRIVATE_KEY_FILE):\n")
    print(f'  [dkim]\n  selector = "{selector}"\n  domain = "{domain}"\n'
          f'  private_key_file = "{path.resolve()}"')
    return 0


# --------------------------------------------------------------------------- settings


def load_signer(selector: str, domain: str, *, private_key: str = "",
                private_key_file: str = "") -> DkimSigner:
    """The signer of [dkim]: the key's PEM text, else the file; DkimError says what is wrong."""
    if private_key:
        pem = private_key.encode()
    else:
        try:
            pem = Path(private_key_file).read_bytes()
        except OSError as exc:
            raise DkimError(f"cannot read private_key_file {private_key_file}: "
                            f"{exc.strerror or exc}") from exc
    return DkimSigner(selector, domain, pem)


# --------------------------------------------------------------------------- the sender


class _Sender(Protocol):
    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> Any: ...


S = TypeVar("S", bound=_Sender)


class SigningSender:
    """A sender that signs each mail, then hands it to ``inner`` (SMTP or .eml)."""

    def __init__(self, inner: _Sender, signer: DkimSigner) -> None:
        self.inner = inner
        self.signer = signer

    def __repr__(self) -> str:
        return f"SigningSender({self.inner!r}, {self.signer.dns_name})"

    def __enter__(self) -> Self:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.__exit__(*exc)

    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
        try:
            signed = self.signer.sign(raw)
        except DkimError:
            # an unsigned mail may still arrive; a lost one never does
            log.exception("mail not signed; sent unsigned")
            signed = raw
        return self.inner.send(mail_from, rcpts, signed)


def with_signature(sender: S, signer: DkimSigner | None) -> S | SigningSender:
    """``sender`` itself without a signer, else wrapped so that every mail is signed."""
    return sender if signer is None else SigningSender(sender, signer)
