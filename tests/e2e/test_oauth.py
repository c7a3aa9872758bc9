"""OAuth2 logins for real: Dovecot's oauth2 passdb and the SMTP relay check bearer
tokens against the token introspection endpoint of testkit/oauthserver.py, whose token
endpoint refreshes them. pbem logs in by XOAUTH2 and OAUTHBEARER, refreshes an expired
token without losing a mail, and on a revoked one tells the referee once and keeps the
mail."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pbem.config import ImapSettings, Settings, SmtpSettings
from pbem.mail.imap import ImapInbox
from pbem.mail.oauth import OAuthGrant, OAuthLogin, OAuthRefused, TokenSource
from pbem.runner.server import Server
from testkit.desk import Clock
from testkit.dovecot import dovecot_available
from testkit.mailstack import MailStack
from testkit.oauthserver import CLIENT_ID, CLIENT_SECRET, OAuthServer
from testkit.stack import help_mail
from testkit.stored import outbound_rows

NOTICE = "The mail server login failed"


@pytest.fixture(scope="module")
def tokens() -> Iterator[OAuthServer]:
    server = OAuthServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stack(tokens: OAuthServer) -> Iterator[MailStack]:
    if not dovecot_available():
        pytest.skip("Dovecot is not installed")
    where = Path(tempfile.mkdtemp(prefix="pbem-oauth2-"))
    os.chmod(where, 0o755)   # Dovecot's auth process reads the oauth2 settings
    conf = where / "oauth2.conf.ext"
    tokens.write_dovecot_oauth2(str(conf))
    os.chmod(conf, 0o644)
    mail = MailStack(extra_config=tokens.dovecot_config(str(conf)), bearer=tokens.valid).start()
    yield mail
    mail.stop()


def grant(tokens: OAuthServer, user: str, token_file: Path | None = None) -> OAuthGrant:
    refresh = tokens.grant(user)
    if token_file is None:
        return OAuthGrant(CLIENT_ID, token_uri=tokens.token_uri, refresh_token=refresh,
                          client_secret=CLIENT_SECRET)
    token_file.write_text(json.dumps({"refresh_token": refresh, "client_secret": CLIENT_SECRET}))
    token_file.chmod(0o600)
    return OAuthGrant(CLIENT_ID, token_uri=tokens.token_uri, token_file=str(token_file))


@pytest.mark.parametrize("mechanism", ["xoauth2", "oauthbearer"])
def test_dovecot_takes_a_refreshed_token_and_refuses_a_made_up_one(
        stack: MailStack, tokens: OAuthServer, mechanism: str) -> None:
    stack.clear("bluff")
    stack.deliver("bluff", help_mail(stack, "p1"))
    bluff = stack.address("bluff")
    source = TokenSource(grant(tokens, bluff))
    inbox = ImapInbox(stack.imap_host, stack.imap_port, bluff, "", ssl=False,
                      login=OAuthLogin(source, bluff, mechanism).imap)
    got: list[bytes] = []
    assert inbox.poll(lambda mail: got.append(mail.raw)) == 1
    assert b"HELP" in got[0]

    class MadeUp(TokenSource):
        def _refresh(self) -> tuple[str, float]:
            return "at-made-up", 3600.0
    refused = ImapInbox(stack.imap_host, stack.imap_port, bluff, "", ssl=False,
                        login=OAuthLogin(MadeUp(grant(tokens, bluff)), bluff, mechanism).imap)
    with pytest.raises(Exception, match="(?i)login|authentic"):
        refused.poll(lambda mail: None)


def test_a_token_is_refreshed_before_it_ends(tokens: OAuthServer) -> None:
    now = [1000.0]
    source = TokenSource(grant(tokens, "bluff@bluff.test"), clock=lambda: now[0])
    first = source.access_token()
    assert source.access_token() == first and source.refreshes == 1
    now[0] += 3600 - 301   # more than five minutes left: kept
    assert source.access_token() == first
    now[0] += 2            # less: a new one
    assert source.access_token() != first and source.refreshes == 2


def test_a_token_file_readable_by_others_is_refused(tokens: OAuthServer,
                                                    tmp_path: Path) -> None:
    token_file = tmp_path / "token.json"
    source = TokenSource(grant(tokens, "bluff@bluff.test", token_file))
    assert source.access_token()
    token_file.chmod(0o640)
    source.forget()
    with pytest.raises(OAuthRefused, match="chmod 600"):
        source.access_token()


def oauth_server(stack: MailStack, tokens: OAuthServer, tmp_path: Path,
                 clock: Clock) -> tuple[Server, Path]:
    for user in ("bluff", "referee", "p1"):
        stack.clear(user)
    token_file = tmp_path / "bluff-token.json"
    grant(tokens, stack.address("bluff"), token_file)
    oauth = {"auth": "oauth2", "oauth_client_id": CLIENT_ID,
             "oauth_token_uri": tokens.token_uri, "oauth_token_file": str(token_file)}
    settings = Settings(
        database=f"sqlite:///{tmp_path}/pbem.db", address=stack.address("bluff"),
        referee=stack.address("referee"), referee_key="k", stranger_answers_per_day=100,
        imap=ImapSettings(stack.imap_host, stack.imap_port, ssl=False,
                          username=stack.address("bluff"), **oauth),
        smtp=SmtpSettings(stack.smtp_host, stack.smtp_port, starttls=False,
                          username=stack.address("bluff"), **oauth))
    return Server(settings, clock=clock), token_file


def notices(server: Server) -> list[Any]:
    return [row for row in outbound_rows(server.engine) if NOTICE.encode() in row.raw]


def test_serve_logs_in_by_oauth2_and_refreshes_an_expired_token_without_losing_mail(
        stack: MailStack, tokens: OAuthServer, tmp_path: Path) -> None:
    clock = Clock()
    server, _ = oauth_server(stack, tokens, tmp_path, clock)
    stack.logins.clear()
    stack.deliver("bluff", help_mail(stack, "p1"))
    report = server.tick()
    assert (report.fetched, report.sent) == (1, 1), report
    assert ("ok", stack.address("bluff")) in stack.logins   # the relay saw the bearer
    refreshes = tokens.refreshes

    tokens.expire_all()   # the provider ends them early: the logins are refused once
    server.close()        # no kept connection: both log in again
    stack.deliver("bluff", help_mail(stack, "p1"))
    report = server.tick()
    assert (report.fetched, report.sent, report.problems) == (1, 1, []), report
    assert tokens.refreshes > refreshes
    assert len(stack.wait_for("p1", 2)) == 2
    assert not notices(server)
    server.close()


def test_a_revoked_token_tells_the_referee_once_and_the_mail_waits(
        stack: MailStack, tokens: OAuthServer, tmp_path: Path) -> None:
    clock = Clock()
    server, token_file = oauth_server(stack, tokens, tmp_path, clock)
    assert server.tick().problems == []
    tokens.revoke(json.loads(token_file.read_text())["refresh_token"])
    server.close()
    stack.deliver("bluff", help_mail(stack, "p1"))
    for _ in range(3):
        report = server.tick()
        assert report.fetched == 0 and "IMAP" in report.problems
        clock.advance(minutes=20)   # past the back-off
    told = notices(server)
    assert len(told) == 2, [row.subject for row in told]   # IMAP's and SMTP's, once each
    assert {row.rcpts_json for row in told} == {json.dumps([stack.address("referee")])}
    assert len(stack.fetch_all("bluff")) == 1   # the mail waits in the mailbox

    grant(tokens, stack.address("bluff"), token_file)   # `pbem oauth` once more
    time.sleep(0.1)
    report = server.tick()
    assert report.fetched == 1 and report.problems == [], report
    stack.wait_for("p1", 1)
    stack.wait_for("referee", 2)   # the notices went out once the login worked
    server.close()
