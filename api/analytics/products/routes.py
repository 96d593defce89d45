"""Product analytics v2 routes: catalog, feed import and its summary, one product's overview, dwell
time and associations, top products per currency, tracking status. v1 routes are gone
(``removed_v1``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from api.analytics.products import removed_v1, service
from api.analytics.products.params import (
    FeedBody,
    FeedFormat,
    ProductId,
    Range,
    refuse_product_item_code,
)
from api.analytics.products.schemas import (
    CatalogPageOut,
    FeedImportOut,
    FeedsSummary,
    ProductAssociations,
    ProductDwell,
    ProductOverview,
    TopProducts,
    TrackingStatus,
)
from api.analytics.scope import AnalyticsSite
from api.deps import ConfigStoreDep, CurrentUser, EngineDep, WritableSiteById
from api.descriptions import module_rules
from api.schemas import CURRENCY_ENUM
from ingest import product_feed as feed_rules
from jobs.product_catalog import INTERVAL_SECONDS
from queries import products
from queries.products import Mode, Source, TopSort

# Under the router's prefix; the general body limit leaves it to MAX_FEED_BYTES (``api.app``).
FEED_PATH = "/product/{siteId}/feed"

# The rules are ``queries.products``'s; what the parameters and the access mean follows them.
SEMANTICS = (
    f"{module_rules(products, paragraphs=slice(1))}\n\n"
    "A query naming a product by `productItemCode` answers 400 `PRODUCT_ID_REQUIRED` with the id to send. "
    "The range is `startDate`..`endDate` (inclusive days of the site's time zone) or else the last `days` "
    "days, today included (30 by default). Access: `analytics:view` in the organisation that owns the site "
    "(403 otherwise)."
)

# The product routes read the catalog as the product-catalog job left it (``jobs.product_catalog``).
FRESHNESS = (
    "The catalog learns the products events and orders name from a job, not as it is read: a product "
    f"first named by an event or order is in it about {INTERVAL_SECONDS:g} seconds after they reach the lake."
)

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

# The feed's columns and aliases, as ``ingest.product_feed`` (which reads them) states them.
FEED_COLUMNS = module_rules(feed_rules)

PRODUCT_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "PRODUCT_NOT_FOUND: no feed, event or order names this productId."}
}

router = APIRouter(prefix="/analytics", tags=["product analytics"])
product_router = APIRouter(
    prefix="/product/{siteId}",
    tags=["product analytics"],
    dependencies=[Depends(refuse_product_item_code)],
)


# --- catalog and feeds ------------------------------------------------------------------------------


@product_router.get("/catalog", response_model=CatalogPageOut)
def product_catalog(
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
    return service.list_catalog(store, site=site, search=search, page=page, limit=limit)


# A feed of only blanks is 400 `FEED_EMPTY`: the text needs one character bytes.strip() keeps.
FEED_TEXT = {"type": "string", "pattern": r"[^ \t\n\r\v\f]"}

FEED_DESCRIPTION = (
    'The feed: CSV with a header row (`text/csv`), a JSON array of products or `{"products": [...]}` '
    "(`application/json`), or JSON lines (`application/x-ndjson`); UTF-8."
)


@router.post(
    FEED_PATH,
    response_model=FeedImportOut,
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
    store: ConfigStoreDep, site: WritableSiteById, principal: CurrentUser, fmt: FeedFormat, body: FeedBody
) -> FeedImportOut:
    """Import a product feed into the site's catalog (needs `sites:write`). Rows are checked one by one:
    good rows are stored, each bad row is refused with its `row` (CSV/JSON-lines line number, the CSV
    header being line 1; position from 1 in a JSON array), a stable `code` and a `reason`, at most 100
    listed (`rejectedByCode` counts them all). Codes: `ROW_NOT_OBJECT`, `MISSING_PRODUCT_CODE`,
    `INVALID_PRODUCT_CODE`, `INVALID_NAME`, `INVALID_PRICE` (not a decimal, negative, more than 6
    decimals), `CURRENCY_NOT_ISO4217`, `CURRENCY_CONFLICT`, `INVALID_CATEGORIES`, `INVALID_STOCK`,
    `INVALID_URL`, `DUPLICATE_PRODUCT_CODE` (a code already given earlier in the same feed). A product is
    upserted by its code: the fields a row gives replace the stored ones, the others stay. The import is
    recorded for `feeds-summary`. A feed that cannot be read as a whole answers 400 `FEED_UNREADABLE`
    and stores nothing. The columns the feed may have follow."""
    return await run_in_threadpool(
        service.create_feed_import, store, site=site, body=body, fmt=fmt, created_by=principal.user_id
    )


@product_router.get("/feeds-summary", response_model=FeedsSummary)
def feeds_summary(store: ConfigStoreDep, site: AnalyticsSite) -> FeedsSummary:
    """Where the catalog comes from: `products` in all, `fromFeed` (named by a feed import),
    `seenOnlyInEvents` (known only from events and orders), `feedProductsSeenInEvents` (from a feed and
    also seen), the number of `imports`, rows refused over all imports (`rejectedRowsTotal`), and the
    `lastImport` (null before the first) with its counts and refused rows."""
    return service.get_feeds_summary(store, site=site)


# --- one product ------------------------------------------------------------------------------------


@product_router.get("/overview", response_model=ProductOverview, responses=PRODUCT_NOT_FOUND)
def overview(
    store: ConfigStoreDep, engine: EngineDep, site: AnalyticsSite, product_id: ProductId, query: Range
) -> ProductOverview:
    """One product in the range: `views` (product_view events) and `uniqueViewers`; `addToCarts`
    (add_to_cart events) and `addToCartPeople`; `purchases` (sales holding the product), `unitsSold`
    and `buyers`; `people` with any product event of it or a purchase; `viewToCartRate` and
    `conversionRate`: the shares of its viewers who added it to cart / bought it in the range (0 without
    viewers); `revenueByCurrency` rows `{currency, revenue, orders, units}` and the `revenue` card (one
    amount for one currency, zero in the product's currency without sales; `currency: null, mixed: true`
    for several)."""
    return service.get_overview(store, engine, site=site, product_id=product_id, query=query)


@product_router.get("/dwell-time", response_model=ProductDwell, responses=PRODUCT_NOT_FOUND)
def dwell_time(
    store: ConfigStoreDep, engine: EngineDep, site: AnalyticsSite, product_id: ProductId, query: Range
) -> ProductDwell:
    """Time spent on the product from its `product_dwell_time` events: seconds from
    `metadata.dwellTimeSeconds` (also read: `dwellSeconds`, `durationSeconds`; milliseconds from
    `dwellTimeMs`, `durationMs`). Durations from 0 to 1800 s (30 min) inclusive are `measured`; events
    without one (`withoutDuration`) or outside it (`outOfRange`, an idle tab) are only counted. Figures
    over measured durations: `people`, `totalSeconds`, `avgSeconds`, `medianSeconds`, `p75Seconds`,
    `p90Seconds` (continuous quantiles), `maxSeconds` (null without any), the `distribution` in buckets
    [0,5), [5,15), [15,30), [30,60), [60,180), 180+ seconds, and `daily` rows (site time zone; days
    without events left out)."""
    return service.get_dwell_time(store, engine, site=site, product_id=product_id, query=query)


@product_router.get("/associations", response_model=ProductAssociations, responses=PRODUCT_NOT_FOUND)
def associations(
    store: ConfigStoreDep,
    engine: EngineDep,
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
    return service.get_associations(
        store, engine, site=site, product_id=product_id, query=query, source=source, mode=mode, limit=limit
    )


@product_router.get("/top", response_model=TopProducts)
def top(
    store: ConfigStoreDep,
    engine: EngineDep,
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
    return service.list_top(
        store, engine, site=site, query=query, sort_by=sort_by, limit=limit, currency=currency
    )


@product_router.get("/tracking-status", response_model=TrackingStatus)
def tracking(store: ConfigStoreDep, engine: EngineDep, site: AnalyticsSite, query: Range) -> TrackingStatus:
    """Whether product tracking works, over the range (default the last 30 days): per product event name
    (`product_impression`, `product_click`, `product_view`, `product_dwell_time`, `add_to_cart`,
    `wishlist`) the `events`, distinct `products`, `lastAt`, and how many carry `metadata.name`
    (`withName`), `metadata.price` (`withPrice`) and a category (`withCategory`); `orders`: sales, lines,
    products sold, and `productsNeverTracked` (sold, but named by no product event in the range); the
    `catalog` make-up; `productModuleEnabled` from the site's data-layer `trackingModules.product` (null
    when not configured); `checks` with an `ok` flag and a message saying what to fix. `status`: `ok`
    with product_view and add_to_cart events, `partial` with only some product events, `not_tracking`
    with none."""
    return service.get_tracking_status(store, engine, site=site, query=query)


# Every product route states the shared semantics after its own; the routes about one product also
# say which products they answer for.
for _route in product_router.routes:
    if isinstance(_route, APIRoute):
        if _route.endpoint in (overview, dwell_time, associations):
            _route.description = f"{_route.description}\n\n{ONE_PRODUCT}"
        _route.description = f"{_route.description}\n\n{FRESHNESS}\n\n{SEMANTICS}"
for _route in router.routes:
    if isinstance(_route, APIRoute) and _route.endpoint is product_feed:
        _route.description = f"{_route.description}\n\n{FEED_COLUMNS}"
router.include_router(removed_v1.router)
router.include_router(product_router)
