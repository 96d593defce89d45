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


def test_a_blank_user_id_identifies_no_one(lake):
    # A blank user id (' ') is no user, as the people views read it: ann stays anonymous, and her sale
    # with her. It used to make her an identified person, and her sale identified revenue.
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": "2024-03-02T10:00:00Z", "userId": " "},
                {"order": "o1", "at": "2024-03-03T10:00:00Z", "userId": " "}],
        "bob": [{"event": "identify", "at": "2024-03-04T10:00:00Z", "userId": "u1"}],
    })  # fmt: skip
    metrics = identity_conversion_metrics(engine, MARCH, site_currency="EUR")
    assert (metrics.total_people, metrics.identified_share, metrics.conversion_rate_ratio) == (2, 0.5, 0.0)
    assert (metrics.identified.people, metrics.identified.converters, metrics.identified.orders) == (1, 0, 0)
    assert (metrics.anonymous.people, metrics.anonymous.converters, metrics.anonymous.orders) == (1, 1, 1)
    assert [
        (r.currency, r.revenue, r.buyers, r.revenue_per_person) for r in metrics.anonymous.revenue_by_currency
    ] == [("EUR", "10.00", 1, "10.00")]
