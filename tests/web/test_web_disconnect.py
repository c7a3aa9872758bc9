"""`pbem web` under uvicorn: a client that sends half an upload and hangs up is logged as
one info line, not a 500 with a traceback."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from testkit.desk import Clock, make_server
from testkit.web import WebProcess, free_port, write_config


def test_a_client_gone_mid_upload_is_one_info_line(tmp_path: Path) -> None:
    make_server(tmp_path, Clock()).engine.dispose()     # a database the web app can read
    web = WebProcess(write_config(tmp_path, free_port()), tmp_path / "web.log")
    try:
        with socket.create_connection(("127.0.0.1", web.port), timeout=10) as client:
            client.sendall(b"POST /api/verify HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           b"Content-Type: application/json\r\nContent-Length: 200000\r\n\r\n"
                           + b'{"format": "' + b"x" * 50_000)
            time.sleep(0.3)            # the app is reading the body when the client leaves
        deadline = time.monotonic() + 15
        while "client disconnected" not in web.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        log = web.log()
    finally:
        web.stop()
    lines = [line for line in log.splitlines() if "/api/verify" in line]
    assert len(lines) == 1 and "POST /api/verify client disconnected" in lines[0], log
    assert "INFO" in lines[0] or "info" in lines[0].lower(), log
    assert "Traceback" not in log and " 500 " not in log and "ERROR" not in log, log
