"""`journeys_for`: build a lake from events declared per person, like PostHog's test helper; and a real
shop's invoices imported, with the file's own reading to compare."""

from __future__ import annotations

import csv
import io
import itertools
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from ingest.event_names import EVENT_FAMILIES
from ingest.importer import import_file
from ingest.service import Ingest
from ingest.validation import Context
from warehouse.config_store.product_identity import product_id_for

SITE = "55555555-5555-5555-5555-555555555555"
_ids = itertools.count()


def pid(code: str) -> str:
    """The productId of a code on SITE."""
    return str(product_id_for(SITE, code))


def catalog_row(code: str) -> dict:
    """The product of a code as the catalog hands it to the product queries (nothing known but its code)."""
    return {
        "product_id": pid(code), "product_item_code": code, "name": None, "price": None, "currency": "EUR",
        "categories": [], "stock": None, "url": None, "image": None, "in_feed": False, "first_seen_at": None,
        "last_seen_at": None, "updated_at": datetime(2024, 3, 12, tzinfo=UTC),
    }  # fmt: skip


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


PRODUCT_EVENTS = set(EVENT_FAMILIES["product"])


RETAIL_HEAD = Path(__file__).resolve().parents[1] / "data" / "online-retail-head-3000.csv"


def imported_retail_invoices(ingest: Ingest) -> tuple[str, dict[str, list[dict]]]:
    """The first 3,000 lines of UCI Online Retail imported with `--preset online-retail` into a new GBP
    site; returns the site id and the file's own lines by invoice number, to check the lake against."""
    site_id = str(uuid.uuid4())
    import_file(ingest, site={"id": site_id, "currency": "GBP"}, path=RETAIL_HEAD, preset="online-retail")
    invoices: dict[str, list[dict]] = defaultdict(list)
    for line in csv.DictReader(io.StringIO(RETAIL_HEAD.read_text())):
        invoices[line["InvoiceNo"].strip()].append(line)
    return site_id, invoices


def is_retail_sale(invoice: str, lines: list[dict]) -> bool:
    """A plain reading of the preset's rules: a sale is an invoice that is neither a cancellation `C…`
    nor an adjustment `A…`, has no negative line, and is not of zero value for no customer (stock)."""
    if invoice.startswith(("A", "C")) or any(int(line["Quantity"]) < 0 for line in lines):
        return False
    return bool(lines[0]["CustomerID"]) or any(Decimal(line["UnitPrice"]) != 0 for line in lines)
