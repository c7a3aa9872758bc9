"""A setting in the wrong section of pbem.toml stops pbem with the section it belongs in."""

from __future__ import annotations

from pathlib import Path

import pytest

from pbem.config import ConfigError, load_settings


def settings_error(tmp_path: Path, toml: str) -> str:
    path = tmp_path / "pbem.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_settings(path, env={})
    return str(refused.value).removeprefix(f"{path}: ")


def test_poll_seconds_under_server_names_its_section(tmp_path: Path) -> None:
    said = settings_error(tmp_path, '[server]\naddress = "b@example.org"\npoll_seconds = 5\n')
    assert said == "[server] poll_seconds: unknown setting; it belongs in [imap]: move it there"


def test_a_server_setting_under_imap_names_its_section(tmp_path: Path) -> None:
    said = settings_error(tmp_path, '[imap]\nhost = "h"\nusername = "u"\npassword = "p"\n'
                                    'referee = "r@example.org"\n'
                                    'colour = "red"\n')
    assert said.splitlines()[1:] == [
        f"  {tmp_path / 'pbem.toml'}: [imap] colour: unknown setting; remove it (the settings "
        "of [imap] are in docs/configuration.md)",
        f"  {tmp_path / 'pbem.toml'}: [imap] referee: unknown setting; it belongs in [server]: "
        "move it there"]


def test_an_unknown_setting_of_no_section_is_named_alone(tmp_path: Path) -> None:
    said = settings_error(tmp_path, '[server]\ncolour = "red"\n')
    assert said == ("[server] colour: unknown setting; remove it (the settings of [server] "
                    "are in docs/configuration.md)")


def test_the_troubleshooting_names_poll_seconds_with_its_section() -> None:
    root = Path(__file__).resolve().parents[2]
    docs = " ".join((root / "docs" / "server.md").read_text(encoding="utf-8").split())
    assert "`poll_seconds` under `[imap]`" in docs
    readme = " ".join((root / "README.md").read_text(encoding="utf-8").split())
    assert "`poll_seconds`, a setting of `[imap]`" in readme


def test_a_language_pbem_does_not_speak_stops_it(tmp_path: Path) -> None:
    said = settings_error(tmp_path, '[server]\nreferee_language = "fr"\n')
    assert said == ('[server] referee_language: "fr" is no language pbem speaks; '
                    "write one of en, de, cs")


def test_the_languages_are_read(tmp_path: Path) -> None:
    path = tmp_path / "pbem.toml"
    path.write_text('[server]\nlanguage = "cs"\nreferee_language = "de"\n', "utf-8")
    settings = load_settings(path, env={})
    assert (settings.language, settings.referee_language) == ("cs", "de")
