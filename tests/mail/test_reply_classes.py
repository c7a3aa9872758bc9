"""The three classes of reply that lost a player's order (issue 31), each as a mail reads:
a quote header pbem did not know with the original below it unquoted, Windows Mail's
bordered <div> around the original's header block, and a mobile app's signature read as a
mistyped order."""

from __future__ import annotations

import pytest

from pbem.commands.registry import player_commands
from pbem.mail.newtext import SIGNATURE, new_text
from pbem.mail.read import read_message
from pbem.mail.text import new_text_lines
from pbem.orders.parsing import parse_text

REPORT = """BLUFF BY MAIL -- game g1, turn 1
========================================================================
You are player 1 (Ann).
Deadline: 2026-12-05 12:00 UTC

Bids:
BID 6 threes a number bid, also BID 6 3
Turn Player Bid
1    2      BID 2 fours
"""


def body_lines(text: str) -> list[str]:
    return [line.text for line in new_text_lines(text)]


@pytest.mark.parametrize("header", [
    "pe 20. lokakuuta 2017 klo 17.50 John Coe\n<s.testtesttest.i@test.com> kirjoitti:",
    'In data 11 ottobre 2017 21:11:31 "John Doe - Stripe" <s.test.i@mail.stripe.com> '
    "ha scritto:",
    "ср, 30 апр. 2025 г. в 15:19, John Doe <doe@example.com>:",
    "-------- Oprindelig besked --------\nFra: A B C <abc@abc.org>\n"
    "Dato: 04.07.2024  17.45  (GMT+01:00)\nTil: abc@abc.dk\nEmne: Abc",
    "---- On Wed, 24 Feb 2021 14:02:50 +0530 john@gmail.com wrote ----",
])
def test_an_unknown_quote_header_above_an_unquoted_original_ends_the_new_text(
        header: str) -> None:
    text = f"BID 3 fives\n\n{header}\n\n{REPORT}"
    assert body_lines(text) == ["BID 3 fives"]


WINDOWS_MAIL = """<html><body dir="ltr"><div dir="ltr" style="font-size:12pt;">
<div>BID 3 fives</div><div><br></div>
<div style="padding-top: 5px; border-top-color: rgb(229, 229, 229); border-top-width: 1px;
 border-top-style: solid;"><div><font><b>LABEL_FROM</b>&nbsp;<a href="mailto:b@x.org">Bluff</a>
<br><b>LABEL_SENT</b>&nbsp;4.12.2026 12.05<br><b>LABEL_TO</b>&nbsp;Ann</font></div></div>
<div><br></div><div dir=""><table><tr><th>Turn</th><th>Player</th><th>Bid</th></tr>
<tr><td>1</td><td>2</td><td>BID 2 fours</td></tr></table></div></div></body></html>"""


@pytest.mark.parametrize("style", ["border-top-style: solid", "border:none;border-top:solid"
                                   " #E1E1E1 1.0pt"])
@pytest.mark.parametrize("labels", [("От:", "Отправлено:", "Кому:"),   # as Windows Mail wrote
                                    ("Lähettäjä:", "Lähetetty:", "Vastaanottaja:"),
                                    ("Από:", "Στάλθηκε:", "Προς:")])   # labels unknown here
def test_windows_mail_bordered_div_starts_the_quote(style: str,
                                                     labels: tuple[str, str, str]) -> None:
    html = WINDOWS_MAIL.replace("border-top-style: solid", style)
    for name, label in zip(("LABEL_FROM", "LABEL_SENT", "LABEL_TO"), labels, strict=True):
        html = html.replace(name, label)
    raw = ("From: ann@example.org\r\nTo: bluff@example.org\r\nSubject: Re: turn 1\r\n"
           "Content-Type: text/html; charset=utf-8\r\n\r\n" + html).encode()
    assert [line.text for line in read_message(raw).lines] == ["BID 3 fives"]


def test_a_typeapp_signature_is_no_mistyped_order() -> None:
    raw = (b"From: ann@example.org\r\nTo: bluff@example.org\r\nSubject: Re: turn 1\r\n"
           b"Content-Type: text/plain; charset=utf-8\r\n\r\n"
           b"BID 3 fives\r\n\r\nSent from TypeApp<http://www.typeapp.com/r?b=2621>\r\n")
    msg = read_message(raw)
    parsed = parse_text(msg.lines, player_commands())
    assert not parsed.problems
    assert [o.line for o in parsed.orders] == ["BID 3 fives"]


def test_digits_in_a_prose_line_offer_no_did_you_mean() -> None:
    parsed = parse_text(new_text_lines("Sent it at 10:30\nBID 3 fives"),
                        player_commands())
    assert not parsed.problems and [o.name for o in parsed.orders] == ["BID"]


@pytest.mark.parametrize("line", ["BDI 5 4", "CHALENGE", "EXPSOE 3 3"])
def test_a_mistyped_order_still_refuses_the_mail(line: str) -> None:
    parsed = parse_text(new_text_lines(f"{line}\n"), player_commands())
    assert len(parsed.problems) == 1 and "did you mean" in parsed.problems[0].hint


def test_a_legal_footer_ends_the_text_but_a_sentence_like_one_does_not() -> None:
    footer = ("This email and any attachments are confidential and intended solely for "
              "the addressee.\nBID 9 fives")
    assert body_lines(f"BID 3 fives\n\n{footer}") == ["BID 3 fives"]
    mine = "This message is my order for turn 3, read it please:\nBID 3 fives"
    assert body_lines(mine)[-1] == "BID 3 fives"


@pytest.mark.parametrize("signature", [
    "Sent from my iPhone", "Gesendet von Outlook für Android", "Odesláno z iPhonu",
    "Envoyé de mon iPhone", "Enviado desde mi iPhone", "Inviato da iPhone",
    "Verzonden vanaf mijn iPad", "Skickat från min iPhone", "Sendt fra min iPhone",
    "Wysłane z iPhone'a", "Отправлено с iPhone", "iPhoneから送信",
    "Get Outlook for Android<https://aka.ms/ghei36>", "https://example.org/me",
])
def test_mobile_signatures_and_links_are_no_text(signature: str) -> None:
    found = new_text(f"BID 3 fives\n{signature}\n")
    assert [line.text for line in found.lines] == ["BID 3 fives"]
    assert found.ignored == (SIGNATURE,)
