"""A tiny authoritative DNS server on a loopback UDP port, for the listener's own SPF,
DKIM and DMARC checks: answers from a table, built with dnspython's message API.

    with DnsFixture({("example.org", "TXT"): ["v=spf1 ip4:127.0.0.2 -all"]}) as dns:
        ...   # [listen] dns_servers = [dns.server]  ("127.0.0.1:PORT")

A name it does not know is NXDOMAIN; a known name without the asked type, NOERROR with
no answer. Plain module (no pytest import), like testkit/mailstack.py.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping, Sequence

import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from testkit.net import LOOPBACK


def txt(value: str) -> str:
    """A TXT record's text in zone-file form: 255-byte strings, quoted."""
    parts = [value[i:i + 255] for i in range(0, len(value), 255)] or [""]
    return " ".join('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in parts)


class DnsFixture:
    def __init__(self, records: Mapping[tuple[str, str], Sequence[str]]) -> None:
        self.records = {(n.lower().rstrip("."), t.upper()): list(v) for (n, t), v in
                        records.items()}
        self.queries: list[tuple[str, str]] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((LOOPBACK, 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="dns-fixture", daemon=True)

    @property
    def server(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def __enter__(self) -> DnsFixture:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            try:
                query = dns.message.from_wire(data)
            except Exception:   # noqa: BLE001 - junk on the port: no answer
                continue
            self._sock.sendto(self._answer(query).to_wire(max_size=4096), peer)

    def _answer(self, query: dns.message.Message) -> dns.message.Message:
        reply = dns.message.make_response(query)
        reply.flags |= dns.flags.AA
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        qtype = dns.rdatatype.to_text(question.rdtype)
        self.queries.append((name, qtype))
        values = self.records.get((name, qtype))
        if values:
            reply.answer.append(dns.rrset.from_text_list(
                question.name, 300, dns.rdataclass.IN, question.rdtype,
                [txt(v) if qtype == "TXT" else v for v in values]))
        elif not any(known == name for known, _ in self.records):
            reply.set_rcode(dns.rcode.NXDOMAIN)
        return reply
