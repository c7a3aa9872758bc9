"""Ports and logs of the real servers the tests start on loopback (testkit/mailstack.py's
Dovecot, testkit/pgstack.py's PostgreSQL, `pbem serve`): free ports, is a port open,
waiting for ports to close, and what a log says since an offset.

Plain module (no pytest import), like testkit/mailstack.py and testkit/pgstack.py.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_ports(n: int, host: str = LOOPBACK) -> list[int]:
    """n distinct ports that were free a moment ago (the kernel picks them).

    All sockets are held open until every port is chosen, so the n ports differ.
    Another process may still take one before we bind it: callers retry on a clash.
    """
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_open(port: int, host: str = LOOPBACK) -> bool:
    """Does something accept connections on host:port?"""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_closed(*ports: int, seconds: float, host: str = LOOPBACK) -> None:
    """Wait (at most seconds) until none of ports accepts connections any more."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(port_open(port, host) for port in ports):
        time.sleep(0.02)


def log_size(log: Path) -> int:
    """The log's size in bytes; 0 when there is none yet."""
    try:
        return log.stat().st_size
    except FileNotFoundError:
        return 0


def log_since(log: Path, offset: int) -> str:
    """What the log says after its first offset bytes; "" when there is none."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""
