"""pbem.mail.idle.IdleWatch on the real Dovecot: woken by arriving mail, IDLE renewed
(RFC 2177; every 29 minutes in serve, every half second here), mail that came while
nobody was idle not missed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pbem.mail.idle import IdleWatch
from pbem.mail.imap import ImapInbox
from testkit.mailstack import MailStack


@contextmanager
def watching(stack: MailStack, renew: float = 60.0) -> Iterator[tuple[IdleWatch, list[float]]]:
    """An IdleWatch on the bluff inbox (emptied first), started; the times it woke."""
    stack.clear("bluff")
    woken: list[float] = []
    stop = threading.Event()
    inbox = ImapInbox(stack.imap_host, stack.imap_port, stack.address("bluff"),
                      stack.password, ssl=False)
    idle = IdleWatch(inbox.connect, "INBOX", lambda: woken.append(time.monotonic()), stop,
                     renew_seconds=renew)
    idle.start()
    try:
        yield idle, woken
    finally:
        stop.set()
        idle.join()


def wait_until(done: object, seconds: float) -> None:
    ends = time.monotonic() + seconds
    while not done():   # type: ignore[operator]
        assert time.monotonic() < ends, f"not within {seconds} s"
        time.sleep(0.02)


def test_arriving_mail_wakes_the_watch_and_idle_is_renewed(mailstack: MailStack) -> None:
    with watching(mailstack, renew=0.5) as (idle, woken):
        wait_until(lambda: woken, 5.0)   # at the start: mail may have come meanwhile
        assert idle.supported
        # renewed, each time on the same login; each IDLE lasts a whole idle_check
        # (CHECK_SECONDS) at least, so three renewals take 3 s or more: 30 s at most
        wait_until(lambda: idle.idles >= 4, 30.0)
        before = len(woken)
        mailstack.deliver("bluff", b"Subject: one\r\n\r\nhi\r\n")
        wait_until(lambda: len(woken) > before, 10.0)
    assert not idle._thread.is_alive()   # type: ignore[union-attr]


def test_arriving_mail_wakes_the_watch_during_its_idle(mailstack: MailStack) -> None:
    """The server's news during the IDLE wakes the watch, not the next IDLE's start:
    its one IDLE lasts a minute here, and the mail is woken for while it still runs. (Timed
    against the clock instead, the wake came 0.5 s after the delivery, Dovecot's delay
    before it tells, and a loaded machine left little of the second that was allowed.)"""
    with watching(mailstack, renew=60.0) as (idle, woken):
        wait_until(lambda: woken and idle.idles == 1, 10.0)   # connected, idle
        mailstack.deliver("bluff", b"Subject: one\r\n\r\nhi\r\n")
        wait_until(lambda: len(woken) == 2, 30.0)
        assert idle.idles == 1   # the first IDLE still: woken by what it was told


def test_nothing_arriving_wakes_nobody(mailstack: MailStack) -> None:
    with watching(mailstack) as (_idle, woken):
        wait_until(lambda: woken, 5.0)
        time.sleep(2.0)
        assert len(woken) == 1
