"""The outbox: mail is queued in the same transaction as the change that
caused it, and a sender drains the queue, retrying with back-off.

Rows are claimed (claimed_by/claimed_at, a lease) a page at a time before
their SMTP hand-off, and each is marked sent right after its own hand-off, one
commit a mail, so a crash in the middle of a drain can repeat at most the mail
in flight on each connection (one with ``connections=1``), and such a mail
carries the same Message-ID both times; two senders never send the same row. The
.eml outbox (Inline) marks the files of a handling transaction with the next
transaction's commit instead: a crash repeats at most one transaction's mails there.
Claims of a process that died are taken over at once (pbem.store.claims.claim_stale).
The mails of a page to one address leave in queue order: the next one goes out,
over whichever connection is free, only once the one before it is handed off.

A send budget ([smtp] per_minute, per_day) caps what a drain or a stream sends,
counted from the outbox table (sent_at) so all workers share it, the most urgent
mail first; a provider's rate-limit answer (4.7.x, "rate limit") stops the drain as
an outage does, no try counted against the mail.

A server that cannot be reached (or says 421) stops the drain without
counting against any mail; a 4xx for a recipient defers that mail with
back-off; a 5xx fails it at once and on_failure is told (Undelivered: a recipient
refused at RCPT or DATA is a bounce, heard as a DSN is), and the other mails go on.

The package, a module a job: queue (compose a mail and queue it in the caller's
transaction), table (due mail, claims, marks, releases), connections (the
threads that hand claimed mail to SMTP), draining (all due mail, a page at a time),
stream (each handling transaction's mail as soon as it commits: Stream over SMTP's
connections, Inline by the tick's own thread for the .eml outbox), workers (the threads a
server keeps for its Streams' connections, from one tick to the next).
"""

from pbem.outbox.connections import Sender
from pbem.outbox.draining import PAGE, drain
from pbem.outbox.queue import LOOP_HEADER, Composed, Origin, compose, enqueue, queue_all
from pbem.outbox.stream import Inline, Stream
from pbem.outbox.table import (
    BUDGET_NOTICE,
    CLAIM_LEASE,
    GIVE_UP_AFTER,
    MAX_ATTEMPTS,
    Budget,
    DrainReport,
    OnFailure,
    OnShort,
    Shortfall,
    Undelivered,
    backoff,
    envelope_sender,
    others_due,
    release,
)
from pbem.outbox.workers import Workers
from pbem.store.work import Queued

__all__ = ["BUDGET_NOTICE", "CLAIM_LEASE", "GIVE_UP_AFTER", "LOOP_HEADER", "MAX_ATTEMPTS", "PAGE",
           "Budget", "OnShort", "Shortfall",
           "DrainReport", "Inline", "OnFailure", "Origin", "Queued", "Sender", "Stream", "backoff", "drain",
           "Undelivered", "Workers", "enqueue", "envelope_sender", "others_due", "release",
           "Composed", "compose", "queue_all"]
