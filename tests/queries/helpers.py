"""`journeys_for`: build a lake from events declared per person, like PostHog's test helper."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from ingest.normalise import Context
from ingest.service import Ingest

SITE = "55555555-5555-5555-5555-555555555555"
_ids = itertools.count()


def journeys_for(ingest: Ingest, people: dict[str, list[dict]], *, site_id: str = SITE) -> None:
    """``people`` maps a visitor id to its events: ``{"event": name, "at": "2024-01-01T10:00:00Z", ...}``
    (other keys pass through in wire form). Orders: ``{"order": "o1", "at": ...}``."""
    ctx = Context(
        site_id=site_id, site_currency="EUR", received_at=datetime.now(UTC), channel="server", historical=True
    )
    events, orders = [], []
    for visitor, steps in people.items():
        for step in steps:
            extra = {k: v for k, v in step.items() if k not in ("event", "at", "order")}
            if "order" in step:
                orders.append({"orderId": step["order"], "visitorId": visitor, "sessionId": "s", "timestamp": step["at"],
                               "total": "10", "items": [{"productItemCode": "P", "quantity": 1, "price": "10"}], **extra})  # fmt: skip
            else:
                metadata = {"productItemCode": "P"} if step["event"] in PRODUCT_EVENTS else {}
                events.append({"name": step["event"], "visitorId": visitor, "sessionId": "s", "timestamp": step["at"],
                               "eventId": f"e{next(_ids)}", "metadata": {**metadata, **extra.pop("metadata", {})},
                               **extra})  # fmt: skip
    if events:
        result = ingest.accept_events_sync(events, ctx)
        assert result.rejected == [], result.rejected
    if orders:
        result = ingest.accept_orders_sync(orders, ctx)
        assert result.rejected == [], result.rejected
    ingest.flush()


PRODUCT_EVENTS = {
    "product_impression",
    "product_click",
    "product_view",
    "product_dwell_time",
    "add_to_cart",
    "wishlist",
}
