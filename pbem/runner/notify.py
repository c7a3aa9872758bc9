"""Telling systemd how `pbem serve` is (sd_notify): ready, alive, what it does.

A unit of ``Type=notify`` hands the service a datagram socket in ``NOTIFY_SOCKET``;
each datagram holds lines like ``READY=1``, ``WATCHDOG=1``, ``STATUS=...`` or
``STOPPING=1`` (sd_notify(3)). With ``WatchdogSec=`` systemd also sets
``WATCHDOG_USEC`` (and ``WATCHDOG_PID``): a service that sends no ``WATCHDOG=1`` for
that long is restarted. Written to the socket directly: no library for twenty lines.
Without ``NOTIFY_SOCKET`` (not under systemd) every call does nothing.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

NOTIFY_SOCKET = "NOTIFY_SOCKET"


def notify(*lines: str, env: Mapping[str, str] | None = None) -> bool:
    """Send ``lines`` (``"READY=1"``, ``"STATUS=..."``) to systemd in one datagram; True
    if it went, False without a socket or when it could not be sent (never raises: a
    notice must not stop the server)."""
    address = (os.environ if env is None else env).get(NOTIFY_SOCKET, "")
    if not address or not lines:
        return False
    if address.startswith("@"):   # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall("\n".join(lines).encode("utf-8", "replace"))
    except OSError:
        return False
    return True


def watchdog_seconds(env: Mapping[str, str] | None = None) -> float | None:
    """The watchdog's time (WatchdogSec) if systemd watches this process, else None."""
    env = os.environ if env is None else env
    usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 1_000_000
