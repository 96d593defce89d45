"""The product area's wire: its own answers (catalog page, feed import, feeds summary) and the reports
of ``queries.products`` its routes return as they are."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from aisle.wire import CamelModel
from queries.products import (
    Product,
    ProductAssociations,
    ProductDwell,
    ProductOverview,
    TopProducts,
    TrackingStatus,
)

__all__ = [
    "CatalogPageOut",
    "FeedImportOut",
    "FeedImportRecord",
    "FeedRejection",
    "FeedsSummary",
    "ProductAssociations",
    "ProductDwell",
    "ProductOverview",
    "TopProducts",
    "TrackingStatus",
]


class CatalogPageOut(CamelModel):
    products: list[Product]
    total: int
    page: int
    limit: int
    total_pages: int
    search: str | None


class FeedRejection(CamelModel):
    row: int
    code: str
    reason: str


class FeedImportOut(CamelModel):
    import_id: str
    format: Literal["csv", "json", "jsonl"]
    rows_read: int
    accepted: int
    created: int
    updated: int
    rejected: int
    rejected_by_code: dict[str, int]
    rejections: list[FeedRejection]


class FeedImportRecord(CamelModel):
    import_id: str
    imported_at: datetime
    source: str
    format: str
    file_name: str | None
    rows_read: int
    accepted: int
    created: int
    rejected: int
    rejected_by_code: dict[str, int]
    rejections: list[FeedRejection]


class FeedsSummary(CamelModel):
    products: int
    from_feed: int
    seen_only_in_events: int
    feed_products_seen_in_events: int
    imports: int
    rejected_rows_total: int
    last_import: FeedImportRecord | None
