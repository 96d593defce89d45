"""Identity conversion metrics: who is active in the range, as the overview counts people."""

from __future__ import annotations

from datetime import date

from queries.revenue import ReportRange, identity_conversion_metrics
from tests.queries.helpers import SITE, journeys_for

MARCH = ReportRange(SITE, date(2024, 3, 1), date(2024, 3, 31))


def test_a_refund_alone_makes_no_one_active(lake):
    # The shop sends a refund; its person did nothing in the range (as the overview and correlations read it).
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": "2024-03-02T10:00:00Z"}],
        "bob": [{"order": "o1", "at": "2024-02-20T10:00:00Z"},
                {"order": "r1", "at": "2024-03-05T10:00:00Z", "isRefund": True, "refundOf": "o1", "total": "-10",
                 "items": [{"productItemCode": "P", "quantity": -1, "price": "10"}]}],
    })  # fmt: skip
    metrics = identity_conversion_metrics(engine, MARCH, site_currency="EUR")
    assert (metrics.total_people, metrics.anonymous.people, metrics.anonymous.converters) == (1, 1, 0)
