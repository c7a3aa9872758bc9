"""A private, real PostgreSQL cluster on loopback for tests, like testkit/mailstack.py
for Dovecot: ``initdb`` into a fresh temp dir (as ``nobody`` when run as root:
PostgreSQL refuses to run as root), ``postgres`` in the foreground on a free
port, stopped and removed at the end. Each test gets a database of its own.

Plain module (no pytest import) so scripts and benchmarks can use it too::

    cluster = PgCluster().start()
    url = cluster.new_database()      # postgresql+psycopg://postgres@127.0.0.1:PORT/pbem_1
    cluster.restart()                 # an outage: every connection is cut
    cluster.stop()

The binaries come from Debian's ``postgresql`` package (/usr/lib/postgresql/<v>/bin,
the newest version found) or from PATH. Durability is switched off (fsync,
synchronous_commit, full_page_writes): the tests kill processes, not the machine.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

from testkit.net import LOOPBACK, free_ports, log_since, log_size, port_open, wait_closed

SUPERUSER = "postgres"
_DEBIAN_ROOT = Path("/usr/lib/postgresql")


class PgStackError(RuntimeError):
    """The test cluster could not be started or used."""


class _PortClash(PgStackError):
    pass


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.name)) or (0,)


def find_bin_dir() -> Path | None:
    """The folder with initdb and postgres: Debian's newest, else the one on PATH."""
    if _DEBIAN_ROOT.is_dir():
        for version in sorted(_DEBIAN_ROOT.iterdir(), key=_version_key, reverse=True):
            if (version / "bin" / "initdb").exists() and (version / "bin" / "postgres").exists():
                return version / "bin"
    initdb = shutil.which("initdb")
    if initdb and (Path(initdb).parent / "postgres").exists():
        return Path(initdb).parent
    return None


def postgres_available() -> bool:
    """True when the server binaries and the psycopg driver are installed."""
    try:
        import psycopg  # noqa: F401  (the driver the tests' URLs name)
    except ImportError:
        return False
    return find_bin_dir() is not None


class PgCluster:
    """One private cluster: initdb'd on start(), removed on stop()."""

    def __init__(self) -> None:
        self.bin_dir: Path | None = None
        self.base_dir: Path | None = None
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._names = itertools.count(1)
        self._user: str | None = None   # the unprivileged owner when we run as root

    # ---- lifecycle ----------------------------------------------------------------

    def start(self) -> PgCluster:
        if self._proc is not None:
            return self
        self.bin_dir = find_bin_dir()
        if self.bin_dir is None:
            raise PgStackError("PostgreSQL (initdb, postgres) is not installed")
        self.base_dir = Path(tempfile.mkdtemp(prefix="pbem-pgstack-"))
        if os.geteuid() == 0:
            self._user = "nobody"
            uid = pwd.getpwnam(self._user).pw_uid
            gid = pwd.getpwnam(self._user).pw_gid
            os.chown(self.base_dir, uid, gid)
        try:
            self._initdb()
            self.start_server()
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Stop the server (waiting for it) and remove the cluster's folder."""
        self.stop_server()
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
        atexit.unregister(self.stop)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start_server(self, attempts: int = 5) -> None:
        """(Re)start postgres; keeps the previous port unless another process took it."""
        if self.running:
            return
        last: Exception | None = None
        for i in range(attempts):
            if i > 0 or not self.port:
                self.port = free_ports(1)[0]
            try:
                self._launch()
                return
            except _PortClash as exc:
                last = exc
        raise PgStackError(f"postgres could not bind a free port: {last}")

    def stop_server(self, timeout: float = 20.0) -> None:
        """A fast shutdown (SIGINT: open sessions are cut off), waited for."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        wait_closed(self.port, seconds=5)

    def server_pid(self) -> int:
        """The postmaster's pid (its children serve the connections)."""
        assert self._proc is not None, "the server is not running"
        return self._proc.pid

    def restart(self) -> None:
        """An outage and its end: every open connection is cut; the data stays."""
        self.stop_server()
        self.start_server()

    # ---- databases ------------------------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@{LOOPBACK}:{self.port}/{database}"

    def new_database(self, prefix: str = "pbem") -> str:
        """A fresh, empty database; returns its SQLAlchemy URL."""
        import psycopg  # tests without PostgreSQL must not need the driver
        name = f"{prefix}_{next(self._names)}"
        with psycopg.connect(host=LOOPBACK, port=self.port, user=SUPERUSER,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def listening(self, url: str, channel: str) -> bool:
        """Has a connection to the database of url run ``LISTEN channel`` as its last
        statement (pg_stat_activity)? Seen from outside, so a test can check that the
        process under test listens, not only that it says so."""
        import psycopg
        database = url.rsplit("/", 1)[1]
        with psycopg.connect(host=LOOPBACK, port=self.port, user=SUPERUSER,
                             dbname="postgres", autocommit=True) as conn:
            return conn.execute(
                "SELECT 1 FROM pg_stat_activity WHERE datname = %s AND query = %s",
                (database, f"LISTEN {channel}")).fetchone() is not None

    # ---- internals ------------------------------------------------------------------

    def _run_as_owner(self, args: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        extra: dict[str, object] = {}
        if self._user is not None:
            extra = {"user": self._user, "group": pwd.getpwnam(self._user).pw_gid,
                     "extra_groups": []}
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, cwd=self.base_dir,
                                **extra, **kwargs)  # type: ignore[call-overload]

    def _initdb(self) -> None:
        assert self.bin_dir is not None and self.base_dir is not None
        log = self.base_dir / "initdb.log"
        with open(log, "wb") as out:
            proc = self._run_as_owner(
                [str(self.bin_dir / "initdb"), "-D", str(self.base_dir / "data"),
                 "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8", "--no-locale",
                 "--no-sync"], stdout=out, stderr=subprocess.STDOUT)
            if proc.wait(120) != 0:
                raise PgStackError(f"initdb failed:\n{log.read_text(errors='replace')}")
        os.chmod(self.base_dir, 0o755)   # the tests read the server log

    def _launch(self) -> None:
        assert self.bin_dir is not None and self.base_dir is not None
        log = self.base_dir / "postgres.log"
        offset = log_size(log)
        with open(log, "ab") as out:
            if self._user is not None:
                os.chown(log, pwd.getpwnam(self._user).pw_uid, -1)
            proc = self._run_as_owner(
                [str(self.bin_dir / "postgres"), "-D", str(self.base_dir / "data"),
                 "-p", str(self.port), "-c", f"listen_addresses={LOOPBACK}",
                 "-c", f"unix_socket_directories={self.base_dir}",
                 "-c", "fsync=off", "-c", "synchronous_commit=off",
                 "-c", "full_page_writes=off", "-c", "max_connections=300",
                 "-c", "shared_buffers=32MB"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._proc = proc
        deadline = time.monotonic() + 30
        while True:
            text = log_since(log, offset)
            if proc.poll() is not None:
                self._proc = None
                if "Address already in use" in text:
                    raise _PortClash(text.strip().splitlines()[-1] if text.strip() else "")
                raise PgStackError(f"postgres exited with {proc.returncode}:\n{text}")
            if "ready to accept connections" in text and port_open(self.port):
                return
            if time.monotonic() > deadline:
                self.stop_server()
                raise PgStackError(f"postgres did not come up in time:\n{text}")
            time.sleep(0.02)
