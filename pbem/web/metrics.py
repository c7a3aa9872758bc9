"""``/metrics``: the server's figures (pbem.services.health) for Prometheus, read at each scrape.

The web runs apart from `pbem serve`, so nothing is counted in its memory: each scrape
reads the database once (one read-only transaction) and says what it found. Queue
depths and ages are gauges; what only grows (mails stored, handled, queued, sent;
errors by kind) are counters, counted from the tables, so a restart of any process
never sets them back. The handling time (a mail's arrival to its handling) is of the
last mails handled (pbem.services.health.RECENT_MAILS), as quantile gauges: a window, not a
histogram whose buckets would have to be counted since the start. docs/monitoring.md
lists the metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pbem.services.health import QUANTILES, Status

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NAN = float("nan")


def _timestamp(when: datetime | None) -> float:
    return NAN if when is None else when.timestamp()


def _age(status: Status, when: datetime | None) -> float:
    age = status.age(when)
    return NAN if age is None else age


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _labelled(kind: Any, name: str, doc: str, label: str,
              values: dict[str, int]) -> Metric:
    family = kind(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family  # type: ignore[no-any-return]


class StatusCollector:
    """A prometheus_client collector of one Status."""

    def __init__(self, status: Status) -> None:
        self.status = status

    def collect(self) -> Iterator[Metric]:
        s = self.status
        yield _gauge("pbem_healthy", "1 when pbem status finds no problem, else 0",
                     1.0 if s.healthy else 0.0)
        yield _gauge("pbem_last_tick_timestamp_seconds", "when the last tick ran (Unix time)",
                     _timestamp(s.last_tick))
        yield _gauge("pbem_last_tick_age_seconds", "seconds since the last tick ran",
                     _age(s, s.last_tick))
        yield _gauge("pbem_inbox_mails", "stored mails not handled yet", s.inbox)
        yield _gauge("pbem_inbox_oldest_age_seconds",
                     "seconds the oldest stored mail not handled yet has waited",
                     _age(s, s.inbox_oldest))
        yield _gauge("pbem_outbox_mails", "outgoing mails not sent yet", s.outbox)
        yield _gauge("pbem_outbox_due_mails", "outgoing mails due and not sent", s.outbox_due)
        yield _gauge("pbem_outbox_oldest_age_seconds",
                     "seconds since the oldest unsent outgoing mail was queued",
                     _age(s, s.outbox_oldest))
        yield _gauge("pbem_outbox_overdue_seconds",
                     "seconds the longest due unsent outgoing mail has been due",
                     _age(s, s.overdue_since))
        yield _labelled(CounterMetricFamily, "pbem_mails_received",
                        "stored mails, by what became of them (new: not handled yet)",
                        "status", s.mails_in)
        yield _labelled(CounterMetricFamily, "pbem_mails_queued",
                        "outgoing mails, by what became of them (pending: not sent yet)",
                        "status", s.mails_out)
        yield _labelled(CounterMetricFamily, "pbem_errors", "failures, by kind", "kind",
                        s.errors)
        yield _labelled(GaugeMetricFamily, "pbem_games", "games, by status", "status", s.games)
        handling = GaugeMetricFamily(
            "pbem_mail_handling_seconds",
            f"seconds from a mail's arrival to its handling, over the last {len(s.handling)} "
            "mails handled", labels=["quantile"])
        for q in QUANTILES:
            value = s.quantile(q)
            handling.add_metric([str(q)], NAN if value is None else value)
        yield handling
        failures = GaugeMetricFamily("pbem_backoff_failures",
                                     "failed tries in a row of a mail server (0: it works)",
                                     labels=["service"])
        retry = GaugeMetricFamily("pbem_backoff_retry_timestamp_seconds",
                                  "when a backed-off mail server is tried again (Unix time)",
                                  labels=["service"])
        for b in s.backoffs:
            failures.add_metric([b.service], b.failures)
            retry.add_metric([b.service], _timestamp(b.retry_at) if b.failures else NAN)
        yield failures
        yield retry
        lease = GaugeMetricFamily("pbem_lease_until_timestamp_seconds",
                                  "until when a lease is held (Unix time; NaN: free)",
                                  labels=["lease", "owner"])
        for held in s.leases:
            lease.add_metric([held.name, held.owner or ""],
                             _timestamp(held.until) if held.owner else NAN)
        yield lease


def exposition(status: Status) -> bytes:
    """The Prometheus text format of ``status``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatusCollector(status))
    return generate_latest(registry)
