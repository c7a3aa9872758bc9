"""pbem.mail.sent: the text of a mail of ours as a reply may quote it. The bytes compose
writes are read straight for the text part; what the MIME parser reads is the yardstick."""

from __future__ import annotations

from email import message_from_bytes, policy

from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.mail.compose import build_mail
from pbem.mail.sent import TEXT_HEAD_BYTES, _composed_text, sent_texts

texts = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=3000)


@settings(max_examples=60, deadline=None)
@given(texts, st.booleans(), st.integers(0, 20_000))
def test_the_text_read_from_our_bytes_is_what_the_parser_reads(text: str, html: bool,
                                                               padding: int) -> None:
    raw = build_mail(from_addr="bluff@example.org", to_addrs=["p1@example.org"],
                     subject="[bluff g1] turn 2 report", text=text + "\n" + "x" * padding,
                     html="<p>report</p>" if html else None,
                     attachments=[("report.json", "application/json", b"{}" * 4000)],
                     message_id="<m1@example.org>")
    parsed = message_from_bytes(raw, policy=policy.default).get_body(("plain",))
    assert parsed is not None
    want = parsed.get_content()
    fast = _composed_text(raw)
    if fast is None:                      # only when the text is blank
        assert not want.strip()
        return
    # the fast read is the start of the text part (a head of the mail, cut short)
    assert want.replace("\r\n", "\n").startswith(fast.replace("\r\n", "\n")[:-2]) or \
        want.replace("\r\n", "\n") == fast.replace("\r\n", "\n")
    assert len(fast) >= min(len(want), TEXT_HEAD_BYTES // 4)
    first = next(iter(sent_texts(raw)))
    assert first == fast


def test_a_mail_not_laid_out_by_us_is_read_by_the_parser() -> None:
    raw = (b"From: a@b\r\nTo: c@d\r\nSubject: x\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: text/plain; charset=iso-8859-2\r\n"
           b"Content-Transfer-Encoding: 8bit\r\n\r\nP\xf8\xedli\xb9 \xbelu\xbbou\xe8k\xfd k\xf9\xf2\r\n")
    assert _composed_text(raw) is None
    assert list(sent_texts(raw)) == ["Příliš žluťoučký kůň\r\n"]
