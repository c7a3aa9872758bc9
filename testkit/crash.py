"""Real server processes that can be killed at a crash point (see pbem.store.faults).

``python -m testkit.crash`` is a zygote: it imports pbem once (that takes a
second or more), then, for every line it reads on stdin, forks a child that
arms the crash points named on the line, runs one ``Server.tick()`` with the
given config file (IMAP in, SMTP out, SQLite: the real thing), and exits (or
another job: see ``Zygote.run``; a line may ask for the child to be killed
after a while, wherever it is then).
The zygote answers each line with the child's wait status: ``0`` for a
clean exit, ``-9`` when the child was SIGKILLed at its crash point.

A forked child is a real separate process: killing it loses everything it
had in memory and every open connection and transaction, as a power cut
would. The zygote is single-threaded, so forking it is safe.

    with Zygote() as zygote:
        assert zygote.tick(config, crash="outbox-handed-off:2") == -9
        assert zygote.tick(config) == 0      # the restart

The config such a process reads to work over the real mail stack:
testkit/stack.py's ``stack_config()``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _child(config: str, crash: str | None, job: str = "tick", seconds: float = 0) -> None:
    from pbem.config import load_settings
    from pbem.runner.server import Server
    from pbem.store import faults
    faults.arm(crash)
    if job == "upgrade":     # `pbem db upgrade`: the schema alone
        from pbem.store import db
        engine = db.open_database(load_settings(Path(config)).database, migrate=False)
        sys.stderr.write(f"child {os.getpid()} upgrade: {db.upgrade(engine)}\n")
        return
    server = Server(load_settings(Path(config)))
    if job == "process":     # the referee alone, without the tick's lease
        report: object = server.referee.process_pending()
    elif job == "send":      # the outbox alone
        report = server.send()
    elif job == "clock":     # the clock work alone (deadlines, reminders), without the lease
        report = server.referee.resolve_due()
    elif job == "listen":    # the SMTP listener for a while, then a tick
        import time
        listener = server.listener()
        assert listener is not None
        listener.start()
        time.sleep(seconds)
        listener.stop()
        report = server.tick()
    else:
        report = server.tick()
    sys.stderr.write(f"child {os.getpid()} {job}: {report}\n")


def _kill_after(pids: list[int], seconds: float) -> None:
    """SIGKILL the children still running ``seconds`` after they began (as an OOM killer,
    a restart or a deploy would, at no point of pbem's choosing)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
               for pid in pids):
            return
        time.sleep(0.002)
    for pid in pids:   # the whole group, as systemd kills a service's cgroup
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def serve() -> None:
    import logging

    import pbem.runner.server  # noqa: F401  (the import is what the zygote is for)
    from pbem.render.environment import template_environment
    env = template_environment(None)   # compile the templates once, for every child
    for name in env.list_templates(extensions=["j2"]):
        if not name.startswith("web/"):   # the web's templates compile in the web's environment
            env.get_template(name)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(process)d %(levelname)s %(name)s: %(message)s")
    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pids = []
        kill_after = job.get("kill_after")
        for _ in range(int(job.get("count", 1))):   # several at once: they run concurrently
            pid = os.fork()
            if pid == 0:
                os.setpgid(0, 0)   # its own group: a kill takes what it started with it
                code = 0
                try:
                    _child(job["config"], job.get("crash"), job.get("job", "tick"),
                           float(job.get("seconds", 0)))
                except BaseException:
                    traceback.print_exc()
                    code = 1
                finally:
                    sys.stderr.flush()
                    os._exit(code)
            pids.append(pid)
        codes = []
        if kill_after is not None:   # a kill at a moment of the test's choosing (SIGKILL)
            _kill_after(pids, float(kill_after))
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            codes.append(-os.WTERMSIG(status) if os.WIFSIGNALED(status)
                         else os.WEXITSTATUS(status))
        print(json.dumps({"status": codes[0], "statuses": codes, "pid": pids[0]}), flush=True)


class Zygote:
    """The zygote as seen from a test: ``tick(config, crash)`` returns the wait status."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.last_pid = 0

    def __enter__(self) -> Zygote:
        env = dict(os.environ)
        env.pop("PBEM_CRASH_AT", None)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen([sys.executable, "-m", "testkit.crash"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc = None

    def tick(self, config: Path, crash: str | None = None) -> int:
        return self.run(config, crash=crash)[0]

    def run(self, config: Path, *, crash: str | None = None, job: str = "tick",
            count: int = 1, seconds: float = 0,
            kill_after: float | None = None) -> list[int]:
        """Run ``count`` children at once (``job``: tick, process, send, clock, upgrade
        (`pbem db upgrade`), or listen for ``seconds`` then tick), SIGKILLed ``kill_after``
        seconds after they began if still running; their wait statuses."""
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout
        self.proc.stdin.write(json.dumps({"config": str(config), "crash": crash, "job": job,
                                          "count": count, "seconds": seconds,
                                          "kill_after": kill_after}) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, "the zygote died"
        result = json.loads(answer)
        self.last_pid = int(result["pid"])
        return [int(code) for code in result["statuses"]]


if __name__ == "__main__":
    serve()
