"""What the product routes read from a request before any work: the range, the `productId`, the
refusal of `productItemCode`, a feed's format and its body."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import Depends, Query, Request

from api.analytics.scope import MAX_RANGE_DAYS, AnalyticsSite, check_range_length, date_range
from api.errors import BadRequest, PayloadTooLarge
from api.schemas import IsoDate
from ingest.product_feed import FORMATS, FeedUnreadable, detect_format
from queries.products import ProductRange
from warehouse.config_store.product_identity import product_id_for

MAX_FEED_BYTES = 50 * 1024 * 1024


def refuse_product_item_code(request: Request, site: AnalyticsSite) -> None:
    """Product analytics v2 name products by productId only."""
    for key in ("productItemCode", "product_item_code"):
        code = request.query_params.get(key)
        if code is not None:
            derived = str(product_id_for(site["id"], code)) if code.strip() else None
            hint = f" (for productItemCode '{code}' on this site: productId={derived})" if derived else ""
            raise BadRequest(
                f"Product analytics take productId (uuid), not productItemCode: send productId{hint}. "
                f"GET /api/v1/analytics/product/{site['id']}/catalog lists every product with its productId.",
                code="PRODUCT_ID_REQUIRED",
                details={"field": key, "productId": derived},
            )


def product_range(
    site: AnalyticsSite,
    days: Annotated[
        int | None,
        Query(
            ge=1, le=MAX_RANGE_DAYS, description="The last N days of the site's time zone, today included."
        ),
    ] = None,
    start_date: Annotated[
        IsoDate | None,
        Query(
            alias="startDate",
            description=f"First day (site time zone); wins over `days`. At most {MAX_RANGE_DAYS} days before "
            "`endDate` (400 `DATE_RANGE_TOO_LONG`).",
        ),
    ] = None,
    end_date: Annotated[
        IsoDate | None, Query(alias="endDate", description="Last day, inclusive; wins over `days`.")
    ] = None,
) -> ProductRange:
    if start_date is None and end_date is None:
        return ProductRange.last_days(
            site_id=site["id"], days=days or 30, timezone=site["timezone"], currency=site["currency"]
        )
    start, end = date_range(site, start_date, end_date)
    check_range_length(start, end)
    return ProductRange.of_site(site, start, end)


Range = Annotated[ProductRange, Depends(product_range)]


def product_id_param(
    site: AnalyticsSite,
    product_id: Annotated[
        str,
        Query(
            alias="productId",
            description="The product's uuid (see the catalog route; top and association rows carry it too).",
            json_schema_extra={"format": "uuid"},
        ),
    ],
) -> str:
    """`productId` as a uuid; anything else answers 400 with the id it would be as a productItemCode."""
    try:
        return str(uuid.UUID(product_id.strip()))
    except ValueError:
        derived = str(product_id_for(site["id"], product_id)) if product_id.strip() else None
        hint = f"; if '{product_id}' is a productItemCode, send productId={derived}" if derived else ""
        raise BadRequest(
            f"productId must be a uuid{hint}",
            code="PRODUCT_ID_NOT_UUID",
            details={"field": "productId", "productId": derived},
        ) from None


ProductId = Annotated[str, Depends(product_id_param)]


def feed_format(
    request: Request,
    format: Annotated[
        Literal["csv", "json", "jsonl"] | None,
        Query(description="csv, json or jsonl; by default from the Content-Type."),
    ] = None,
) -> str:
    """`format`, else the format the Content-Type names (400 `FEED_FORMAT_UNKNOWN` when it names none)."""
    try:
        return format or detect_format(None, request.headers.get("content-type"))
    except FeedUnreadable:
        raise BadRequest(
            f"Say the feed's format: Content-Type text/csv, application/json or application/x-ndjson, "
            f"or ?format= one of {', '.join(FORMATS)}",
            code="FEED_FORMAT_UNKNOWN",
        ) from None


FeedFormat = Annotated[str, Depends(feed_format)]


async def read_feed_body(request: Request) -> bytes:
    """The feed's bytes, refused (413 `FEED_TOO_LARGE`) as soon as they pass ``MAX_FEED_BYTES``: the
    app's general body limit leaves the feed route to this one."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FEED_BYTES:
            raise PayloadTooLarge(f"Feeds are limited to {MAX_FEED_BYTES} bytes", code="FEED_TOO_LARGE")
    return body


FeedBody = Annotated[bytes, Depends(read_feed_body)]
