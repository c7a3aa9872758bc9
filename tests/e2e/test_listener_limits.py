"""Items 4-5 of "Forged senders and an exposed listener": `pbem serve` as a real process,
attacked over real SMTP on loopback the way a stranger on the internet would, its
memory measured from /proc. Each test failed on the listener before these limits."""

from __future__ import annotations

import smtplib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.net import free_ports
from testkit.serve import listen_config, rss_mb, spawned

OURS = "bluff@example.org"
REFEREE = "referee@example.org"


def mail(sender: str, size: int = 0, subject: str = "hello") -> bytes:
    body = b"".join(b"x" * 70 + b"\r\n" for _ in range(size // 72))
    return (f"From: {sender}\r\nTo: {OURS}\r\nSubject: {subject}\r\n"
            f"Message-ID: <{time.monotonic_ns()}@test>\r\n\r\n").encode() + body + b"hi\r\n"


def open_data(port: int, source: str = "127.0.0.1") -> socket.socket:
    """A raw connection that is inside DATA (each reply read before the next command)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    reader = s.makefile("rb")
    for command in (None, b"EHLO x\r\n", f"MAIL FROM:<{REFEREE}>\r\n".encode(),
                    f"RCPT TO:<{OURS}>\r\n".encode(), b"DATA\r\n"):
        if command:
            s.sendall(command)
        while (line := reader.readline())[3:4] == b"-":
            pass
        assert line[:1] in (b"2", b"3"), (command, line)
    return s


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    def start(listen: str = "", open_files: int | None = None):
        port = free_ports(1)[0]
        config = listen_config(tmp_path / "pbem.toml", port, outbox_dir="out", listen=listen)
        return port, spawned(config, port, tmp_path / "pbem.log", open_files=open_files)
    yield start


def test_an_endless_data_line_costs_no_memory(serve) -> None:
    port, running = serve()
    with running as proc:
        before = rss_mb(proc.pid)
        s = open_data(port)
        chunk = b"y" * 1_000_000
        try:
            for _ in range(60):                      # 60 MB, no line end
                s.sendall(chunk)
        except OSError:
            pass                                     # refused and closed past 20 MB: fine
        reply = s.recv(200)
        grown = rss_mb(proc.pid) - before
        s.close()
    assert reply.startswith((b"500", b"552")), reply
    assert grown < 25, f"RSS grew {grown:.0f} MB"


def test_unfinished_datas_hold_no_memory(serve) -> None:
    port, running = serve()
    with running as proc:
        before = rss_mb(proc.pid)
        clients = [open_data(port, f"127.0.1.{i}") for i in range(1, 31)]
        for s in clients:                            # 3 MB each, never finished
            s.sendall((b"z" * 998 + b"\r\n") * 3000)
        time.sleep(2)                                # the listener has read it all
        grown = rss_mb(proc.pid) - before
        for s in clients:
            s.close()
    assert grown < 30, f"RSS grew {grown:.0f} MB with 30 unfinished 3 MB mails"


def test_idle_connections_beyond_the_cap_leave_a_player_served(serve, tmp_path) -> None:
    port, running = serve(open_files=1024)           # the old unit's limit
    with running:
        idle = []
        for _ in range(1103):                        # one stranger's idle connections
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10,
                                                 source_address=("127.0.0.2", 0)))
        refused = sum(s.recv(100).startswith(b"421") for s in idle)
        start = time.monotonic()
        with smtplib.SMTP("127.0.0.1", port, timeout=20) as player:
            greeted = time.monotonic() - start
            player.sendmail(REFEREE, [OURS], mail(REFEREE))
        for s in idle:
            s.close()
    assert refused >= 1103 - 10                     # [listen] max_connections_per_ip
    assert greeted < 2
    assert (tmp_path / "pbem.log").stat().st_size < 100_000    # no log storm


def test_junk_from_strangers_stops_at_its_quota(serve) -> None:
    port, running = serve("junk_bytes_per_day = 3_000_000")
    with running:
        answers = []
        with smtplib.SMTP("127.0.0.1", port, timeout=20) as c:
            for _ in range(6):                       # 6 x 0.9 MB from a stranger
                try:
                    c.sendmail("junk@evil.test", [OURS], mail("junk@evil.test", 900_000))
                    answers.append(250)
                except smtplib.SMTPDataError as refused:
                    answers.append(refused.smtp_code)
            c.sendmail(REFEREE, [OURS], mail(REFEREE, 900_000))   # known: not junk
    assert answers == [250, 250, 250, 452, 452, 452]


def test_a_cap_above_the_open_files_limit_is_lowered_not_run_into(serve, tmp_path) -> None:
    port, running = serve("max_connections = 2000\nmax_connections_per_ip = 2000",
                          open_files=400)
    with running:
        flood = [socket.create_connection(("127.0.0.1", port), timeout=10)
                 for _ in range(1000)]
        answers = [s.recv(100)[:3] for s in flood]
        for s in flood:
            s.close()
    log = (tmp_path / "pbem.log").read_text()
    assert "at most 144 connections at once" in log
    assert "Too many open files" not in log
    assert answers.count(b"220") == 144 and answers.count(b"421") == 1000 - 144
