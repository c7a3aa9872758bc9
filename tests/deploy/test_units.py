"""The systemd units and the container are hardened and watched: `systemd-analyze security`
rates each unit 3.0 or better, serve's units are Type=notify with a watchdog, all of them
run as the sysusers.d user in their state directory, and the container checks its health
with `pbem status`, says its ports and installs pinned packages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from pbem.config import ListenSettings, WebSettings

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
UNITS = ("pbem.service", "pbem@.service", "pbem-web.service")
SERVE_UNITS = ("pbem.service", "pbem@.service")
MOST_EXPOSED = 3.0


def entries(name: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in (DEPLOY / name).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";")):
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def tool(name: str) -> str:
    """A systemd tool; missing, the test skips, except under CI (.ci/run installs it)."""
    found = shutil.which(name) or next(
        (str(p) for p in (Path("/usr/bin") / name, Path("/bin") / name) if p.exists()), None)
    if found is None:
        message = f"{name} is not installed (apt-get install systemd)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


@pytest.mark.parametrize("name", UNITS)
def test_every_unit_runs_as_the_pbem_user_in_its_state_directory(name: str) -> None:
    unit = entries(name)
    assert unit["User"] == ["pbem"] and unit["Group"] == ["pbem"]
    assert unit["StateDirectory"] == ["pbem"]
    assert unit["WorkingDirectory"] == ["/var/lib/pbem"]
    assert unit["CapabilityBoundingSet"] == [""] and unit["UMask"] == ["0077"]
    assert "@system-service" in unit["SystemCallFilter"]


@pytest.mark.parametrize("name", SERVE_UNITS)
def test_serve_tells_systemd_it_is_ready_and_alive(name: str) -> None:
    unit = entries(name)
    assert unit["Type"] == ["notify"] and unit["NotifyAccess"] == ["main"]
    assert int(unit["WatchdogSec"][0]) > 0
    assert "pbem serve" in unit["ExecStart"][0]


@pytest.mark.parametrize("name", UNITS)
def test_systemd_analyze_security_rates_the_unit_ok(name: str, tmp_path: Path) -> None:
    analyze = tool("systemd-analyze")
    path = DEPLOY / name
    if name.endswith("@.service"):   # a template is rated as one of its instances
        path = tmp_path / name.replace("@.", "@1.")
        shutil.copy(DEPLOY / name, path)
    rated = subprocess.run([analyze, "security", "--offline=true", "--no-pager", str(path)],
                           capture_output=True, text=True, timeout=120)
    found = re.search(r"Overall exposure level for \S+: ([\d.]+)", rated.stdout)
    assert found is not None, rated.stdout + rated.stderr
    print(f"{name}: {found.group(1)}")
    assert float(found.group(1)) <= MOST_EXPOSED, rated.stdout


def test_the_sysusers_file_makes_the_units_user(tmp_path: Path) -> None:
    lines = [line.split() for line in (DEPLOY / "pbem.sysusers").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert [line[:2] for line in lines] == [["u", "pbem"]]
    assert lines[0][-1] == "/var/lib/pbem"
    sysusers = tool("systemd-sysusers")
    (tmp_path / "etc").mkdir()
    for table in ("passwd", "group"):
        (tmp_path / "etc" / table).write_text("")
    made = subprocess.run([sysusers, "--dry-run", f"--root={tmp_path}",
                           str(DEPLOY / "pbem.sysusers")], capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    assert "Creating user 'pbem'" in made.stdout + made.stderr, made.stdout + made.stderr


def test_the_container_checks_its_health_and_says_its_ports() -> None:
    text = (DEPLOY / "Containerfile").read_text()
    check = re.search(r"^HEALTHCHECK .*\\\n\s*CMD (\[.*\])", text, re.MULTILINE)
    assert check is not None and '"pbem", "status", "-c", "/etc/pbem/pbem.toml"' in check.group(1)
    exposed = {int(p) for line in re.findall(r"^EXPOSE (.+)$", text, re.MULTILINE)
               for p in line.split()}
    assert exposed == {ListenSettings.port, WebSettings.port}


def test_the_container_installs_pinned_packages_for_every_dependency() -> None:
    text = (DEPLOY / "Containerfile").read_text()
    assert re.search(r"^FROM \S+:\d+\.\d+\.\d+-slim-\w+$", text, re.MULTILINE), "base not pinned"
    assert "-c deploy/requirements.lock" in text and "COPY deploy/requirements.lock" in text
    pins = {}
    for line in (DEPLOY / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert re.fullmatch(r"[\w.]+", version), line
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    needed = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in needed:
        name = re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[; ]", requirement)[0]).lower()
        assert name in pins, f"{requirement} is not pinned in deploy/requirements.lock"
