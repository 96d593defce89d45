"""The overview on tiny hand-built shops: exact numbers."""

from __future__ import annotations

from datetime import date

from queries.overview import Scope, overview
from tests.queries.helpers import SITE, journeys_for

OTHER_SITE = "66666666-6666-6666-6666-666666666666"


def test_a_purchase_event_names_a_sale_of_its_own_site_only(lake):
    """ann's purchase event names order o1, which this site never had; another storefront of the
    organisation has a sale o1 of its own. ann bought here (her purchase event is no other site's sale)."""
    ingest, engine = lake
    journeys_for(
        ingest, {"ann": [{"event": "purchase", "at": "2024-03-01T10:00:00Z", "metadata": {"orderId": "o1"}}]}
    )
    journeys_for(ingest, {"bob": [{"order": "o1", "at": "2024-03-01T10:00:00Z"}]}, site_id=OTHER_SITE)
    body = overview(engine, Scope((SITE,), date(2024, 3, 1), date(2024, 3, 1)))
    assert (body["totals"]["people"], body["totals"]["orders"], body["purchaseConversionRate"]) == (1, 0, 1.0)
    both = overview(engine, Scope((SITE, OTHER_SITE), date(2024, 3, 1), date(2024, 3, 1)))
    assert (both["totals"]["people"], both["totals"]["orders"], both["purchaseConversionRate"]) == (2, 1, 1.0)


def test_page_views_count_a_single_page_storefronts_route_changes(lake):
    ingest, engine = lake
    journeys_for(ingest, {"ann": [{"event": "page_view", "at": "2024-03-01T10:00:00Z"},
                                  {"event": "virtual_page_view", "at": "2024-03-01T10:01:00Z"},
                                  {"event": "scroll", "at": "2024-03-01T10:02:00Z"}]})  # fmt: skip
    body = overview(engine, Scope((SITE,), date(2024, 3, 1), date(2024, 3, 1)))
    assert (body["totals"]["events"], body["totals"]["pageViews"]) == (3, 2)
