"""The bounce corpus (tests/corpus/bounces/): real-shaped bounces as bytes, with the
names of the mail that bounced filled in by the test (@@MESSAGE_ID@@, @@RCPT@@ the
address that failed, @@SERVER@@ the address the bounce is sent to, @@FROM@@ the
server's address, @@DOMAIN@@ its domain)."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).parent / "corpus" / "bounces"

#: shape -> (what flufl.bounce reads it as, permanent?)
SHAPES = {
    "postfix_dsn": ("RFC 3464 DSN from Postfix, original attached (message/rfc822)", True),
    "exim_dsn": ("RFC 3464 DSN from Exim 4.96, original attached", True),
    "gmail": ("Gmail DSN, returned headers only (text/rfc822-headers), In-Reply-To", True),
    "qmail": ("qmail QSBMF, the original quoted in the text", True),
    "exchange_ndr": ("Exchange NDR ('did not reach the following recipient(s)')", True),
    "postfix_delayed": ("Postfix delay warning (Action: delayed)", False),
    "verp_only": ("DSN without the original: only the VERP return path names the mail", True),
}


def bounce_bytes(shape: str, *, message_id: str, rcpt: str, server: str,
                 from_addr: str | None = None) -> bytes:
    from_addr = from_addr or server
    text = (CORPUS / f"{shape}.eml").read_text(encoding="utf-8")
    for key, value in (("@@MESSAGE_ID@@", message_id), ("@@RCPT@@", rcpt),
                       ("@@SERVER@@", server), ("@@FROM@@", from_addr),
                       ("@@DOMAIN@@", from_addr.rpartition("@")[2])):
        text = text.replace(key, value)
    assert "@@" not in text.replace("@@@", "")
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8")
