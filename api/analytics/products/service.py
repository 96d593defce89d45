"""Product analytics: the catalog and its feeds, one product's reports, top products and tracking
status. The catalog is read as the product-catalog job left it (``jobs.product_catalog``); a feed
import is the only write."""

from __future__ import annotations

import math
from typing import Any

from api.analytics.products.schemas import CatalogPageOut, FeedImportOut, FeedImportRecord, FeedsSummary
from api.errors import BadRequest, NotFound
from ingest.currency import normalise_currency
from ingest.product_feed import FeedUnreadable
from ingest.product_feed import import_feed as import_feed_text
from queries.product_catalog import product_names, products_of_lines
from queries.products import (
    CatalogCounts,
    Mode,
    ProductAssociations,
    ProductDwell,
    ProductOverview,
    ProductRange,
    Source,
    TopProducts,
    TopSort,
    TrackingStatus,
    product_associations,
    product_dwell,
    product_out,
    product_overview,
    top_products,
    top_sales,
    tracking_status,
)
from warehouse.config_store import products as catalog
from warehouse.config_store.sites import Site
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine


def list_catalog(
    store: ConfigStore, *, site: Site, search: str | None, page: int, limit: int
) -> CatalogPageOut:
    needle = search.strip() if search else None
    with store.connect() as conn:
        found = catalog.list(conn, site_id=site["id"], search=needle, offset=(page - 1) * limit, limit=limit)
    return CatalogPageOut(
        products=[product_out(r) for r in found.rows],
        total=found.total,
        page=page,
        limit=limit,
        total_pages=max(1, math.ceil(found.total / limit)),
        search=needle,
    )


def create_feed_import(
    store: ConfigStore, *, site: Site, body: bytes, fmt: str, created_by: str
) -> FeedImportOut:
    """Import a feed's bytes into the site's catalog, refusing a feed that is blank, not UTF-8 or not
    readable as a whole (400: ``FEED_EMPTY``, ``FEED_NOT_UTF8``, ``FEED_UNREADABLE``)."""
    if not body.strip():
        raise BadRequest("The feed is empty", code="FEED_EMPTY")
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadRequest("Send the feed as UTF-8 text", code="FEED_NOT_UTF8") from None
    try:
        summary = import_feed_text(store, site=site, text=text, fmt=fmt, source="api", created_by=created_by)
    except FeedUnreadable as exc:
        raise BadRequest(str(exc), code="FEED_UNREADABLE") from None
    return FeedImportOut.model_validate(summary.as_dict())


def get_feeds_summary(store: ConfigStore, *, site: Site) -> FeedsSummary:
    with store.connect() as conn:
        counts = catalog.counts(conn, site_id=site["id"])
        last, number, refused = catalog.import_history(conn, site_id=site["id"])
    record = None
    if last is not None:
        record = FeedImportRecord(
            import_id=last["id"],
            imported_at=last["created_at"],
            source=last["source"],
            format=last["format"],
            file_name=last["file_name"],
            rows_read=last["rows_read"],
            accepted=last["accepted"],
            created=last["created_products"],
            rejected=last["rejected"],
            rejected_by_code=last["rejections"].get("byCode", {}),
            rejections=last["rejections"].get("rows", []),
        )
    return FeedsSummary(
        products=counts["products"],
        from_feed=counts["from_feed"],
        seen_only_in_events=counts["seen_only"],
        feed_products_seen_in_events=counts["feed_and_seen"],
        imports=number,
        rejected_rows_total=refused,
        last_import=record,
    )


def get_product_or_raise(
    store: ConfigStore, engine: Engine, *, site: Site, product_id: str
) -> dict[str, Any]:
    """The catalog row of `productId`, else the product that order lines without a code make of it
    (the catalog names products by code), else 404 ``PRODUCT_NOT_FOUND``."""
    with store.connect() as conn:
        row = catalog.get(conn, site_id=site["id"], product_id=product_id)
    if row is None:
        row = products_of_lines(engine, site=site, product_ids=[product_id]).get(product_id)
    if row is None:
        raise NotFound(
            "No product with this productId on this site: no feed named it and no event or order mentions it",
            code="PRODUCT_NOT_FOUND",
        )
    return row


def get_overview(
    store: ConfigStore, engine: Engine, *, site: Site, product_id: str, query: ProductRange
) -> ProductOverview:
    product = get_product_or_raise(store, engine, site=site, product_id=product_id)
    return product_overview(engine, query, product=product)


def get_dwell_time(
    store: ConfigStore, engine: Engine, *, site: Site, product_id: str, query: ProductRange
) -> ProductDwell:
    product = get_product_or_raise(store, engine, site=site, product_id=product_id)
    return product_dwell(engine, query, product=product)


def get_associations(
    store: ConfigStore,
    engine: Engine,
    *,
    site: Site,
    product_id: str,
    query: ProductRange,
    source: Source,
    mode: Mode,
    limit: int,
) -> ProductAssociations:
    """The product's associations, each related product named as its own routes name it."""
    product = get_product_or_raise(store, engine, site=site, product_id=product_id)
    figures = product_associations(
        engine, query, product=product, source=source, mode=mode, limit=limit, names={}
    )
    names = product_names(
        store, engine, site=site, rows=[(a.product_id, a.product_item_code) for a in figures.associations]
    )
    for row in figures.associations:
        row.name = names.get(row.product_id)
    return figures


def list_top(
    store: ConfigStore,
    engine: Engine,
    *,
    site: Site,
    query: ProductRange,
    sort_by: TopSort,
    limit: int,
    currency: str | None,
) -> TopProducts:
    """The best sellers per currency; ``currency`` (any case) keeps one (400 ``CURRENCY_NOT_ISO4217``
    when it names none)."""
    wanted = None
    if currency is not None:
        try:
            wanted = normalise_currency(currency)
        except ValueError as exc:
            raise BadRequest(str(exc), code="CURRENCY_NOT_ISO4217") from None
    rows = top_sales(engine, query, sort_by=sort_by, limit=limit, currency=wanted)
    names = product_names(store, engine, site=site, rows=[(r["product_id"], r["code"]) for r in rows])
    return top_products(engine, query, sort_by=sort_by, limit=limit, currency=wanted, names=names, rows=rows)


def get_tracking_status(
    store: ConfigStore, engine: Engine, *, site: Site, query: ProductRange
) -> TrackingStatus:
    with store.connect() as conn:
        counts = catalog.counts(conn, site_id=site["id"])
    modules = (site.get("tracking_config") or {}).get("trackingModules") or {}
    product_module = modules.get("product") if isinstance(modules, dict) else None
    enabled = product_module.get("enabled") if isinstance(product_module, dict) else None
    return tracking_status(
        engine,
        query,
        catalog=CatalogCounts(
            products=counts["products"],
            from_feed=counts["from_feed"],
            seen_only_in_events=counts["seen_only"],
            feed_products_seen=counts["feed_and_seen"],
        ),
        module_enabled=enabled if isinstance(enabled, bool) else None,
    )
