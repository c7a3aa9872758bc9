"""Mail the provider filed as spam ([imap] spam_folder) is read when it comes from a
player, a known address or the referee, and handled as if it came to the inbox; the
rest of the spam folder is left untouched (on the real Dovecot)."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

from imapclient import SEEN

from pbem.config import ImapSettings, Settings, SmtpSettings
from pbem.runner.server import Server
from testkit.desk import Clock
from testkit.mailstack import MailStack

SPAM = "Junk"


def mail(sender: str, to: str, body: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, "orders"
    msg["Message-ID"] = make_msgid(domain="bluff.test")
    msg.set_content(body)
    return msg.as_bytes(policy=policy.SMTP)


def message_id(raw: bytes) -> str:
    return next(line.split(b": ", 1)[1].decode() for line in raw.splitlines()
                if line.startswith(b"Message-ID: "))


def spam_server(stack: MailStack, tmp_path: Path) -> Server:
    for user in ("bluff", "referee", "p1", "p2", "p3"):
        stack.clear(user)
    settings = Settings(
        database=f"sqlite:///{tmp_path}/pbem.db", address=stack.address("bluff"),
        referee=stack.address("referee"), referee_key="k",
        imap=ImapSettings(stack.imap_host, stack.imap_port, ssl=False,
                          username=stack.address("bluff"), password=stack.password,
                          spam_folder=SPAM),
        smtp=SmtpSettings(stack.smtp_host, stack.smtp_port, starttls=False))
    return Server(settings, clock=Clock())


def spam_left(stack: MailStack) -> list[tuple[bytes, bool]]:
    """The spam folder's mails: (raw, seen)."""
    client = stack.imap("bluff")
    try:
        client.select_folder(SPAM, readonly=True)
        uids = client.search(["ALL"])
        data = client.fetch(uids, ["BODY.PEEK[]", "FLAGS"]) if uids else {}
        return [(data[u][b"BODY[]"], SEEN in data[u][b"FLAGS"]) for u in sorted(data)]
    finally:
        client.logout()


def test_a_players_mail_in_the_spam_folder_is_handled_and_spam_left_alone(
        mailstack: MailStack, tmp_path: Path) -> None:
    server = spam_server(mailstack, tmp_path)
    bluff = mailstack.address("bluff")
    lines = ["NEWGAME g1 SEED 5"] + [f"ADD g1 {mailstack.address(p)} N{i}"
                                     for i, p in enumerate(("p1", "p2", "p3"))]
    for line in lines:   # seated players (a game not started yet)
        server.referee.admin(line.split())
    client = mailstack.imap("bluff")
    client.create_folder(SPAM)
    client.logout()
    player = mail(f"Ann <{mailstack.address('p1')}>", bluff, "HELP\n")
    stranger = mail("Win Big <winner@lottery.example>", bluff, "HELP\n")
    referee = mail(mailstack.address("referee"), bluff, "HELP\n")
    mailstack.append("bluff", stranger, player, referee, folder=SPAM)

    report = server.tick()
    assert report.fetched == 2, report
    asked = message_id(player)
    assert any(f"In-Reply-To: {asked}".encode() in raw   # p1's HELP answered
               for raw in mailstack.wait_for("p1", 1))
    left = spam_left(mailstack)
    assert [raw for raw, _ in left] == [stranger]   # only the stranger's is left ...
    assert left[0][1] is False                       # ... unread, as it came
    done = mailstack.fetch_all("bluff", "pbem-done")
    assert player in done and referee in done

    assert server.tick().fetched == 0   # nothing twice; the stranger's is not asked again
    server.close()


def test_a_missing_spam_folder_does_not_stop_the_inbox(mailstack: MailStack,
                                                       tmp_path: Path) -> None:
    server = spam_server(mailstack, tmp_path)
    mailstack.deliver("bluff", mail(mailstack.address("p1"), mailstack.address("bluff"),
                                    "HELP\n"))
    report = server.tick()
    assert report.fetched == 1 and report.problems == [], report
    server.close()
