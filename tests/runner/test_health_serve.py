"""A real `pbem serve` watched from outside: `pbem web`'s /healthz turns failing when the
serve process is paused (SIGSTOP) and well again when it goes on (SIGCONT); systemd's
notify socket (a real unix datagram socket as NOTIFY_SOCKET) hears READY=1, STATUS= and
WATCHDOG=1 while the ticks make progress, and no WATCHDOG=1 while a tick hangs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from pbem.runner.notify import notify, watchdog_seconds
from testkit.mailstack import MailStack
from testkit.net import LOOPBACK, free_ports
from testkit.stack import stack_config
from testkit.web import WebProcess

ROOT = Path(__file__).resolve().parents[2]


def environment(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PBEM_") and k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC",
                                                      "WATCHDOG_PID", "JOURNAL_STREAM")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**env, **more}


@contextmanager
def serve(config: Path, log: Path, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c", str(config)],
                                stdout=out, stderr=subprocess.STDOUT, env=environment(**env))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def until(check: Callable[[], bool], seconds: float, what: str) -> float:
    """Wait until check() holds; the seconds it took."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s: {what}"
        time.sleep(0.2)
    return time.monotonic() - started


def test_healthz_fails_while_serve_is_paused_and_recovers_when_it_goes_on(
        mailstack: MailStack, tmp_path: Path) -> None:
    mailstack.clear("bluff")
    port = free_ports(1)[0]
    config = stack_config(tmp_path / "pbem.toml", mailstack, f"sqlite:///{tmp_path / 'pbem.db'}",
                          "health-key", server={"late_tick_seconds": 3},
                          imap={"poll_seconds": 0.5})
    config.write_text(config.read_text() + f"\n[web]\nport = {port}\n")
    with serve(config, tmp_path / "serve.log") as proc:
        until((tmp_path / "pbem.db").exists, 60, "serve makes its database")
        web = WebProcess(config, tmp_path / "web.log")
        healthz = f"{web.base}/healthz"

        def status() -> int:
            return httpx.get(healthz, timeout=10).status_code

        try:
            until(lambda: status() == 200, 60, "serve's first ticks make /healthz well")
            os.kill(proc.pid, signal.SIGSTOP)
            took = until(lambda: status() == 503, 30, "/healthz fails while serve is stopped")
            failing = httpx.get(healthz, timeout=10).json()
            assert failing["healthy"] is False
            assert failing["problems"][0].startswith("the last tick was "), failing
            os.kill(proc.pid, signal.SIGCONT)
            back = until(lambda: status() == 200, 30, "/healthz is well again after SIGCONT")
            assert proc.poll() is None
        finally:
            web.stop()
    print(f"failing {took:.1f} s after SIGSTOP, well {back:.1f} s after SIGCONT")


@contextmanager
def notify_socket(path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(0.5)
    try:
        yield sock
    finally:
        sock.close()


def ready(sock: socket.socket, proc: subprocess.Popen[bytes], log: Path) -> str:
    """The first notice: serve's start (imports, templates, the schema) may take a while
    on a busy machine."""
    end = time.monotonic() + 90
    while time.monotonic() < end:
        assert proc.poll() is None, log.read_text()
        try:
            return sock.recv(4096).decode()
        except TimeoutError:
            continue
    raise AssertionError(f"no notice from serve: {log.read_text()}")


def heard(sock: socket.socket, seconds: float) -> list[str]:
    """The notices that come within ``seconds``, one string a datagram."""
    got, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            got.append(sock.recv(4096).decode())
        except TimeoutError:
            continue
    return got


def listen_config(path: Path, database: Path, imap_port: int | None = None) -> Path:
    imap = (f'\n[imap]\nhost = "{LOOPBACK}"\nport = {imap_port}\nssl = false\n'
            'username = "u"\npassword = "p"\npoll_seconds = 0.5\nidle = false\n'
            if imap_port else "")
    path.write_text(f'[server]\ndatabase = "sqlite:///{database}"\naddress = "bluff@example.org"\n'
                    f'referee = "referee@example.org"\nreferee_key = "k"\n'
                    f'outbox_dir = "{database.parent / "out"}"\nlate_tick_seconds = 2\n{imap}',
                    encoding="utf-8")
    return path


def test_serve_tells_systemd_it_is_ready_and_alive(tmp_path: Path) -> None:
    config = listen_config(tmp_path / "pbem.toml", tmp_path / "pbem.db")
    # without [imap] serve ticks every 10 s: late_tick_seconds must exceed that
    config.write_text(config.read_text().replace("late_tick_seconds = 2", "late_tick_seconds = 30"))
    with notify_socket(tmp_path / "notify") as sock, \
            serve(config, tmp_path / "serve.log", NOTIFY_SOCKET=str(tmp_path / "notify"),
                  WATCHDOG_USEC="1000000") as proc:
        first = [ready(sock, proc, tmp_path / "serve.log"), *heard(sock, 8)]
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()
        assert first[0].splitlines()[0] == "READY=1", first
        pings = [n for n in first if "WATCHDOG=1" in n.splitlines()]
        # every half second (WATCHDOG_USEC / 2) for some 8 s, on a busy machine too
        assert len(pings) >= 5, first
        assert any(line.startswith("STATUS=serving; last tick: fetched 0")
                   for n in pings for line in n.splitlines()), pings
        proc.terminate()
        assert proc.wait(30) == 0
        assert any("STOPPING=1" in n.splitlines() for n in heard(sock, 1)), "no STOPPING=1"
        assert "SIGTERM: stopping once the mail in hand is done" in \
            (tmp_path / "serve.log").read_text()


def test_a_hung_tick_stops_the_watchdog_pings(tmp_path: Path) -> None:
    """An IMAP server that takes the connection and never says a word: the tick hangs in
    it (until the connection's timeout, 30 s), so serve stops telling systemd it is alive
    once late_tick_seconds (2 s) have passed without progress."""
    silent = socket.socket()
    silent.bind((LOOPBACK, 0))
    silent.listen(8)
    config = listen_config(tmp_path / "pbem.toml", tmp_path / "pbem.db",
                           imap_port=silent.getsockname()[1])
    try:
        with notify_socket(tmp_path / "notify") as sock, \
                serve(config, tmp_path / "serve.log", NOTIFY_SOCKET=str(tmp_path / "notify"),
                      WATCHDOG_USEC="1000000") as proc:
            notices = [ready(sock, proc, tmp_path / "serve.log"), *heard(sock, 10)]
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert notices[0].startswith("READY=1"), notices
            stalled = [i for i, n in enumerate(notices) if n.startswith("STATUS=stalled")]
            assert stalled, notices
            # from the stall on, no ping (the hung tick cannot end within these seconds)
            assert not any("WATCHDOG=1" in n.splitlines() for n in notices[stalled[0]:]), notices
            assert "the ticks have made no progress" in (tmp_path / "serve.log").read_text()
            proc.kill()   # a clean stop would wait for the hung tick
    finally:
        silent.close()


def test_notify_writes_one_datagram_to_the_socket_systemd_names(tmp_path: Path) -> None:
    with notify_socket(tmp_path / "notify") as sock:
        assert notify("READY=1", "STATUS=serving", env={"NOTIFY_SOCKET": str(tmp_path / "notify")})
        assert sock.recv(4096) == b"READY=1\nSTATUS=serving"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"pbem-test-{os.getpid()}"
    abstract.bind("\0" + name)
    abstract.settimeout(5)
    with abstract:
        assert notify("WATCHDOG=1", env={"NOTIFY_SOCKET": "@" + name})
        assert abstract.recv(4096) == b"WATCHDOG=1"
    # not under systemd, or the socket gone: nothing, and no error
    assert not notify("READY=1", env={})
    assert not notify("READY=1", env={"NOTIFY_SOCKET": str(tmp_path / "gone")})


def test_the_watchdog_is_ours_only_when_systemd_says_so() -> None:
    assert watchdog_seconds({"WATCHDOG_USEC": "120000000"}) == 120
    assert watchdog_seconds({"WATCHDOG_USEC": "120000000", "WATCHDOG_PID": str(os.getpid())}) == 120
    # set for another process (inherited by a child): not ours
    assert watchdog_seconds({"WATCHDOG_USEC": "120000000", "WATCHDOG_PID": "1"}) is None
    assert watchdog_seconds({}) is None and watchdog_seconds({"WATCHDOG_USEC": "0"}) is None
