"""Product analytics v2: catalog, feed import and its summary, one product's overview, dwell time and
associations, top products per currency, tracking status. v1 routes are gone (404, no aliases)."""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from api.analytics.scope import MAX_RANGE_DAYS, AnalyticsSite, check_range_length, date_range
from api.deps import ConfigStoreDep, CurrentUser, WritableSiteById
from api.errors import BadRequest, NotFound, PayloadTooLarge
from api.schemas import CURRENCY_ENUM, CamelModel, IsoDate
from ingest.currency import normalise_currency
from ingest.product_feed import FORMATS, FeedUnreadable, detect_format, import_feed
from queries.product_catalog import product_names, products_of_lines, sync_seen_products
from queries.products import (
    CatalogCounts,
    Mode,
    Product,
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
from warehouse.config_store.product_identity import product_id_for

MAX_FEED_BYTES = 50 * 1024 * 1024
# Under the router's prefix; the general body limit leaves it to MAX_FEED_BYTES (``api.app``).
FEED_PATH = "/product/{siteId}/feed"

SEMANTICS = (
    "Products are named by `productId`, a uuid derived from the site and the `productItemCode` events "
    "carry (the same code on the same site is always the same id, so events that arrive before the "
    "catalog still join); a query naming a product by `productItemCode` answers 400 "
    "`PRODUCT_ID_REQUIRED` with the id to send. The range is `startDate`..`endDate` (inclusive days of "
    "the site's time zone) or else the last `days` days, today included (30 by default). Orders are the "
    "source of truth for sales and money: refunds apart, line revenue is quantity times unit price "
    "(before order-level discounts; a line of quantity 0 bought nothing: no sale, buyer or basket of its "
    "product), per currency, never converted or summed across currencies, formatted "
    "with the currency's ISO-4217 minor units. A product on an order line without `productItemCode` is "
    "named by the line's `productId`. People are the linked user when a visitor was ever identified, else "
    "the visitor. Access: `analytics:view` in the organisation that owns the site (403 otherwise)."
)


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


router = APIRouter(prefix="/analytics", tags=["product analytics"])
product_router = APIRouter(
    prefix="/product/{siteId}",
    tags=["product analytics"],
    dependencies=[Depends(refuse_product_item_code)],
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


def _sync(request: Request, store, site: dict[str, Any]) -> None:
    sync_seen_products(store, request.app.state.engine, site=site)


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


def load_product(
    request: Request, store, site: dict[str, Any], product_id: str, *, synced: bool = False
) -> dict[str, Any]:
    """The catalog row of `productId`; a product seen only in the lake so far is added first (unless
    the caller has just ``synced``). A productId that only order lines without a code name (the catalog
    names products by code) is made from those lines. Called in the route's body, so that every
    parameter is validated before a 404."""
    with store.connect() as conn:
        row = catalog.get(conn, site_id=site["id"], product_id=product_id)
    if row is None and not synced:
        _sync(request, store, site)
        with store.connect() as conn:
            row = catalog.get(conn, site_id=site["id"], product_id=product_id)
    if row is None:
        row = products_of_lines(request.app.state.engine, site=site, product_ids=[product_id]).get(product_id)
    if row is None:
        raise NotFound(
            "No product with this productId on this site: no feed named it and no event or order mentions it",
            code="PRODUCT_NOT_FOUND",
        )
    return row


# --- catalog and feeds ------------------------------------------------------------------------------


class CatalogPageOut(CamelModel):
    products: list[Product]
    total: int
    page: int
    limit: int
    total_pages: int
    search: str | None


@product_router.get("/catalog", response_model=CatalogPageOut, response_model_by_alias=True)
def product_catalog(
    request: Request,
    store: ConfigStoreDep,
    site: AnalyticsSite,
    search: Annotated[
        str | None,
        Query(max_length=200, description="Part of the name or of the productItemCode, any case."),
    ] = None,
    page: Annotated[int, Query(ge=1, le=100_000, description="1 is the first page.")] = 1,
    limit: Annotated[int, Query(ge=1, le=100, description="Products per page.")] = 20,
) -> CatalogPageOut:
    """The site's catalog (replaces v1's site products picker): products from feed imports and products
    seen in events and orders, ordered by name (products without one last), then code. `total` counts
    every match for paging; `totalPages` is at least 1. Each product: `productId`, `productItemCode`,
    `name`, `price` (formatted in the product's currency; null when unknown), `currency` (never null: the
    site currency when nothing gave one), `categories` (paths like `Home > Kitchen`), `stock`, `url`,
    `image`, `inFeed` (a feed import named it), `seenInEvents` (an event or order named it; first and
    last time in `firstSeenAt`/`lastSeenAt`). Feed values win; events and orders fill what the feed left
    empty, and for products no feed named the newest event values replace older ones."""
    _sync(request, store, site)
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


# A feed of only blanks is 400 `FEED_EMPTY`: the text needs one character bytes.strip() keeps.
FEED_TEXT = {"type": "string", "pattern": r"[^ \t\n\r\v\f]"}

FEED_DESCRIPTION = (
    'The feed: CSV with a header row (`text/csv`), a JSON array of products or `{"products": [...]}` '
    "(`application/json`), or JSON lines (`application/x-ndjson`); UTF-8."
)


@router.post(
    FEED_PATH,
    response_model=FeedImportOut,
    response_model_by_alias=True,
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": FEED_DESCRIPTION,
            "content": {
                "text/csv": {"schema": FEED_TEXT},
                "application/json": {"schema": {"type": "array", "items": {"type": "object"}}},
                "application/x-ndjson": {"schema": FEED_TEXT},
            },
        }
    },
)
async def product_feed(
    request: Request,
    store: ConfigStoreDep,
    site: WritableSiteById,
    principal: CurrentUser,
    format: Annotated[
        Literal["csv", "json", "jsonl"] | None,
        Query(description="csv, json or jsonl; by default from the Content-Type."),
    ] = None,
) -> FeedImportOut:
    """Import a product feed into the site's catalog (needs `sites:write`). Rows are checked one by one:
    good rows are stored, each bad row is refused with its `row` (CSV/JSON-lines line number, the CSV
    header being line 1; position from 1 in a JSON array), a stable `code` and a `reason`, at most 100
    listed (`rejectedByCode` counts them all). Codes: `ROW_NOT_OBJECT`, `MISSING_PRODUCT_CODE`,
    `INVALID_PRODUCT_CODE`, `INVALID_NAME`, `INVALID_PRICE` (not a decimal, negative, more than 6
    decimals), `CURRENCY_NOT_ISO4217`, `CURRENCY_CONFLICT`, `INVALID_CATEGORIES`, `INVALID_STOCK`,
    `INVALID_URL`, `DUPLICATE_PRODUCT_CODE` (a code already given earlier in the same feed).

    Columns (any case, `_`/`-`/spaces ignored; aliases in brackets): `productItemCode` (required; sku,
    code, itemCode, stockCode, id), `name` (title, productName, description), `price` (unitPrice; a
    decimal, or `"15.00 USD"`), `currency` (currencyCode; ISO-4217, **the site currency when missing**),
    `categories` (categoryPath, category, productType; a list, or paths separated by `|`), `stock`
    (quantity, inventory, stockQuantity; whole number ≥ 0), `url` (link, productUrl), `image` (imageUrl,
    imageLink). A product is upserted by its code: the fields a row gives replace the stored ones, the
    others stay. The import is recorded for `feeds-summary`. A feed that cannot be read as a whole
    answers 400 `FEED_UNREADABLE` and stores nothing."""
    content_type = request.headers.get("content-type")
    try:
        fmt = format or detect_format(None, content_type)
    except FeedUnreadable:
        raise BadRequest(
            f"Say the feed's format: Content-Type text/csv, application/json or application/x-ndjson, "
            f"or ?format= one of {', '.join(FORMATS)}",
            code="FEED_FORMAT_UNKNOWN",
        ) from None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FEED_BYTES:
            raise PayloadTooLarge(f"Feeds are limited to {MAX_FEED_BYTES} bytes", code="FEED_TOO_LARGE")
    if not body.strip():
        raise BadRequest("The feed is empty", code="FEED_EMPTY")
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadRequest("Send the feed as UTF-8 text", code="FEED_NOT_UTF8") from None
    try:
        summary = await run_in_threadpool(
            import_feed, store, site=site, text=text, fmt=fmt, source="api", created_by=principal.user_id
        )
    except FeedUnreadable as exc:
        raise BadRequest(str(exc), code="FEED_UNREADABLE") from None
    return FeedImportOut.model_validate(summary.as_dict())


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


@product_router.get("/feeds-summary", response_model=FeedsSummary, response_model_by_alias=True)
def feeds_summary(request: Request, store: ConfigStoreDep, site: AnalyticsSite) -> FeedsSummary:
    """Where the catalog comes from: `products` in all, `fromFeed` (named by a feed import),
    `seenOnlyInEvents` (known only from events and orders), `feedProductsSeenInEvents` (from a feed and
    also seen), the number of `imports`, rows refused over all imports (`rejectedRowsTotal`), and the
    `lastImport` (null before the first) with its counts and refused rows."""
    _sync(request, store, site)
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


# --- one product ------------------------------------------------------------------------------------

PRODUCT_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "PRODUCT_NOT_FOUND: no feed, event or order names this productId."}
}
# Appended to the description of each route about one product.
ONE_PRODUCT = (
    "`productId` may name a product the catalog does not hold: the catalog names products by code, so a "
    "productId that only order lines without `productItemCode` name (no known code derives to it; such "
    "products appear in top and association rows with `productItemCode` null) is answered with a product "
    "made from those lines: `productItemCode` null, `name`, `price` (with its `currency`, else the site's) "
    "and `categories` from the newest line that gives each (a refund gives no price), `inFeed` false, "
    "`seenInEvents` true, `firstSeenAt`/`lastSeenAt` its first and last line, `updatedAt` when the newest "
    "line was received. Events name products by code, so such a product has no views, add-to-carts, dwell "
    "times or cart baskets."
)


@product_router.get(
    "/overview",
    response_model=ProductOverview,
    response_model_by_alias=True,
    responses=PRODUCT_NOT_FOUND,
)
def overview(
    request: Request, store: ConfigStoreDep, site: AnalyticsSite, product_id: ProductId, query: Range
) -> ProductOverview:
    """One product in the range: `views` (product_view events) and `uniqueViewers`; `addToCarts`
    (add_to_cart events) and `addToCartPeople`; `purchases` (sales holding the product), `unitsSold`
    and `buyers`; `people` with any product event of it or a purchase; `viewToCartRate` and
    `conversionRate`: the shares of its viewers who added it to cart / bought it in the range (0 without
    viewers); `revenueByCurrency` rows `{currency, revenue, orders, units}` and the `revenue` card (one
    amount for one currency, zero in the product's currency without sales; `currency: null, mixed: true`
    for several)."""
    product = load_product(request, store, site, product_id)
    return product_overview(request.app.state.engine, query, product=product)


@product_router.get(
    "/dwell-time",
    response_model=ProductDwell,
    response_model_by_alias=True,
    responses=PRODUCT_NOT_FOUND,
)
def dwell_time(
    request: Request, store: ConfigStoreDep, site: AnalyticsSite, product_id: ProductId, query: Range
) -> ProductDwell:
    """Time spent on the product from its `product_dwell_time` events: seconds from
    `metadata.dwellTimeSeconds` (also read: `dwellSeconds`, `durationSeconds`; milliseconds from
    `dwellTimeMs`, `durationMs`). Durations from 0 to 1800 s (30 min) inclusive are `measured`; events
    without one (`withoutDuration`) or outside it (`outOfRange`, an idle tab) are only counted. Figures
    over measured durations: `people`, `totalSeconds`, `avgSeconds`, `medianSeconds`, `p75Seconds`,
    `p90Seconds` (continuous quantiles), `maxSeconds` (null without any), the `distribution` in buckets
    [0,5), [5,15), [15,30), [30,60), [60,180), 180+ seconds, and `daily` rows (site time zone; days
    without events left out)."""
    product = load_product(request, store, site, product_id)
    return product_dwell(request.app.state.engine, query, product=product)


@product_router.get(
    "/associations",
    response_model=ProductAssociations,
    response_model_by_alias=True,
    responses=PRODUCT_NOT_FOUND,
)
def associations(
    request: Request,
    store: ConfigStoreDep,
    site: AnalyticsSite,
    product_id: ProductId,
    query: Range,
    source: Annotated[
        Source, Query(description="purchase: baskets from orders; cart: baskets from add_to_cart events.")
    ],
    mode: Annotated[
        Mode, Query(description="cart (default): one order or cart; session: one session; all: one person.")
    ] = "cart",
    limit: Annotated[int, Query(ge=1, le=100, description="Related products returned.")] = 20,
) -> ProductAssociations:
    """Market-basket figures of this product (A) against each product (B) that shares a basket with it
    in the range (replaces v1's bought-together and added-to-cart-together).

    Baskets: with `source=purchase`, the products on sales' lines (refunds apart, quantity above 0);
    with `source=cart`, the products of add_to_cart events. `mode=cart` (default): one basket per order
    (purchase), or per cart (cart: the add_to_cart events of one session between checkouts; a sale of
    that session, or a purchase event not naming a sale, closes the cart). `mode=session`: one basket per
    session (a visitor's session id). `mode=all`: one basket per person over the whole range. A basket
    holds each product once, whatever the quantity.

    With N the baskets of that kind in the range (`baskets`), |A| those holding the product
    (`productBaskets`; `productSupport` = |A| / N), |B| those holding B (`basketsWithProduct`) and |A∧B|
    those holding both (`together`): `support` = |A∧B| / N, `confidence` = |A∧B| / |A| (the share of A's
    baskets that also hold B), `lift` = confidence / (|B| / N) = |A∧B|·N / (|A|·|B|) (above 1: bought
    together more often than chance). Rates are rounded to 6 decimals (0 when a denominator is 0). Rows:
    most `together` first, then higher lift, then code; `relatedProducts` counts every B. `name` is the
    catalog's, or for a product its lines name only by `productId` (`productItemCode` null) the newest
    of those lines' names; null when unknown."""
    # What arrived since the catalog's last read first, as top does: the related products are named
    # from it.
    _sync(request, store, site)
    product = load_product(request, store, site, product_id, synced=True)
    engine = request.app.state.engine
    figures = product_associations(
        engine, query, product=product, source=source, mode=mode, limit=limit, names={}
    )
    names = product_names(
        store, engine, site=site, rows=[(a.product_id, a.product_item_code) for a in figures.associations]
    )
    for row in figures.associations:
        row.name = names.get(row.product_id)
    return figures


@product_router.get("/top", response_model=TopProducts, response_model_by_alias=True)
def top(
    request: Request,
    store: ConfigStoreDep,
    site: AnalyticsSite,
    query: Range,
    sort_by: Annotated[
        TopSort, Query(alias="sortBy", description="revenue (default), units or orders.")
    ] = "revenue",
    limit: Annotated[int, Query(ge=1, le=100, description="Products per currency.")] = 10,
    currency: Annotated[
        str | None,
        Query(
            description="Only sales in this currency (ISO-4217; lowercase is read as uppercase).",
            min_length=3,
            max_length=3,
            json_schema_extra=CURRENCY_ENUM,
        ),
    ] = None,
) -> TopProducts:
    """Best-selling products in the range (replaces v1's top-revenue). Products are ranked **within each
    currency** (never across currencies) by `sortBy`, ties by code, at most `limit` per currency. A
    product sold in two currencies has a row in each. Every row carries its `currency` (required), its
    `revenue` (line revenue in that currency, formatted with its minor units), `orders` (sales holding
    it) and `units`, plus the product's `views` and `addToCarts` in the range (product-level: the same on
    each of its currency rows). `currencies` lists the currencies present; `mixedCurrency` is true when
    several are. A product its lines name only by `productId`, which no code in the range derives to,
    has `productItemCode` null; `name` is the catalog's, or for such a product the newest of those lines'
    names (null when unknown)."""
    wanted = None
    if currency is not None:
        try:
            wanted = normalise_currency(currency)
        except ValueError as exc:
            raise BadRequest(str(exc), code="CURRENCY_NOT_ISO4217") from None
    engine = request.app.state.engine
    _sync(request, store, site)
    rows = top_sales(engine, query, sort_by=sort_by, limit=limit, currency=wanted)
    names = product_names(store, engine, site=site, rows=[(r["product_id"], r["code"]) for r in rows])
    return top_products(engine, query, sort_by=sort_by, limit=limit, currency=wanted, names=names, rows=rows)


@product_router.get("/tracking-status", response_model=TrackingStatus, response_model_by_alias=True)
def tracking(request: Request, store: ConfigStoreDep, site: AnalyticsSite, query: Range) -> TrackingStatus:
    """Whether product tracking works, over the range (default the last 30 days): per product event name
    (`product_impression`, `product_click`, `product_view`, `product_dwell_time`, `add_to_cart`,
    `wishlist`) the `events`, distinct `products`, `lastAt`, and how many carry `metadata.name`
    (`withName`), `metadata.price` (`withPrice`) and a category (`withCategory`); `orders`: sales, lines,
    products sold, and `productsNeverTracked` (sold, but named by no product event in the range); the
    `catalog` make-up; `productModuleEnabled` from the site's data-layer `trackingModules.product` (null
    when not configured); `checks` with an `ok` flag and a message saying what to fix. `status`: `ok`
    with product_view and add_to_cart events, `partial` with only some product events, `not_tracking`
    with none."""
    _sync(request, store, site)
    with store.connect() as conn:
        counts = catalog.counts(conn, site_id=site["id"])
    modules = (site.get("tracking_config") or {}).get("trackingModules") or {}
    product_module = modules.get("product") if isinstance(modules, dict) else None
    enabled = product_module.get("enabled") if isinstance(product_module, dict) else None
    return tracking_status(
        request.app.state.engine,
        query,
        catalog=CatalogCounts(
            products=counts["products"],
            from_feed=counts["from_feed"],
            seen_only_in_events=counts["seen_only"],
            feed_products_seen=counts["feed_and_seen"],
        ),
        module_enabled=enabled if isinstance(enabled, bool) else None,
    )


# --- v1 routes: removed on 16 February 2026, no aliases ---------------------------------------------

REMOVED = {
    "/product/{siteId}/top-revenue": "GET /api/v1/analytics/product/:siteId/top",
    "/product/{siteId}/bought-together": "GET /api/v1/analytics/product/:siteId/associations?source=purchase",
    "/product/{siteId}/added-to-cart-together": "GET /api/v1/analytics/product/:siteId/associations?source=cart",
    "/sites/{siteId}/products": "GET /api/v1/analytics/product/:siteId/catalog",
}


def _removed(replacement: str):
    def answer(siteId: str) -> None:
        raise NotFound(
            f"This product analytics v1 route was removed on 16 February 2026; use {replacement}",
            code="ROUTE_REMOVED",
        )

    return answer


for _path, _replacement in REMOVED.items():
    router.add_api_route(
        _path,
        _removed(_replacement),
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
    )

# Every product route states the shared semantics after its own; the routes about one product also
# say which products they answer for.
for _route in product_router.routes:
    if isinstance(_route, APIRoute):
        if _route.endpoint in (overview, dwell_time, associations):
            _route.description = f"{_route.description}\n\n{ONE_PRODUCT}"
        _route.description = f"{_route.description}\n\n{SEMANTICS}"
router.include_router(product_router)
