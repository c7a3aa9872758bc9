"""The deploy files work together: deploy/pbem.toml as shipped keeps its data where the
systemd unit lets the service write (its state directory) and where the container keeps
its volume, never next to the read-only config."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from sqlalchemy import text

from pbem.config import load_settings
from pbem.store.db import open_database

DEPLOY = Path(__file__).parents[2] / "deploy"
CONFIG_AT = Path("/etc/pbem/pbem.toml")     # where the unit and the container read it


def unit() -> dict[str, list[str]]:
    entries: dict[str, list[str]] = {}
    for line in (DEPLOY / "pbem.service").read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";")):
            key, _, value = line.partition("=")
            entries.setdefault(key.strip(), []).append(value.strip())
    return entries


def writable_in_unit() -> list[Path]:
    u = unit()
    paths = [Path(p) for v in u.get("ReadWritePaths", []) for p in v.split()]
    paths += [Path("/var/lib") / d for v in u.get("StateDirectory", []) for d in v.split()]
    return paths


def shipped_settings(tmp_path: Path):  # type: ignore[no-untyped-def]
    """deploy/pbem.toml loaded as if it were /etc/pbem/pbem.toml (no secrets in the env)."""
    folder = tmp_path / "etc-pbem"
    folder.mkdir()
    config = folder / "pbem.toml"
    config.write_text((DEPLOY / "pbem.toml").read_text())
    return load_settings(config, env={}), folder


def sqlite_path(url: str) -> Path:
    assert url.startswith("sqlite:////"), f"the sample's database is not an absolute path: {url}"
    return Path(url.removeprefix("sqlite:///"))


def under(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def test_the_unit_gives_the_service_a_state_directory() -> None:
    u = unit()
    assert u["StateDirectory"] == ["pbem"]
    assert u["ProtectSystem"] == ["strict"]   # everything else is read-only for it
    assert Path(u["WorkingDirectory"][0]) in writable_in_unit()
    assert f"-c {CONFIG_AT}" in u["ExecStart"][0]


def test_the_sample_config_keeps_its_data_where_the_unit_lets_it_write(tmp_path: Path) -> None:
    settings, config_folder = shipped_settings(tmp_path)
    writable = writable_in_unit()
    database = sqlite_path(settings.database)
    # SQLite writes the file and its -wal / -shm companions into the database's folder
    assert under(database.parent, writable), (database, writable)
    assert under(Path(settings.outbox_dir), writable), settings.outbox_dir
    assert not under(database, [config_folder, CONFIG_AT.parent])
    assert settings.templates_dir is None


def test_the_container_keeps_the_same_paths_in_its_volume(tmp_path: Path) -> None:
    containerfile = (DEPLOY / "Containerfile").read_text()
    volumes = [Path(v) for v in re.findall(r"^VOLUME\s+(\S+)", containerfile, re.MULTILINE)]
    run = next(line for line in containerfile.splitlines() if "podman run" in line)
    assert f":{CONFIG_AT}:ro" in run                     # the config is read-only there too
    mounted = [Path(m) for m in re.findall(r"-v \S+?:(/\S+?)(?::ro)?(?:\s|$)", run)]
    settings, _ = shipped_settings(tmp_path)
    data = [v for v in mounted if v != CONFIG_AT]
    assert data and all(v in volumes for v in data)
    assert under(sqlite_path(settings.database), data)
    assert under(Path(settings.outbox_dir), data)
    assert re.search(r"^CMD .*\"-c\", \"" + re.escape(str(CONFIG_AT)), containerfile, re.MULTILINE)


def test_the_sample_database_opens_in_a_state_directory(tmp_path: Path) -> None:
    """The shipped URL with the state directory moved into a test folder: it migrates,
    writes and reads back (a real SQLite file)."""
    settings, _ = shipped_settings(tmp_path)
    state = tmp_path / "var-lib-pbem"
    database = sqlite_path(settings.database)
    moved = state / database.relative_to(Path("/var/lib/pbem"))
    engine = open_database(f"sqlite:///{moved}")
    with engine.begin() as connection:
        assert connection.execute(text("SELECT count(*) FROM game")).scalar() == 0
    assert moved.exists()
    engine.dispose()


def test_a_config_without_paths_keeps_the_outbox_next_to_the_database(tmp_path: Path) -> None:
    config = tmp_path / "pbem.toml"
    config.write_text('[server]\ndatabase = "sqlite:////srv/data/pbem.db"\n')
    assert load_settings(config, env={}).outbox_dir == Path("/srv/data/pbem-outbox")
    config.write_text("[server]\n")
    assert load_settings(config, env={}).outbox_dir == tmp_path / "pbem-outbox"


def test_the_container_copies_everything_the_wheel_includes() -> None:
    """pyproject's force-include (templates, schema, docs/rules.md) must be in the build
    context the Containerfile copies, or `pip install .` fails inside the container."""
    pyproject = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())
    included = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    copied = re.findall(r"^COPY\s+(\S+)", (DEPLOY / "Containerfile").read_text(), re.MULTILINE)
    for source in included:
        top = Path(source).parts[0]
        assert top in copied, f"{source} is not copied into the container"
