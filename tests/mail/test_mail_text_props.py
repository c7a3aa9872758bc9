"""Property tests for pbem.mail.read / pbem.mail.text: totality and the stripping rules."""

from __future__ import annotations

import base64
import quopri

from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.mail.newtext import new_text
from pbem.mail.read import InboundMessage, read_message
from pbem.mail.text import BodyLine, html_to_text, new_text_lines

# --------------------------------------------------------------------------- helpers


def assert_lines_match(lines: list[BodyLine], text: str) -> None:
    all_lines = text.splitlines()
    numbers = [line.number for line in lines]
    assert all(a < b for a, b in zip(numbers, numbers[1:], strict=False)), numbers
    for line in lines:
        assert 1 <= line.number <= len(all_lines)
        assert line.text == all_lines[line.number - 1].rstrip()
        assert line.text.strip()
        assert not line.text.lstrip().startswith(">")


def _encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def assert_well_formed(msg: InboundMessage) -> None:
    assert isinstance(msg, InboundMessage)
    assert_lines_match(msg.lines, msg.text)
    for s in (msg.subject, msg.from_name, msg.text, *(line.text for line in msg.lines)):
        assert isinstance(s, str) and _encodable(s)
    assert "\n" not in msg.subject and "\r" not in msg.subject
    assert "\n" not in msg.from_name
    if msg.from_addr is not None:
        assert msg.from_addr == msg.from_addr.lower() and "@" in msg.from_addr
    if msg.message_id is not None:
        assert not any(c.isspace() for c in msg.message_id)
    for ref in msg.references:
        assert ref.startswith("<") and ref.endswith(">")
    if msg.date is not None:
        assert msg.date.tzinfo is not None
    if not msg.readable:
        assert msg.lines == [] and msg.problem
    assert msg.automatic is None or isinstance(msg.automatic, str)


# --------------------------------------------------------------------------- strategies

INTERESTING_LINES = [
    "BID 6 threes",
    "CHALLENGE",
    "EXPOSE 3 3",
    "> BID 9 5s",
    "  > quoted with indent",
    ">>> deep",
    "-- ",
    "--",
    "",
    "   ",
    "On Mon, Jan 15, 2024 at 10:15 AM Bluff Referee <referee@bluff.example>",
    "wrote:",
    "On 16/01/2024 11:45, Bluff Referee wrote:",
    "Am 17.01.2024 um 18:00 schrieb Bluff Referee <referee@bluff.example>:",
    "Le 18/01/2024 à 08:30, Bluff Referee a écrit :",
    "Referee wrote:",
    "-----Original Message-----",
    "________________________________",
    "From: Bluff Referee <referee@bluff.example>",
    "Sent: Monday, January 15, 2024 10:15 AM",
    "To: Ben",
    "Subject: turn",
    "Begin forwarded message:",
    "---------- Forwarded message ---------",
    "Sent from my iPhone",
]

line_st = st.one_of(st.sampled_from(INTERESTING_LINES), st.text(max_size=40))
# one line each: no line break characters inside (as str.splitlines understands them)
single_line_st = line_st.filter(lambda s: s == "" or s.splitlines() == [s])
text_st = st.builds(
    lambda lines, sep: sep.join(lines),
    st.lists(line_st, max_size=30),
    st.sampled_from(["\n", "\r\n", "\r"]),
)

HEADER_NAMES = [
    "From", "To", "Cc", "Reply-To", "Subject", "Date", "Message-ID", "In-Reply-To",
    "References", "Return-Path", "Auto-Submitted", "Precedence", "X-Autoreply", "List-Id",
    "List-Unsubscribe", "X-Pbem-Loop", "MIME-Version", "Content-Type",
    "Content-Transfer-Encoding", "Content-Disposition", "X-Garbage",
]
PLAUSIBLE_VALUES = [
    b"Anna <anna@example.org>",
    b"=?utf-8?q?J=C3=BCrgen?= <J@Example.ORG>",
    b"=?utf-8?b?////?=",
    b"=?x-unknown?q?abc=ff?=",
    b"<>",
    b"<abc@example.org>",
    b"<a@x> <b@y>\n <c@z>",
    b"Mon, 15 Jan 2024 10:00:00 +0100",
    b"Mon, 99 Foo 99999 99:99:99 +9999",
    b"auto-replied",
    b"no",
    b"bulk",
    b"text/plain; charset=utf-8",
    b"text/plain; charset=x-klingon",
    b"text/html; charset=windows-1252",
    b"multipart/mixed; boundary=b1",
    b"multipart/report; report-type=delivery-status; boundary=b1",
    b"base64",
    b"quoted-printable",
    b"attachment; filename*=utf-8''%C3%A4.txt",
    b'"unterminated <x@y',
    b"\xff\xfe\xfd",
]
header_value_st = st.one_of(
    st.sampled_from(PLAUSIBLE_VALUES),
    st.binary(max_size=60),
    st.text(max_size=40).map(lambda s: s.encode("utf-8", "surrogatepass")),
)
headers_st = st.lists(st.tuples(st.sampled_from(HEADER_NAMES), header_value_st), max_size=12)

LEAF_TYPES = [
    "text/plain",
    "text/plain; charset=utf-8",
    "text/plain; charset=utf-8; format=flowed",
    "text/plain; charset=iso-8859-1",
    "text/plain; charset=x-unknown",
    "text/plain; charset=base64",
    "text/html; charset=utf-8",
    "text/html",
    "image/png",
    "application/pdf",
    "message/rfc822",
    "message/delivery-status",
]
body_st = st.one_of(
    st.binary(max_size=200),
    text_st.map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.lists(st.sampled_from(["<p>BID 6 threes</p>", "<blockquote>BID 9 5s</blockquote>",
                              "<script>x()</script>", "<br>", "&amp;", "<div>"]), max_size=8)
    .map(lambda xs: "".join(xs).encode()),
)


@st.composite
def leaf_part(draw: st.DrawFn) -> bytes:
    ctype = draw(st.sampled_from(LEAF_TYPES))
    cte = draw(st.sampled_from(["", "base64", "quoted-printable", "8bit", "x-uuencode", "bogus"]))
    disp = draw(st.sampled_from(["", "attachment", "inline", 'attachment; filename="a.txt"']))
    body = draw(body_st)
    if cte == "base64" and draw(st.booleans()):
        body = base64.encodebytes(body)
    elif cte == "quoted-printable" and draw(st.booleans()):
        body = quopri.encodestring(body)
    head = b"Content-Type: " + ctype.encode() + b"\n"
    if cte:
        head += b"Content-Transfer-Encoding: " + cte.encode() + b"\n"
    if disp:
        head += b"Content-Disposition: " + disp.encode() + b"\n"
    return head + b"\n" + body


def multipart(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        sub = draw(st.sampled_from(["mixed", "alternative", "related", "report", "signed"]))
        boundary = draw(st.sampled_from([b"b1", b"b2", b"=_x", b"--", b"b1"]))
        kids = draw(st.lists(children, max_size=4))
        out = b"Content-Type: multipart/" + sub.encode() + b'; boundary="' + boundary + b'"\n\n'
        out += draw(st.sampled_from([b"", b"preamble\n"]))
        for kid in kids:
            out += b"--" + boundary + b"\n" + kid + b"\n"
        if draw(st.booleans()):
            out += b"--" + boundary + b"--\n"
        return out

    return build()


part_st = st.recursive(leaf_part(), multipart, max_leaves=8)


@st.composite
def message_st(draw: st.DrawFn) -> bytes:
    headers = draw(headers_st)
    raw = b"".join(name.encode() + b": " + value + b"\n" for name, value in headers)
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    raw += draw(st.one_of(part_st, body_st.map(lambda b: b"\n" + b)))
    return raw.replace(b"\n", eol) if eol != b"\n" else raw


# --------------------------------------------------------------------------- read_message


@given(st.binary(max_size=3000))
def test_read_message_total_on_arbitrary_bytes(raw: bytes) -> None:
    assert_well_formed(read_message(raw))


@settings(max_examples=200, deadline=None)
@given(
    message_st(),
    st.sampled_from([None, "", "MAILER-DAEMON@x", "anna@example.org"]),
    st.sampled_from([None, "bluff.example"]),
)
def test_read_message_total_on_random_mime(
    raw: bytes, envelope_from: str | None, loop_value: str | None
) -> None:
    msg = read_message(
        raw,
        own_addresses=["referee@bluff.example"],
        envelope_from=envelope_from,
        loop_value=loop_value,
    )
    assert_well_formed(msg)


@settings(deadline=None)
@given(text_st)
def test_plain_body_lines_are_the_new_text_of_the_body(body: str) -> None:
    raw = (
        b"From: Anna <anna@example.org>\nMIME-Version: 1.0\n"
        b"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
        + base64.encodebytes(body.encode("utf-8", "surrogatepass"))
    )
    msg = read_message(raw)
    assert_well_formed(msg)
    if msg.readable:
        assert msg.text.split("\n") == body.lstrip("\ufeff").splitlines()
        assert msg.lines == new_text_lines(msg.text)


# --------------------------------------------------------------------------- new_text_lines


@given(text_st)
def test_new_text_lines_consistent_and_unquoted(text: str) -> None:
    lines = new_text_lines(text)
    assert_lines_match(lines, text)


@given(text_st, st.integers(-3, 40), st.integers(-3, 40))
def test_a_quote_span_blanks_its_lines_and_no_other(text: str, start: int, end: int) -> None:
    """new_text with the span of a quote of ours (pbem.mail.quotecut), whatever span: no
    line in it is read, every line read is the text's line of its number, and the lines
    are those of the text with the span's lines blanked (a span that ends before it
    starts, or past the text, blanks what it covers and moves no line). Lines the
    caller split already are read as the text's own."""
    found = new_text(text, (start, end))
    assert_lines_match(found.lines, text)
    rows = text.splitlines()
    first = max(0, start)
    assert not any(first < line.number <= end for line in found.lines)
    blanked = "\n".join("" if first <= i < end else row for i, row in enumerate(rows))
    assert found.lines == new_text(blanked).lines
    assert new_text(text, (start, end), lines=rows) == found


@given(
    st.lists(single_line_st, max_size=15),
    st.lists(line_st, max_size=15),
    st.sampled_from(["-- ", "--", "-- \t"]),
)
def test_nothing_after_signature_separator(before: list[str], after: list[str], sep: str) -> None:
    text = "\n".join([*before, sep, *after])
    sep_number = len(before) + 1
    assert text.splitlines()[sep_number - 1] == sep
    assert all(line.number < sep_number for line in new_text_lines(text))


@given(st.lists(single_line_st, max_size=15))
def test_quoted_lines_never_kept(lines: list[str]) -> None:
    text = "\n".join("> " + line for line in lines)
    assert new_text_lines(text) == []


@given(st.text())
def test_new_text_lines_total_on_any_text(text: str) -> None:
    assert_lines_match(new_text_lines(text), text)


# --------------------------------------------------------------------------- html_to_text

SECRET = "ZqSECRETqZ"
html_token_st = st.one_of(
    st.sampled_from(
        [
            "<p>", "</p>", "<div>", "</div>", "<br>", "<br/>", "<b>", "</b>", "<li>", "</li>",
            "<blockquote>", "</blockquote>", "<blockquote type='cite'>", "<pre>", "</pre>",
            "<table><tr><td>", "</td><td>", "</td></tr></table>", "&amp;", "&nbsp;", "&lt;",
            "&#x3e;", "<!-- a comment -->", "<div class='gmail_quote'>", "<div id='appendonsend'>",
            "<span style='x'>", "</span>", "<head>", "</head>", "<body>", "</body>",
        ]
    ),
    st.sampled_from(
        [
            f"<script>{SECRET}</script>",
            f"<script type='text/javascript'>var a = '<p>{SECRET}</p>';</script>",
            f"<SCRIPT>{SECRET}</SCRIPT >",
            f"<style>.a {{ content: '{SECRET}' }}</style>",
            f"<script>{SECRET}",  # unclosed script swallows the rest
        ]
    ),
    st.text(alphabet=st.characters(exclude_characters="<>&Z"), max_size=20),
)


@settings(deadline=None)
@given(st.lists(html_token_st, max_size=40))
def test_html_to_text_never_yields_script_content(tokens: list[str]) -> None:
    out = html_to_text("".join(tokens))
    assert isinstance(out, str)
    assert SECRET not in out


@settings(deadline=None)
@given(st.text(max_size=500))
def test_html_to_text_total_on_any_text(html: str) -> None:
    out = html_to_text(html)
    assert isinstance(out, str)
    assert_lines_match(new_text_lines(out), out)


@settings(deadline=None)
@given(st.lists(html_token_st, max_size=40))
def test_html_blockquote_content_is_quoted(tokens: list[str]) -> None:
    html = "".join(tokens) + "<blockquote>ZQUOTEDZ</blockquote>"
    out = html_to_text(html)
    assert all("ZQUOTEDZ" not in line.text for line in new_text_lines(out))
