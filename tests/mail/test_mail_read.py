"""Example tests for pbem.mail.read over a corpus of realistic inbound mails."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pbem.mail.read import BodyLine, InboundMessage, read_message
from pbem.mail.text import html_to_text, new_text_lines

CORPUS = Path(__file__).parents[1] / "corpus"


def load(name: str, **kwargs: object) -> InboundMessage:
    return read_message((CORPUS / name).read_bytes(), **kwargs)  # type: ignore[arg-type]


def kept(msg: InboundMessage) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in msg.lines]


def assert_consistent(msg: InboundMessage) -> None:
    """Every kept line is that line of the extracted text, numbers strictly increase."""
    all_lines = msg.text.splitlines()
    numbers = [line.number for line in msg.lines]
    assert numbers == sorted(set(numbers))
    for line in msg.lines:
        assert line.text == all_lines[line.number - 1].rstrip()
        assert line.text.strip()


def test_corpus_has_enough_messages() -> None:
    assert len(list(CORPUS.glob("*.eml"))) >= 15


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.eml")), ids=lambda p: p.name)
def test_every_corpus_message_is_consistent(path: Path) -> None:
    msg = read_message(path.read_bytes())
    assert_consistent(msg)
    assert all(not line.text.lstrip().startswith(">") for line in msg.lines)
    # quoted turn reports never leak into the new text
    assert not any("BID 9 5s" in line.text or "BID 99" in line.text for line in msg.lines)


# --------------------------------------------------------------------------- plain mails


def test_plain_order_mail() -> None:
    msg = load("01_plain_order.eml")
    assert msg.message_id == "<20240115091240.GA1234@example.org>"
    assert msg.from_addr == "anna.berg@example.org"
    assert msg.from_name == "Anna Berg"
    assert msg.reply_to is None
    assert msg.subject == "Game 7 orders"
    assert msg.in_reply_to is None
    assert msg.references == []
    assert msg.date == datetime(2024, 1, 15, 9, 12, 40, tzinfo=UTC)
    assert msg.automatic is None
    assert msg.readable is True
    assert msg.problem is None
    # trailing blanks stripped, blank lines dropped, original numbers kept
    assert kept(msg) == [(1, "Hi referee,"), (3, "BID 6 threes"), (5, "Anna")]


def test_plain_mail_with_crlf_line_endings() -> None:
    msg = load("01b_plain_crlf.eml")
    assert msg.from_addr == "ben@example.net"
    assert msg.from_name == ""
    assert kept(msg) == [(1, "CHALLENGE"), (3, "EXPOSE 3 3")]


# --------------------------------------------------------------------------- replies


def test_gmail_reply_drops_wrapped_attribution_and_quoted_report() -> None:
    msg = load("02_gmail_reply.eml")
    assert msg.from_addr == "chloe.dubois@gmail.com"
    assert msg.in_reply_to == "<turn-12.game-7@bluff.example>"
    assert msg.references == ["<turn-12.game-7@bluff.example>"]
    assert msg.message_id == "<CAJx8V5Ngm2xPx7Q=Jk+zq3QUs0r1s_QyBq+7cZ0WcR4aY1+8Kg@mail.gmail.com>"
    # the text/plain alternative is the one read
    assert msg.text.splitlines()[3] == "wrote:"
    assert kept(msg) == [(1, "BID 10 5s")]
    assert msg.problem is None


def test_gmail_html_alternative_alone_gives_the_same_order() -> None:
    raw = (CORPUS / "02_gmail_reply.eml").read_bytes()
    html = raw.split(b'Content-Type: text/html; charset="UTF-8"\n\n')[1].split(b"\n--0000")[0]
    assert [line.text for line in new_text_lines(html_to_text(html.decode()))] == ["BID 10 5s"]


def test_outlook_reply_text_part_with_underscore_header_block() -> None:
    msg = load("03_outlook_reply_text.eml")
    assert msg.subject == "RE: [Bluff #7] Turn 12: your move"
    assert kept(msg) == [(1, "CHALLENGE"), (3, "Thanks,"), (4, "Ben")]


def test_outlook_html_only_reply_cut_at_divRplyFwdMsg() -> None:
    msg = load("04_outlook_html_only.eml")
    assert msg.from_name == "Okafor, Ben"
    assert msg.from_addr == "ben.okafor@contoso.example"
    # &nbsp; becomes a space, iso-8859-1 QP decodes, the style block is not text
    assert kept(msg) == [(1, "EXPOSE 3 3"), (2, "BID 7 sixes"), (4, "Grüße, Ben")]
    assert "Referee" not in msg.text
    assert "Chloe" not in msg.text


def test_outlook_original_message_separator() -> None:
    msg = load("05_outlook_original_message.eml")
    assert kept(msg) == [(1, "BID 11 5s")]


def test_outlook_bare_localized_header_block() -> None:
    msg = load("05b_outlook_bare_header_block.eml")
    assert kept(msg) == [(1, "CHALLENGE")]


def test_apple_mail_reply_quoted_attribution_and_mobile_signature() -> None:
    msg = load("06_apple_mail_reply.eml")
    assert msg.message_id == "<9A8B7C6D-5E4F-4A3B-8C2D-1E0F9A8B7C6D@icloud.example>"
    assert kept(msg) == [(1, "I\u2019m feeling lucky."), (2, "BID 12 sixes")]
    assert msg.text.splitlines()[3] == "Sent from my iPhone"


def test_thunderbird_bottom_post_flowed_with_signature() -> None:
    msg = load("07_thunderbird_reply_sig.eml")
    assert kept(msg) == [
        (5, "Hmm, twelve sixes with fifteen dice on the table is a lot. I don't believe it, so"),
        (7, "CHALLENGE"),
    ]
    # the signature (with its fake order) is in the text but not kept
    assert "BID 99 sixes is my motto" in msg.text.splitlines()


def test_german_client_attribution_wrapped() -> None:
    msg = load("08_german_client.eml")
    assert msg.from_name == "Jürgen Müller"
    assert msg.subject == "Re: [Bluff #7] Zug 18: Du bist dran"
    assert msg.references == ["<turn-17.game-7@bluff.example>", "<turn-18.game-7@bluff.example>"]
    assert kept(msg) == [
        (1, "Hallo Schiedsrichter,"),
        (3, "BID 13 fives"),
        (5, "Viele Grüße"),
        (6, "Jürgen"),
    ]


def test_french_attribution_in_latin1_mail() -> None:
    msg = load("12_iso_8859_1.eml")
    assert msg.from_name == "Françoise Lévesque"
    assert msg.subject == "Re : [Bluff #7] Tour 22"  # no-break space normalised
    assert kept(msg) == [(1, "Très bien."), (2, "BID 16 sixes")]


def test_spanish_gmail_attribution_and_rfc2047_headers() -> None:
    msg = load("21_rfc2047_headers.eml")
    assert msg.from_name == "Álvaro Gómez"
    assert msg.from_addr == "alvaro@correo.example"
    assert msg.reply_to == "alvaro.games@correo.example"
    assert msg.subject == "Re: [Bluff #7] Turno 32 — ¡mi turno! — \U0001f3b2"
    assert "\n" not in msg.subject
    assert msg.in_reply_to == "<turn-32.game-7@bluff.example>"
    assert msg.references == [
        "<turn-30.game-7@bluff.example>",
        "<turn-31.game-7@bluff.example>",
        "<turn-32.game-7@bluff.example>",
    ]
    assert kept(msg) == [(1, "BID 21 sixes")]


def test_apple_forwarded_message_is_dropped() -> None:
    msg = load("22_apple_forward.eml")
    assert kept(msg) == [
        (1, "Forwarding this because I never got it the first time. My move:"),
        (3, "CHALLENGE"),
    ]


# --------------------------------------------------------------------------- HTML and encodings


def test_html_only_mail() -> None:
    msg = load("09_html_only.eml")
    assert msg.readable
    assert kept(msg) == [
        (1, "My orders:"),
        (2, 'BID 14 "fives"'),
        (3, "EXPOSE 5 5"),
        (4, "Fish & chips later?"),
        (5, "Dice 5 5 2"),
    ]
    for hidden in ("BID 50 ones", "BID 77 twos", "CHALLENGE", "BID 88 threes", "Jürgen"):
        assert hidden not in msg.text


def test_base64_body() -> None:
    msg = load("10_base64_body.eml")
    assert kept(msg) == [(1, "BID 14 sixes"), (3, "Cheers,"), (4, "Anna \u2013 from the train")]


def test_quoted_printable_soft_line_breaks() -> None:
    msg = load("11_quoted_printable.eml")
    assert kept(msg) == [
        (
            1,
            "This is a rather long line that my mail program wraps with a soft line break, "
            "and then goes on for a while longer than seventy-six characters.",
        ),
        (2, "BID 15 sixes"),
        (3, "Price: 5 € = cheap"),
        (4, "EXPOSE 6 6"),
    ]


def test_windows_1252_body() -> None:
    msg = load("13_windows_1252.eml")
    assert kept(msg) == [
        (1, "\u201cCHALLENGE\u201d \u2013 that\u2019s 5\u20ac you owe me"),
        (2, "CHALLENGE"),
    ]
    assert msg.problem is None


def test_unknown_charset_with_undecodable_bytes() -> None:
    msg = load("14_unknown_charset.eml")
    assert msg.readable
    assert kept(msg) == [(1, "BID 17 sixes"), (2, "Grüße ÿþ\x81")]
    assert msg.problem is not None and "x-klingon-8" in msg.problem


def test_undeclared_charset_8bit_body() -> None:
    msg = load("14b_undeclared_8bit.eml")
    assert kept(msg)[0] == (1, "EXPOSE 2 2")
    assert kept(msg)[1][1].startswith("Naïve café")


# --------------------------------------------------------------------------- MIME structure


def test_big_attachment_is_ignored_and_order_read() -> None:
    raw = (CORPUS / "17_big_attachment.eml").read_bytes()
    assert len(raw) > 1_000_000
    msg = read_message(raw)
    assert kept(msg) == [
        (1, "Here is the scan of the house rules we talked about."),
        (3, "BID 18 sixes"),
    ]
    assert msg.problem == "1 attachment was ignored: house-rules.pdf (application/pdf)."


def test_nested_mixed_alternative_related_prefers_text_plain() -> None:
    msg = load("18_nested_mixed_alternative_related.eml")
    assert kept(msg) == [(1, "EXPOSE 6 6 6"), (3, "Photo of my dice attached :)")]
    # the inline image of the HTML body is not worth mentioning, the .txt attachment is
    assert msg.problem == "1 attachment was ignored: old-report.txt (text/plain)."


def test_html_inside_related_when_only_text_part_is_an_attachment() -> None:
    msg = load("18b_html_in_related_after_text_attachment.eml")
    assert kept(msg) == [(1, "BID 19 sixes")]
    assert msg.problem == "1 attachment was ignored: old-report.txt (text/plain)."


def test_image_only_mail_is_not_readable() -> None:
    msg = load("19_image_only.eml")
    assert msg.readable is False
    assert msg.lines == []
    assert msg.problem is not None
    assert "no text" in msg.problem
    assert "IMG_0042.jpeg" in msg.problem
    assert msg.from_addr == "anna.berg@icloud.example"


def test_missing_from() -> None:
    msg = load("20_missing_from.eml")
    assert msg.from_addr is None
    assert msg.from_name == ""
    assert msg.automatic is None
    assert kept(msg) == [(1, "BID 20 sixes")]


# --------------------------------------------------------------------------- automatic mail


def test_dsn_bounce_from_mailer_daemon() -> None:
    msg = load("15_dsn_bounce.eml")
    assert msg.automatic == "bounce"
    assert msg.from_addr == "mailer-daemon@mx.bluff.example"
    # the human-readable part is read; the returned original is not
    assert msg.readable
    assert kept(msg)[0] == (1, "This is the mail system at host mx.bluff.example.")
    assert "BID 17 sixes" not in msg.text


def test_out_of_office_auto_replied() -> None:
    msg = load("16_out_of_office.eml")
    assert msg.automatic == "auto-submitted"
    assert kept(msg) == [(1, "I am out of the office until 22 January with no access to e-mail.")]


def test_list_mail() -> None:
    assert load("23_mailing_list_digest.eml").automatic == "precedence: list"


def test_human_mail_is_not_automatic() -> None:
    for name in ("01_plain_order.eml", "02_gmail_reply.eml", "07_thunderbird_reply_sig.eml"):
        assert load(name).automatic is None


BASE = b"From: Anna <anna@example.org>\nTo: referee@bluff.example\nSubject: x\n"


@pytest.mark.parametrize(
    ("extra", "kwargs", "reason"),
    [
        (b"", {"envelope_from": ""}, "null sender"),
        (b"Return-Path: <>\n", {}, "null sender"),
        (b"Auto-Submitted: auto-generated\n", {}, "auto-submitted"),
        (b"Auto-Submitted: no\n", {}, None),
        (b"Precedence: bulk\n", {}, "precedence: bulk"),
        (b"Precedence: junk\n", {}, "precedence: junk"),
        (b"Precedence: first-class\n", {}, None),
        (b"X-Autoreply: yes\n", {}, "autoreply"),
        (b"X-Autorespond: on vacation\n", {}, "autoreply"),
        (b"List-Id: <players.lists.example>\n", {}, "list"),
        (b"List-Unsubscribe: <mailto:leave@lists.example>\n", {}, "list"),
        (b"X-Pbem-Loop: bluff.example\n", {}, "loop"),
        (b"X-Pbem-Loop: bluff.example\n", {"loop_value": "bluff.example"}, "loop"),
        (b"X-Pbem-Loop: other.example\n", {"loop_value": "bluff.example"}, None),
        (b"X-Bluff: 1\n", {"loop_header": "X-Bluff"}, "loop"),
        (b"", {"own_addresses": ["ANNA@example.org"]}, "own address"),
        (b"", {"envelope_from": "MAILER-DAEMON@mx.example"}, "mailer-daemon"),
        (b"", {"envelope_from": "anna@example.org"}, None),
        (b"", {}, None),
    ],
)
def test_automatic_detection(extra: bytes, kwargs: dict[str, object], reason: str | None) -> None:
    msg = read_message(BASE + extra + b"\nBID 6 threes\n", **kwargs)  # type: ignore[arg-type]
    assert msg.automatic == reason
    assert kept(msg) == [(1, "BID 6 threes")]


def test_postmaster_from_and_read_receipt() -> None:
    msg = read_message(b"From: postmaster@example.org\n\nhello\n")
    assert msg.automatic == "mailer-daemon"
    mdn = (
        b"From: anna@example.org\nContent-Type: multipart/report; "
        b"report-type=disposition-notification; boundary=b\n\n--b\nContent-Type: text/plain\n\n"
        b"Your message was displayed.\n--b\nContent-Type: message/disposition-notification\n\n"
        b"Disposition: manual-action/MDN-sent-manually; displayed\n--b--\n"
    )
    msg = read_message(mdn)
    assert msg.automatic == "read receipt"
    assert kept(msg) == [(1, "Your message was displayed.")]


# --------------------------------------------------------------------------- headers, robustness


def test_date_without_zone_is_utc_and_garbage_date_is_none() -> None:
    msg = read_message(b"Date: Mon, 15 Jan 2024 10:00:00 -0000\n\nx\n")
    assert msg.date == datetime(2024, 1, 15, 10, 0, tzinfo=UTC)
    msg = read_message(b"Date: Mon, 15 Jan 2024 10:00:00 +0530\n\nx\n")
    assert msg.date is not None and msg.date.utcoffset() == timedelta(hours=5, minutes=30)
    assert read_message(b"Date: yesterday-ish\n\nx\n").date is None


def test_message_id_whitespace_and_comments() -> None:
    msg = read_message(
        b"Message-ID:  < abc@example.org > \nIn-Reply-To: <r1@bluff.example> (Referee's mail)"
        b"\nReferences: <a@x>\n  <b@y> junk\n\nx\n"
    )
    assert msg.message_id == "<abc@example.org>"
    assert msg.in_reply_to == "<r1@bluff.example>"
    assert msg.references == ["<a@x>", "<b@y>"]


def test_unparseable_from() -> None:
    msg = read_message(b"From: not an address at all\n\nx\n")
    assert msg.from_addr is None


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\xff\xfe garbage",
        b"From: a@b.c\nSubject: header only\n",
        b"Content-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: multipart/alternative; "
        b"boundary=y\n\n--y\nContent-Type: text/plain\n\n",
        b"Content-Type: text/plain; charset=base64\n\nhi\n",
        b"Content-Type: text/plain; charset=\"\xff\xfe\"\n\n\xe4\n",
        b"Content-Transfer-Encoding: base64\n\n!!!not base64===\n",
        b"Subject: =?utf-8?b?////?=\nFrom: =?x-unknown?q?abc?= <\xff@x.y>\n\nhi\n",
        b"From: \"unterminated <x@y\nTo: ,,,,<<<>>>\nDate: 99 Foo 99999\n\nhi\n",
        b"\n".join(b"Received: from x by y; Mon, 15 Jan 2024 10:00:00 +0000" for _ in range(500)),
    ],
)
def test_broken_input_does_not_raise(raw: bytes) -> None:
    msg = read_message(raw)
    assert isinstance(msg, InboundMessage)
    assert_consistent(msg)


def test_header_only_mail_is_unreadable() -> None:
    msg = read_message(b"From: a@b.c\nSubject: BID 6 threes\n")
    assert msg.readable is False
    assert msg.problem is not None
    assert msg.subject == "BID 6 threes"


def test_deeply_nested_multiparts_are_capped() -> None:
    def nested(n: int) -> bytes:
        out = b"From: a@b.c\nMIME-Version: 1.0\n"
        for i in range(n):
            out += b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i)
        out += b"Content-Type: text/plain\n\nBID 6 threes\n"
        for i in reversed(range(n)):
            out += b"--b%d--\n" % i
        return out

    assert kept(read_message(nested(5))) == [(1, "BID 6 threes")]
    deep = read_message(nested(60))
    assert deep.readable is False
    assert deep.problem is not None and "nested" in deep.problem
    assert read_message(nested(400)).readable is False  # must not blow the stack


def test_ten_thousand_lines() -> None:
    body = b"".join(b"> old line %d\nBID %d threes\n" % (i, i) for i in range(5000))
    msg = read_message(b"From: a@b.c\n\n" + body)
    assert len(msg.lines) == 5000
    assert msg.lines[0] == BodyLine(2, "BID 0 threes")
    assert msg.lines[-1] == BodyLine(10000, "BID 4999 threes")


def test_broken_multipart_without_boundary_read_as_text() -> None:
    msg = read_message(b"Content-Type: multipart/mixed\n\nBID 1 2s\n")
    assert kept(msg) == [(1, "BID 1 2s")]
    assert msg.problem is not None and "broken" in msg.problem


def test_empty_text_part_falls_back_to_html() -> None:
    raw = (
        b"From: a@b.c\nContent-Type: multipart/alternative; boundary=q\n\n--q\n"
        b"Content-Type: text/plain\n\n\n--q\nContent-Type: text/html\n\n<p>BID 3 4s</p>\n--q--\n"
    )
    assert kept(read_message(raw)) == [(1, "BID 3 4s")]


# --------------------------------------------------------------------------- text helpers


def lines_of(text: str) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in new_text_lines(text)]


def test_new_text_interleaved_reply_keeps_own_lines() -> None:
    text = "On Mon, 1 Jan 2024, Ref wrote:\n> BID 9 5s\nCHALLENGE\n> more\n\nthanks\n"
    assert lines_of(text) == [(3, "CHALLENGE"), (6, "thanks")]


def test_new_text_attribution_followed_by_unquoted_original_cuts() -> None:
    text = "BID 6 threes\nOn Mon, 1 Jan 2024 at 10:00, Ref <r@x> wrote:\n\nGame 7\nBID 9 5s\n"
    assert lines_of(text) == [(1, "BID 6 threes")]


def test_new_text_weak_attribution_only_before_quotes() -> None:
    assert lines_of("Ref wrote:\n> BID 9 5s\nEXPOSE 3\n") == [(3, "EXPOSE 3")]
    # "wrote:" in the player's own text without a quote after it stays
    assert lines_of("Here is what I wrote:\nBID 6 threes\n") == [
        (1, "Here is what I wrote:"),
        (2, "BID 6 threes"),
    ]


def test_new_text_signature_separators() -> None:
    assert lines_of("BID 6 threes\n-- \nAnna\nBID 99 sixes\n") == [(1, "BID 6 threes")]
    assert lines_of("BID 6 threes\n--\nAnna\n") == [(1, "BID 6 threes")]
    # '---' is not a separator
    assert lines_of("BID 6 threes\n---\nAnna\n") == [(1, "BID 6 threes"), (2, "---"), (3, "Anna")]


def test_new_text_from_line_alone_is_kept() -> None:
    assert lines_of("From: the desk of Anna\nBID 6 threes\n") == [
        (1, "From: the desk of Anna"),
        (2, "BID 6 threes"),
    ]


def test_html_to_text_basics() -> None:
    html = (
        "<html><head><style>p{}</style><script>alert('BID 1 1s')</script></head><body>"
        "<p>BID&nbsp;6 &amp; threes</p><div>a<br>b</div><ul><li>one</li><li>two</li></ul>"
        "<table><tr><td>x</td><td>y</td></tr></table>"
        "<blockquote type='cite'>quoted<blockquote>deeper</blockquote></blockquote>"
        "<pre>  keep\n  spaces</pre></body></html>"
    )
    assert html_to_text(html).splitlines() == [
        "BID 6 & threes",
        "a",
        "b",
        "one",
        "two",
        "x y",
        "> quoted",
        "> > deeper",
        "  keep",
        "  spaces",
    ]


def test_html_to_text_indent_blockquote_is_own_text() -> None:
    html = (
        '<div>hi</div><blockquote style="margin:0 0 0 40px;border:none;padding:0px">'
        "<div>BID 6 threes</div></blockquote>"
    )
    assert html_to_text(html).splitlines() == ["hi", "BID 6 threes"]


def test_html_to_text_outlook_markers_cut_everything_after() -> None:
    html = (
        "<div>CHALLENGE</div><div id='appendonsend'></div><hr>"
        "<div>From: Ref</div><div>BID 9 5s</div>"
    )
    assert html_to_text(html) == "CHALLENGE"
    html = (
        "<div><div>BID 6 threes</div><div id='divRplyFwdMsg'>From: Ref</div></div>"
        "<p>BID 9 5s</p>"
    )
    assert html_to_text(html) == "BID 6 threes"


def test_html_to_text_gmail_quote_dropped() -> None:
    html = (
        '<div dir="ltr">EXPOSE 4</div><div class="gmail_quote gmail_quote_container">'
        '<div class="gmail_attr">On ... wrote:</div>'
        '<blockquote class="gmail_quote">BID 9 5s</blockquote></div>'
    )
    assert html_to_text(html) == "EXPOSE 4"


def test_inline_named_text_file_is_only_a_last_resort() -> None:
    named = (
        b'Content-Type: text/plain; name="orders.txt"\n'
        b'Content-Disposition: inline; filename="orders.txt"\n\nBID 4 5s\n'
    )
    raw = b"From: a@b.c\nContent-Type: multipart/mixed; boundary=z\n\n--z\n" + named + b"--z--\n"
    msg = read_message(raw)
    assert kept(msg) == [(1, "BID 4 5s")]
    raw = (
        b"From: a@b.c\nContent-Type: multipart/mixed; boundary=z\n\n--z\n" + named
        + b"--z\nContent-Type: text/plain\n\nCHALLENGE\n--z--\n"
    )
    msg = read_message(raw)
    assert kept(msg) == [(1, "CHALLENGE")]
    assert msg.problem == "1 attachment was ignored: orders.txt (text/plain)."


def test_pgp_signed_mail_reads_text_without_noise() -> None:
    raw = (
        b"From: a@b.c\nContent-Type: multipart/signed; micalg=pgp-sha256; "
        b'protocol="application/pgp-signature"; boundary=s\n\n--s\n'
        b"Content-Type: text/plain; charset=utf-8\n\nBID 6 threes\n--s\n"
        b'Content-Type: application/pgp-signature; name="signature.asc"\n\n'
        b"-----BEGIN PGP SIGNATURE-----\nxyz\n-----END PGP SIGNATURE-----\n--s--\n"
    )
    msg = read_message(raw)
    assert kept(msg) == [(1, "BID 6 threes")]
    assert msg.problem is None


def test_encrypted_mail_is_unreadable_with_a_reason() -> None:
    raw = (
        b"From: a@b.c\nContent-Type: multipart/encrypted; "
        b'protocol="application/pgp-encrypted"; boundary=e\n\n--e\n'
        b"Content-Type: application/pgp-encrypted\n\nVersion: 1\n--e\n"
        b'Content-Type: application/octet-stream; name="encrypted.asc"\n\n'
        b"-----BEGIN PGP MESSAGE-----\nabc\n-----END PGP MESSAGE-----\n--e--\n"
    )
    msg = read_message(raw)
    assert msg.readable is False
    assert msg.problem is not None and "encrypted" in msg.problem


def test_classic_outlook_word_html_header_block() -> None:
    html = (
        '<div class="WordSection1"><p class="MsoNormal">BID 8 twos<o:p></o:p></p>'
        '<p class="MsoNormal"><o:p>&nbsp;</o:p></p>'
        '<div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm">'
        '<p class="MsoNormal"><b>From:</b> Bluff Referee &lt;referee@bluff.example&gt;<br>'
        "<b>Sent:</b> Monday, January 15, 2024 10:15 AM<br><b>To:</b> Ben<br>"
        "<b>Subject:</b> [Bluff #7] Turn 12<o:p></o:p></p></div>"
        '<p class="MsoNormal">Ben: BID 9 5s<o:p></o:p></p></div>'
    )
    text = html_to_text(html)
    assert text.splitlines()[1] == "From: Bluff Referee <referee@bluff.example>"
    assert lines_of(text) == [(1, "BID 8 twos")]
