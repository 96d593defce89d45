"""Products seen in events and orders, merged into the site's catalog (the config store).

The catalog reads the lake forward by receipt time: each run reads what arrived since the last one
(less a margin, since late flushes may carry slightly older receipt times; merging is idempotent), so
a product that first shows up in an event is in the catalog after the next run. The job
``jobs.product_catalog`` runs it; the product routes only read the catalog.

The catalog names products by code, so order lines that name a product only by its productId add
nothing to it; a productId that only such lines name is answered from those lines when asked for
(``products_of_lines``), and report rows take their names from both (``product_names``)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine as StoreEngine
from sqlalchemy import String

from queries import library
from warehouse.config_store import products
from warehouse.config_store.products import SeenProduct
from warehouse.config_store.sites import Site
from warehouse.config_store.tables import products as products_table
from warehouse.engine import Engine

MARGIN = timedelta(minutes=5)
BEGINNING = datetime(1970, 1, 1, tzinfo=UTC)
_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)


def _length(column: str) -> int:
    """The most characters a text column of the catalog holds."""
    kind = products_table.c[column].type
    assert isinstance(kind, String) and kind.length is not None  # the catalog's text columns are String(n)
    return kind.length


def _fits(value: str | None, column: str) -> str | None:
    """Text longer than its catalog column is left out rather than cut (a cut URL would be wrong)."""
    if value is None:
        return None
    return value if len(value) <= _length(column) else None


def _price(row: dict[str, Any]) -> tuple[Decimal | None, str | None]:
    """The newest price of a product_seen/product_lines_by_id row and its currency (None, None: none)."""
    price = row["price"] or {}
    amount = price.get("amount")
    return (None if amount is None else Decimal(amount).normalize()), price.get("currency")


def _seen(row: dict[str, Any]) -> SeenProduct:
    """A product_seen row, whose values come as {value, at} (price as {amount, currency, at})."""
    price, currency = _price(row)
    value = {
        column: (row[column] or {}).get("value")
        for column in ("product_name", "category_path", "page", "image")
    }
    seen_at = {
        catalog_column: row[column]["at"]
        for column, catalog_column in (
            ("product_name", "name"),
            ("price", "price"),
            ("category_path", "categories"),
            ("page", "url"),
            ("image", "image"),
        )
        if row[column] is not None
    }
    category_path = value["category_path"]
    return SeenProduct(
        product_item_code=row["code"],
        first_seen_at=row["first_seen_at"],
        last_seen_at=row["last_seen_at"],
        name=_fits(value["product_name"], "name"),
        price=price,
        currency=currency,
        category_path=(category_path or None) if len(category_path or "") <= 500 else None,
        url=_fits(value["page"], "url"),
        image=_fits(value["image"], "image"),
        seen_at=seen_at,
    )


def sync_seen_products(store: StoreEngine, engine: Engine, *, site: Site) -> int:
    """Merge the site's product events and order lines received since the last run into its catalog.
    Answers the number of products it added."""
    with _locks[site["id"]]:
        with store.connect() as conn:
            until = products.received_until(conn, site_id=site["id"])
        after = until - MARGIN if until else BEGINNING
        params = {"site_id": site["id"], "received_after": after, "first_read": until is None}
        rows = library.run(engine, "product_seen", params).to_pylist()
        rows = [r for r in rows if len(r["code"]) <= _length("product_item_code")]
        if not rows:
            return 0
        with store.begin() as conn:
            created = products.upsert_seen(
                conn, site_id=site["id"], site_currency=site["currency"], seen=[_seen(r) for r in rows]
            )
            received = [r["received_until"] for r in rows if r["received_until"] is not None]
            newest = max([*received, until or BEGINNING])
            products.set_received_until(conn, site_id=site["id"], until=newest)
        return created


def products_of_lines(engine: Engine, *, site: Site, product_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The products among ``product_ids`` that order lines without productItemCode name, by productId,
    as catalog rows: what the catalog would make of those lines (newest name, price in its order's
    currency, else no price and the site currency; newest category path; first and last seen) if it
    took them, with no code, no feed values, and ``updated_at`` the newest line's receipt time. A
    productId no such line names is not in the answer."""
    wanted = list(dict.fromkeys(product_ids))
    if not wanted:
        return {}
    params = {"site_id": site["id"], "product_ids": wanted}
    found = {}
    for row in library.run(engine, "product_lines_by_id", params).to_pylist():
        price, currency = _price(row)
        found[row["product_id"]] = {
            "site_id": site["id"],
            "product_id": row["product_id"],
            "product_item_code": None,
            "name": row["product_name"],
            "price": price,
            "currency": currency or site["currency"],
            "categories": [row["category_path"]] if row["category_path"] else [],
            "stock": None,
            "url": None,
            "image": None,
            "in_feed": False,
            "feed_imported_at": None,
            "first_seen_at": row["first_seen_at"],
            "last_seen_at": row["last_seen_at"],
            "updated_at": row["received_until"] or row["last_seen_at"],
        }
    return found


def product_names(
    store: StoreEngine, engine: Engine, *, site: Site, rows: Iterable[tuple[str, str | None]]
) -> dict[str, str | None]:
    """Names of report rows, given as (productId, productItemCode or None), by productId: as the
    product's own routes name it, the catalog's name when the catalog holds the productId; else, for a
    row without a code, the newest name of the order lines naming that productId without a code."""
    rows = list(rows)
    with store.connect() as conn:
        stored = products.by_ids(conn, site_id=site["id"], product_ids=[product_id for product_id, _ in rows])
    names = {product_id: row["name"] for product_id, row in stored.items()}
    code_less = [product_id for product_id, code in rows if code is None and product_id not in stored]
    for product_id, row in products_of_lines(engine, site=site, product_ids=code_less).items():
        names[product_id] = row["name"]
    return names
