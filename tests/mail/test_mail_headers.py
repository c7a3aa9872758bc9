"""Headers that help filters (RFC 3834 and common sense): every kind of mail pbem sends,
fetched back from Dovecot, has a Date, a Message-ID on the server's domain, a text/plain
part, no remote image or style in its HTML, and Auto-Submitted: auto-replied when it
answers a mail (In-Reply-To), auto-generated otherwise."""

from __future__ import annotations

import re
from collections import defaultdict
from email import message_from_bytes, policy
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from hypothesis import given
from hypothesis import strategies as st

from pbem.mail.remote_content import _SUSPECT, may_hold_remote_content, without_remote_content
from pbem.render.reports import Renderer
from testkit.bounce import PLAYERS, Desk
from testkit.desk import (
    REFEREE,
    Clock,
    make_server,
    outbox,
    raise_line,
    referee_mail,
    seat_of,
)

ANSWERS = {"help", "error", "confirm", "listing"}        # always a reply to a mail
ALONE = {"watch", "reminder", "talk"}                    # never a reply


def every_kind_of_mail(stack: Any, tmp_path: Path) -> dict[str, list[bytes]]:
    desk = Desk(stack, tmp_path)
    desk.referee("NEWGAME g1 DEADLINE 24 REMIND 12 SEED 3",
                 *(f"ADD g1 {stack.address(u)} Player-{u}" for u in PLAYERS), "START g1")
    desk.send("observer", "WATCH g1")
    desk.tick()                                   # referee's answer, reports, a code mail
    code_mail = stack.wait_for("observer", 1)[-1]
    code = re.search(rb"CONFIRM ([0-9a-f]{10})", code_mail)
    assert code is not None
    desk.send("observer", f"CONFIRM {code.group(1).decode()}")
    server = desk.server
    desk.send("p1", "HELP")
    desk.player("p2", "BID 3 sevens")
    desk.player("p1", raise_line(server, seat_of(server, stack.address("p1"))))
    desk.player("p3", "SAY Nobody has three stars.")
    desk.player("p4", "HISTORY")
    desk.player("p5", "STATUS")
    desk.tick()
    desk.clock.advance(hours=13)                  # into the reminder window
    desk.tick()
    desk.referee("PAUSE g1")
    desk.tick()
    desk.referee("RESUME g1", "PROCESS g1")       # turn 2: reports and the public view
    desk.tick()
    return {u: stack.fetch_all(u) for u in ["referee", "observer", *PLAYERS]}


def kind_of_mail(msg: Any) -> str:
    found = re.match(r"<pbem\.([a-z-]+)\.", str(msg["Message-ID"]))
    assert found, msg["Message-ID"]
    return found.group(1)


def remote_things(html: str) -> list[str]:
    soup = BeautifulSoup(html, "html.parser")
    found = [str(t) for t in soup.find_all(True)
             for a in ("src", "srcset", "background", "poster", "data")
             if re.match(r"\s*(https?:|//|ftp:)", str(t.get(a, "")), re.IGNORECASE)]
    found += [str(t) for t in soup.find_all("link")]
    found += re.findall(r"url\(\s*['\"]?\s*(?:https?:|//)[^)]*\)|@import", html, re.IGNORECASE)
    return found


@pytest.mark.mailstack
def test_every_kind_of_mail_carries_the_headers_filters_look_for(mailstack: Any,
                                                                 tmp_path: Path) -> None:
    mailboxes = every_kind_of_mail(mailstack, tmp_path)
    seen: dict[str, list[str]] = defaultdict(list)
    for user, raws in mailboxes.items():
        for raw in raws:
            msg = message_from_bytes(raw, policy=policy.default)
            kind = kind_of_mail(msg)
            seen[kind].append(user)
            where = f"{kind} to {user}: {msg['Subject']}"
            assert parsedate_to_datetime(str(msg["Date"])).tzinfo is not None, where
            assert str(msg["Message-ID"]).endswith(f"@{mailstack.domain}>"), where
            assert msg.get_body(("plain",)) is not None, where
            assert str(msg.get_body(("plain",)).get_content()).strip(), where
            html = msg.get_body(("html",))
            if html is not None:
                assert remote_things(str(html.get_content())) == [], where
            replied = msg["In-Reply-To"] is not None
            assert str(msg["Auto-Submitted"]) == ("auto-replied" if replied
                                                  else "auto-generated"), where
            if kind in ANSWERS:
                assert replied, where
            if kind in ALONE:
                assert not replied, where
    assert {"help", "error", "confirm", "notice", "listing", "report", "watch", "reminder",
            "talk"} <= set(seen), dict(seen)
    # the STATUS answer is a report in reply, the turn's reports are not
    statuses = [m for m in (message_from_bytes(r, policy=policy.default)
                            for r in mailboxes["p5"]) if kind_of_mail(m) == "report"]
    assert {str(m["Auto-Submitted"]) for m in statuses} == {"auto-replied", "auto-generated"}


# --------------------------------------------------------------------------- remote content


def test_a_referees_template_with_remote_images_is_sent_without_them(tmp_path: Path) -> None:
    own = tmp_path / "templates"
    own.mkdir()
    (own / "notice.html.j2").write_text(
        '<html><head><link rel="stylesheet" href="https://cdn.example/x.css">'
        '<style>@import url("https://cdn.example/y.css"); body {background: '
        'url(https://cdn.example/bg.png)}</style></head><body>'
        '<img src="https://tracker.example/p.gif" alt="[logo]">'
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="inline">'
        '<table background="http://cdn.example/t.png"><tr><td style="color:red;'
        'background-image:url(\'//cdn.example/c.png\')">{{ subject }}</td></tr></table>'
        '<a href="https://example.org/rules">rules</a></body></html>')
    server = make_server(tmp_path, Clock(), templates_dir=own)
    referee_mail(server, "NEWGAME g1")
    sent = outbox(server, REFEREE)[-1]
    assert "tracker.example" in Renderer(own).render("notice", {"subject": "x", "paragraphs": [], "game": None})[1]
    html = str(sent.get_body(("html",)).get_content())
    assert remote_things(html) == []
    assert "[logo]" in html and "data:image/png" in html and "Referee" in html
    assert 'href="https://example.org/rules"' in html and "color:red" in html


def test_the_shipped_templates_come_out_unchanged() -> None:
    plain = "<p style=\"color:#777\">no images <a href=\"https://example.org\">here</a></p>"
    assert without_remote_content(plain) == plain


REMOTE = st.sampled_from(["https://t.example/p.gif", "http://t.example/p", "//t.example/p",
                          " HTTPS://t.example/p"])
LOCAL = st.sampled_from(["cid:logo@x", "data:image/gif;base64,R0lGOD=", "logo.png"])
TAGS = st.sampled_from(["img src", "td background", "video poster", "object data",
                        "img srcset", "body background"])


@given(st.lists(st.tuples(TAGS, st.one_of(REMOTE, LOCAL)), max_size=6),
       st.text(alphabet="abc <>&\"'", max_size=30))
def test_no_remote_content_survives(parts: list[tuple[str, str]], noise: str) -> None:
    html = "".join(f'<{t.split()[0]} {t.split()[1]}="{url}">{noise}' for t, url in parts)
    assert remote_things(without_remote_content(html)) == []


FRAGMENTS = st.sampled_from(["src", "SrcSet", "background", "data", "url(", "URL(", "=", " ",
                             "\t", "'", '"', "https:", "HTTP:", "//", "ftp:", "FTP:", "@import",
                             "@IMPORT", "<link", "<LINK ", "x", "<p>", "h", "ttp:", "/"])


@given(st.lists(FRAGMENTS, max_size=12).map("".join))
def test_the_quick_look_never_passes_what_the_full_look_would_catch(html: str) -> None:
    """may_hold_remote_content is a plain substring test before the regex: any HTML the
    regex finds suspect, it must find suspect too."""
    if _SUSPECT.search(html):
        assert may_hold_remote_content(html)
