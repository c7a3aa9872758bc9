"""[imap]/[smtp] provider presets and the OAuth2 settings in pbem.toml (pbem.config)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.config import PROVIDERS, ConfigError, load_settings
from pbem.config.providers import with_providers


def config(tmp_path: Path, imap: str, smtp: str = "") -> Path:
    for name in ("token.json", "t.json"):   # the token files named below: the owner's alone
        (tmp_path / name).write_text('{"refresh_token": "rt"}')
        (tmp_path / name).chmod(0o600)
    path = tmp_path / "pbem.toml"
    path.write_text(f"[server]\naddress = \"bluff@example.org\"\n[imap]\n{imap}\n"
                    + (f"[smtp]\n{smtp}\n" if smtp else ""))
    return path


OUTLOOK = ('provider = "outlook"\nusername = "bluff@outlook.com"\n'
           'oauth_client_id = "app"\noauth_token_file = "token.json"')


def test_a_preset_fills_what_is_not_given_and_smtp_takes_imaps_login(tmp_path: Path) -> None:
    settings = load_settings(config(tmp_path, OUTLOOK + "\nport = 1993", "connections = 2"),
                             env={})
    imap, smtp = settings.imap, settings.smtp
    assert imap is not None and smtp is not None
    assert (imap.host, imap.port, imap.auth) == ("outlook.office365.com", 1993, "oauth2")
    assert imap.spam_folder == "Junk Email"
    assert imap.oauth_token_file == str(tmp_path / "token.json")
    assert (smtp.host, smtp.port, smtp.starttls, smtp.auth) == ("smtp.office365.com", 587,
                                                                 True, "oauth2")
    assert smtp.username == "bluff@outlook.com" and smtp.oauth_client_id == "app"
    assert smtp.oauth_scopes == ("https://outlook.office.com/SMTP.Send",)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_every_preset_makes_settings(tmp_path: Path, name: str) -> None:
    extra = 'username = "bluff@example.org"\n' + (
        'oauth_client_id = "app"\noauth_token_file = "t.json"'
        if PROVIDERS[name]["imap"].get("auth") == "oauth2" else 'password = "app password"')
    settings = load_settings(config(tmp_path, f'provider = "{name}"\n{extra}', "verp = false"),
                             env={})
    assert settings.imap is not None and settings.imap.host
    assert settings.smtp is not None and settings.smtp.host


def test_a_refresh_token_in_the_file_is_refused_and_one_from_the_environment_taken(
        tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="environment"):
        load_settings(config(tmp_path, OUTLOOK + '\noauth_refresh_token = "x"'), env={})
    settings = load_settings(config(tmp_path, OUTLOOK.replace('oauth_token_file = "token.json"',
                                                              "")),
                             env={"PBEM_IMAP_OAUTH_REFRESH_TOKEN": "rt"})
    assert settings.imap is not None and settings.imap.oauth_refresh_token == "rt"


@pytest.mark.parametrize(("imap", "says"), [
    ('provider = "hotmail"', "no provider pbem knows"),
    ('host = "h"\nauth = "oauth2"', "oauth_client_id"),
    ('host = "h"\nauth = "oauth2"\noauth_client_id = "a"', "oauth_provider or oauth_token_uri"),
    ('host = "h"\nauth = "oauth2"\noauth_client_id = "a"\noauth_provider = "google"',
     "oauth_token_file"),
    ('host = "h"\nauth = "kerberos"', "auth must be one of"),
])
def test_a_wrong_setting_says_what_to_do(tmp_path: Path, imap: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        load_settings(config(tmp_path, 'username = "u"\n' + imap), env={})


def test_a_token_file_missing_or_readable_by_others_stops_pbem_at_once(tmp_path: Path) -> None:
    path = config(tmp_path, OUTLOOK)
    (tmp_path / "token.json").chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_settings(path, env={})
    (tmp_path / "token.json").unlink()
    with pytest.raises(ConfigError, match="pbem oauth"):
        load_settings(path, env={})


@given(st.dictionaries(st.sampled_from(["host", "port", "ssl", "spam_folder", "folder"]),
                       st.integers(1, 65535), max_size=5),
       st.sampled_from(sorted(PROVIDERS)))
def test_a_setting_given_wins_over_the_preset(given_values: dict[str, int], name: str) -> None:
    values = {k: (str(v) if k in ("host", "spam_folder", "folder") else
                  bool(v % 2) if k == "ssl" else v) for k, v in given_values.items()}
    sections = {"imap": {"provider": name, **values}}
    assert with_providers(sections) == []
    merged = sections["imap"]
    for key, value in values.items():
        assert merged[key] == value
    for key, value in PROVIDERS[name]["imap"].items():
        if key not in values:
            assert merged[key] == value
