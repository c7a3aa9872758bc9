"""How the server is doing (pbem.services.health): `pbem status`, the web's /healthz and /metrics,
all read from the real SQLite database a real referee works on, on a clock the test
moves. The subprocess tests (a real `pbem serve` stopped with SIGSTOP, systemd's notify
socket) are in test_health_serve.py."""

from __future__ import annotations

import json
import logging
import time
import warnings
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlmodel import Session

from pbem.cli import main
from pbem.config import SmtpSettings
from pbem.services.health import read_status, server_status
from pbem.store.models import ServerState
from pbem.web import create_app
from testkit.desk import PLAYERS, Clock, mail, make_server, started_game, write_config
from testkit.net import LOOPBACK, free_ports

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient


def metrics_of(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples of a /metrics page, read by prometheus-client's own parser."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_healthz_and_metrics_follow_the_ticks_and_the_stored_mail(
        tmp_path: Path, database: str) -> None:
    clock = Clock()
    server = make_server(tmp_path, clock, database=database, late_tick_seconds=120.0,
                         stuck_mail_seconds=600.0)
    server.tick()   # the last tick: now
    assert server.referee.store_inbound(mail(PLAYERS[0], "HELP\n"), source="smtp")
    with TestClient(create_app(server.settings, engine=server.engine, clock=clock)) as web:
        well = web.get("/healthz")
        assert well.status_code == 200, well.text
        assert well.headers["cache-control"] == "no-store"
        assert well.json()["healthy"] is True and well.json()["inbox"]["waiting"] == 1
        samples = metrics_of(web.get("/metrics").text)
        assert samples[("pbem_inbox_mails", ())] == 1
        assert samples[("pbem_last_tick_age_seconds", ())] == 0
        assert samples[("pbem_healthy", ())] == 1
        assert samples[("pbem_mails_received_total", (("status", "new"),))] == 1

        clock.advance(minutes=11)   # no tick since, and the mail waits
        ill = web.get("/healthz")
        assert ill.status_code == 503, ill.text
        problems = ill.json()["problems"]
        assert problems == [
            "the last tick was 660 seconds ago (late after 120): is pbem serve running, "
            "and not stuck?",
            "1 stored mail waits to be handled, for 660 seconds"], problems
        assert metrics_of(web.get("/metrics").text)[("pbem_healthy", ())] == 0

        server.tick()   # handles the mail (HELP), answers it into the .eml outbox
        again = web.get("/healthz")
        assert again.status_code == 200, again.text
        samples = metrics_of(web.get("/metrics").text)
        assert samples[("pbem_inbox_mails", ())] == 0
        assert samples[("pbem_mails_received_total", (("status", "done"),))] == 1
        assert samples[("pbem_mails_queued_total", (("status", "sent"),))] == 1
        assert samples[("pbem_errors_total", (("kind", "mail-failed"),))] == 0
        # handled 11 minutes after it came (the clock stood still in between)
        assert samples[("pbem_mail_handling_seconds", (("quantile", "0.5"),))] == 660
        if database.startswith("sqlite"):   # SQLite's ticks take the referee lease
            # free between ticks
            assert ("pbem_lease_until_timestamp_seconds",
                    (("lease", "referee"), ("owner", ""))) in samples


def test_mail_that_cannot_be_sent_is_stuck_and_the_backoff_is_shown(
        tmp_path: Path, database: str) -> None:
    """An SMTP server that is down: the answer stays due, serve backs off (kept in the
    database), and once it has waited past stuck_mail_seconds the server is unwell."""
    clock = Clock()
    closed = free_ports(1)[0]   # nothing listens there
    server = make_server(tmp_path, clock, database=database, stuck_mail_seconds=600.0,
                         smtp=SmtpSettings(host=LOOPBACK, port=closed, starttls=False))
    assert server.referee.store_inbound(mail(PLAYERS[0], "HELP\n"), source="smtp")
    report = server.tick()
    assert report.processed == 1 and "SMTP" in report.problems
    status = server_status(server.engine, server.settings, clock())
    assert status.healthy, status.problems
    assert (status.outbox, status.outbox_due) == (1, 1)
    [smtp] = [b for b in status.backoffs if b.service == "SMTP"]
    assert smtp.failures == 1 and smtp.retry_at is not None and smtp.retry_at > clock()
    assert str(closed) in smtp.why or "refused" in smtp.why.lower(), smtp.why

    clock.advance(minutes=10, seconds=1)
    server.tick()   # the clock works on; the mail server is still down
    status = server_status(server.engine, server.settings, clock())
    assert [str(p) for p in status.problems] == [
        "1 outgoing mail is due and not sent, for 601 seconds: is the mail server reachable?"]
    assert status.errors == {"mail-failed": 0, "mail-set-aside": 0, "mail-undeliverable": 0,
                             "game-failed": 0}
    assert "back-off SMTP: 2 failures in a row" in "\n".join(status.lines())


def test_a_database_without_a_tick_is_unwell(tmp_path: Path) -> None:
    server = make_server(tmp_path, Clock())
    with Session(server.engine) as session:
        assert session.get(ServerState, "clock.last_tick") is None
    status = read_status(server.engine, Clock()(), late_after=300, stuck_after=600)
    assert [str(p) for p in status.problems] == [
        "no tick has run yet: is pbem serve running?"]


def test_pbem_status_prints_the_figures_and_says_unwell_in_its_exit_status(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)

    def status(*words: str) -> tuple[int, str, str]:
        code = main(["status", "-c", str(config), *words])
        out, err = capsys.readouterr()
        return code, out, err

    code, _, err = status()
    assert code == 2 and "no database" in err, err
    assert main(["tick", "-c", str(config)]) == 0
    capsys.readouterr()
    code, out, _ = status()
    assert code == 0, out
    assert out.splitlines()[0] == "health: ok" and out.splitlines()[1].startswith("last tick: ")
    code, out, _ = status("--json")
    figures = json.loads(out)
    assert figures["format"] == "pbem.status/1" and figures["healthy"] is True
    assert figures["last_tick_age_seconds"] < 60
    # the same tick is late for late_tick_seconds = 1
    config.write_text(config.read_text().replace("[server]\n",
                                                 "[server]\nlate_tick_seconds = 1\n"))
    time.sleep(1.5)
    code, out, _ = status()
    assert code == 1, out
    assert out.startswith("health: FAILING\n  problem: the last tick was "), out


def test_a_monitors_asking_stays_out_of_the_log_while_all_is_well(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    server = make_server(tmp_path, clock)
    server.tick()
    with TestClient(create_app(server.settings, engine=server.engine, clock=clock)) as web, \
            caplog.at_level(logging.INFO, logger="pbem.web"):
        assert web.get("/healthz").status_code == 200
        assert web.get("/metrics").status_code == 200
        assert web.get("/").status_code == 200
        clock.advance(hours=1)
        assert web.get("/healthz").status_code == 503
    logged = [r.getMessage() for r in caplog.records if r.name == "pbem.web"]
    assert [line.rsplit(" ", 1)[0] for line in logged] == ["GET / 200", "GET /healthz 503"]


def test_the_clock_work_of_each_game_is_progress_for_the_watchdog(tmp_path: Path) -> None:
    """A tick that resolves the turns of many games is at work, not stuck: each game's
    clock work moves serve's progress on (loop_stalled)."""
    clock = Clock()
    server = make_server(tmp_path, clock)
    for name in ("g1", "g2", "g3"):
        started_game(server, "DEADLINE 48", name=name)
    clock.advance(hours=49)
    steps: list[float] = []
    assert server.referee.resolve_due(step=lambda: steps.append(time.monotonic())) == 3
    assert len(steps) == 3
    before = server.progress.at
    server.tick()
    assert server.progress.at > before
