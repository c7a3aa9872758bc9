"""`pbem serve` as a real process that takes mail on its own SMTP listener: its
config, starting it, and connecting to its listener once it listens.

    port = free_ports(1)[0]
    config = listen_config(tmp_path / "pbem.toml", port, outbox_dir="out")
    with serving(config, port) as (proc, smtp):
        ...   # smtp: a connection to the listener; proc: stdout and stderr in proc.stdout

Plain module (no pytest import), like testkit/mailstack.py.
"""

from __future__ import annotations

import resource
import smtplib
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testkit.net import LOOPBACK


def listen_config(path: Path, port: int, *, database: str = "sqlite:///pbem.db",
                  referee_key: str = "k", outbox_dir: str | None = None,
                  listen: str = "") -> Path:
    """A pbem.toml at path for a server of bluff@example.org that listens on port
    (no IMAP, no SMTP out: with outbox_dir, its mail goes there as files); listen: more
    lines of its [listen] section."""
    outbox = f'outbox_dir = "{outbox_dir}"\n' if outbox_dir is not None else ""
    path.write_text(f"""
[server]
database = "{database}"
address = "bluff@example.org"
referee = "referee@example.org"
referee_key = "{referee_key}"
{outbox}[listen]
host = "{LOOPBACK}"
port = {port}
{listen}
""")
    return path


def connect_smtp(port: int, *, seconds: float, timeout: float = 5,
                 proc: subprocess.Popen[str] | None = None) -> smtplib.SMTP:
    """A connection to the SMTP listener on port, as soon as it listens (at most seconds);
    proc, when given, must stay alive meanwhile."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return smtplib.SMTP(LOOPBACK, port, timeout=timeout)
        except OSError:
            if proc is not None:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "the listener did not start listening"
            time.sleep(0.05)


@contextmanager
def serving(config: Path, port: int, *,
            module: str = "pbem.cli") -> Iterator[tuple[subprocess.Popen[str], smtplib.SMTP]]:
    """`python -m module serve -c config`, once its listener on port takes connections:
    the process (its output in proc.stdout) and a connection to the listener. A process
    still running at the end is killed."""
    proc = subprocess.Popen([sys.executable, "-m", module, "serve", "-c", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc, connect_smtp(port, seconds=30, proc=proc)
    finally:
        if proc.poll() is None:
            proc.kill()


@contextmanager
def spawned(config: Path, port: int, log: Path, *,
            open_files: int | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """`pbem serve -c config` with its output in the file log (a log storm cannot block it
    on a full pipe), once its listener on port takes connections; open_files: its limit
    of open files (RLIMIT_NOFILE, as a systemd unit's LimitNOFILE sets it). Killed at
    the end."""
    def limit() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c", str(config)],
                                stdout=out, stderr=subprocess.STDOUT, preexec_fn=limit)
    try:
        connect_smtp(port, seconds=30, proc=None).quit()
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def rss_mb(pid: int) -> float:
    """The resident memory of process pid, in MB (VmRSS of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise LookupError(f"no VmRSS for process {pid}")
