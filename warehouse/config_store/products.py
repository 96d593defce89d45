"""The product catalog of a site: products from feed imports and products seen in events and orders.

A product is keyed by its ``product_id`` (``product_id_for(site, productItemCode)``). Feed values win:
what events and orders carry only fills fields a feed left empty, and, for products no feed named, the
newest observation replaces older ones. ``currency`` is never empty: the site's when nothing gave one.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, insert, or_, select, update

from warehouse.config_store.product_identity import product_id_for
from warehouse.config_store.rows import new_id, to_dict
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import product_event_sync, product_feed_imports, products

CHUNK = 500
# Fields a feed row or an observation may carry, besides the code.
DETAIL_FIELDS = ("name", "price", "currency", "categories", "stock", "url", "image")


@dataclass
class FeedProduct:
    """One valid feed row: ``None`` means the feed did not give that field (the stored value stays)."""

    product_item_code: str
    name: str | None = None
    price: Decimal | None = None
    currency: str | None = None
    categories: list[str] | None = None
    stock: int | None = None
    url: str | None = None
    image: str | None = None


@dataclass
class SeenProduct:
    """What the lake says about a product: its newest non-empty values and when it was seen."""

    product_item_code: str
    first_seen_at: datetime
    last_seen_at: datetime
    name: str | None = None
    price: Decimal | None = None
    currency: str | None = None  # the currency of `price`
    category_path: str | None = None
    url: str | None = None
    image: str | None = None
    # The event time each value was seen at, by catalog column (name, price, categories, url, image);
    # a value without one was seen at `last_seen_at`.
    seen_at: dict[str, datetime] = field(default_factory=dict)

    def at(self, column: str) -> datetime:
        return self.seen_at.get(column, self.last_seen_at)


def _stored_at(row: dict[str, Any], column: str) -> datetime | None:
    """When the lake showed the stored value of ``column``: its own time, else (a value stored before
    these times were kept) the product's last sighting; None for a value the lake never gave."""
    at = (row.get("seen_at") or {}).get(column)
    return datetime.fromisoformat(at) if at else row["last_seen_at"]


@dataclass
class CatalogPage:
    total: int
    rows: list[dict[str, Any]] = field(default_factory=list)


def get(conn: Connection, *, site_id: str, product_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        select(products).where(products.c.site_id == site_id, products.c.product_id == product_id)
    ).first()
    return to_dict(row)


def by_codes(conn: Connection, *, site_id: str, codes: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored products among ``codes``, by code. Looked up by product id, which every spelling of
    a code shares (`" 123 "` is `123`): a row stored under another spelling is that product's row."""
    codes_of: dict[str, builtins.list[str]] = {}
    for code in dict.fromkeys(codes):
        codes_of.setdefault(str(product_id_for(site_id, code)), []).append(code)
    stored = by_ids(conn, site_id=site_id, product_ids=codes_of)
    return {code: row for product_id, row in stored.items() for code in codes_of[product_id]}


def by_ids(conn: Connection, *, site_id: str, product_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored products among ``product_ids``, by product id."""
    wanted = builtins.list(dict.fromkeys(product_ids))
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(wanted), CHUNK):
        rows = conn.execute(
            select(products).where(
                products.c.site_id == site_id, products.c.product_id.in_(wanted[start : start + CHUNK])
            )
        )
        for row in rows:
            found[row.product_id] = to_dict(row)
    return found


def list(
    conn: Connection, *, site_id: str, search: str | None = None, offset: int = 0, limit: int = 20
) -> CatalogPage:
    """A page of the site's products by name (products without one last), then code. ``search`` matches a
    part of the name or of the code, ignoring case."""
    where = [products.c.site_id == site_id]
    if search:
        needle = search.lower()
        where.append(
            or_(
                func.lower(products.c.name).contains(needle, autoescape=True),
                func.lower(products.c.product_item_code).contains(needle, autoescape=True),
            )
        )
    total = conn.execute(select(func.count()).select_from(products).where(*where)).scalar_one()
    rows = conn.execute(
        select(products)
        .where(*where)
        .order_by(products.c.name.is_(None), func.lower(products.c.name), products.c.product_item_code)
        .offset(offset)
        .limit(limit)
    )
    return CatalogPage(total=total, rows=[to_dict(r) for r in rows])


def counts(conn: Connection, *, site_id: str) -> dict[str, int]:
    """Products in all; from a feed; seen only in events or orders; from a feed and also seen."""
    row = conn.execute(
        select(
            func.count(),
            func.count().filter(products.c.in_feed.is_(True)),
            func.count().filter(and_(products.c.in_feed.is_(False), products.c.last_seen_at.is_not(None))),
            func.count().filter(and_(products.c.in_feed.is_(True), products.c.last_seen_at.is_not(None))),
        ).where(products.c.site_id == site_id)
    ).one()
    return {"products": row[0], "from_feed": row[1], "seen_only": row[2], "feed_and_seen": row[3]}


def _new_row(site_id: str, code: str, now: datetime, site_currency: str) -> dict[str, Any]:
    return {
        "site_id": site_id,
        "product_id": str(product_id_for(site_id, code)),
        "product_item_code": code,
        "name": None,
        "price": None,
        "currency": site_currency,
        "categories": [],
        "stock": None,
        "url": None,
        "image": None,
        "in_feed": False,
        "feed_imported_at": None,
        "first_seen_at": None,
        "last_seen_at": None,
        "seen_at": {},
        "created_at": now,
        "updated_at": now,
    }


def _write(conn: Connection, new: Sequence[dict[str, Any]], changed: Sequence[dict[str, Any]]) -> None:
    if new:
        conn.execute(insert(products), builtins.list(new))
    if changed:
        columns = [c for c in changed[0] if c not in ("site_id", "product_id")]
        statement = (
            update(products)
            .where(products.c.site_id == bindparam("k_site"), products.c.product_id == bindparam("k_product"))
            .values({c: bindparam(f"v_{c}") for c in columns})
        )
        conn.execute(
            statement,
            [
                {"k_site": r["site_id"], "k_product": r["product_id"], **{f"v_{c}": r[c] for c in columns}}
                for r in changed
            ],
        )


def upsert_feed(
    conn: Connection, *, site_id: str, site_currency: str, rows: Sequence[FeedProduct]
) -> tuple[int, int]:
    """Store feed rows: the fields a row gives replace the stored ones, the others stay. A price without
    a currency is in the site currency. Answers (products created, products updated)."""
    now = utcnow()
    created = updated = 0
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        stored = by_codes(conn, site_id=site_id, codes=[r.product_item_code for r in chunk])
        new, changed = [], []
        for item in chunk:
            stored_row = stored.get(item.product_item_code)
            is_new = stored_row is None
            row = (
                _new_row(site_id, item.product_item_code, now, site_currency)
                if stored_row is None
                else dict(stored_row)
            )
            for name in DETAIL_FIELDS:
                value = getattr(item, name)
                if value is not None:
                    row[name] = value
            if item.price is not None and item.currency is None:
                row["currency"] = site_currency
            row.update(in_feed=True, feed_imported_at=now, updated_at=now)
            if is_new:
                new.append(row)
                created += 1
            else:
                row.pop("created_at", None)
                changed.append(row)
                updated += 1
        _write(conn, new, changed)
    return created, updated


def _takes(row: dict[str, Any], item: SeenProduct, column: str, stored: Any) -> bool:
    """Whether ``item``'s value of ``column`` replaces the stored one: always when nothing is stored; for
    a product a feed named, never otherwise; else when it was seen at least as late."""
    if not stored:
        return True
    if row["in_feed"]:
        return False
    stored_at = _stored_at(row, column)
    return stored_at is None or item.at(column) >= stored_at


def upsert_seen(conn: Connection, *, site_id: str, site_currency: str, seen: Sequence[SeenProduct]) -> int:
    """Merge what the lake says into the catalog. For a product a feed named, observations only fill
    empty fields; for the others, each value seen at least as late as the stored one (by event time)
    replaces it, and empty ones keep what is stored, so reads in any batching keep the newest value of
    each field. Answers the number of products created."""
    now = utcnow()
    created = 0
    for start in range(0, len(seen), CHUNK):
        chunk = seen[start : start + CHUNK]
        stored = by_codes(conn, site_id=site_id, codes=[s.product_item_code for s in chunk])
        new, changed = [], []
        for item in chunk:
            stored_row = stored.get(item.product_item_code)
            is_new = stored_row is None
            row = (
                _new_row(site_id, item.product_item_code, now, site_currency)
                if stored_row is None
                else dict(stored_row)
            )
            seen_at = dict(row.get("seen_at") or {})
            values = {
                "name": item.name,
                "url": item.url,
                "image": item.image,
                "categories": [item.category_path] if item.category_path else None,
            }
            for name, value in values.items():
                if value is not None and _takes(row, item, name, row[name]):
                    row[name] = value
                    seen_at[name] = item.at(name).isoformat()
            if item.price is not None and _takes(row, item, "price", row["price"] is not None):
                row["price"], row["currency"] = item.price, item.currency or site_currency
                seen_at["price"] = item.at("price").isoformat()
            row["seen_at"] = seen_at
            row["first_seen_at"] = min(filter(None, (row["first_seen_at"], item.first_seen_at)))
            row["last_seen_at"] = max(filter(None, (row["last_seen_at"], item.last_seen_at)))
            row["updated_at"] = now
            if is_new:
                new.append(row)
                created += 1
            else:
                row.pop("created_at", None)
                changed.append(row)
        _write(conn, new, changed)
    return created


def received_until(conn: Connection, *, site_id: str) -> datetime | None:
    """How far (by receipt time) the catalog has read the site's events and orders."""
    row = conn.execute(
        select(product_event_sync.c.received_until).where(product_event_sync.c.site_id == site_id)
    ).first()
    return to_dict(row)["received_until"] if row else None


def set_received_until(conn: Connection, *, site_id: str, until: datetime) -> None:
    now = utcnow()
    done = conn.execute(
        update(product_event_sync)
        .where(product_event_sync.c.site_id == site_id)
        .values(received_until=until, synced_at=now)
    )
    if done.rowcount == 0:
        conn.execute(insert(product_event_sync).values(site_id=site_id, received_until=until, synced_at=now))


def record_import(
    conn: Connection,
    *,
    site_id: str,
    source: str,
    format: str,
    file_name: str | None,
    rows_read: int,
    accepted: int,
    created_products: int,
    rejections: dict[str, Any],
    created_by: str | None = None,
) -> dict[str, Any]:
    row = {
        "id": new_id(),
        "site_id": site_id,
        "source": source,
        "format": format,
        "file_name": file_name,
        "rows_read": rows_read,
        "accepted": accepted,
        "created_products": created_products,
        "rejected": sum(rejections.get("byCode", {}).values()),
        "rejections": rejections,
        "created_by": created_by,
        "created_at": utcnow(),
    }
    conn.execute(insert(product_feed_imports).values(**row))
    return row


def import_history(conn: Connection, *, site_id: str) -> tuple[dict[str, Any] | None, int, int]:
    """The newest feed import (None before the first), the number of imports, and rows refused in all."""
    last = conn.execute(
        select(product_feed_imports)
        .where(product_feed_imports.c.site_id == site_id)
        .order_by(product_feed_imports.c.created_at.desc(), product_feed_imports.c.id)
        .limit(1)
    ).first()
    number, refused = conn.execute(
        select(func.count(), func.coalesce(func.sum(product_feed_imports.c.rejected), 0)).where(
            product_feed_imports.c.site_id == site_id
        )
    ).one()
    return to_dict(last), number, int(refused)
