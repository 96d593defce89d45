"""Category analytics routes under /analytics/category/:siteId."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.routing import APIRoute

from api.analytics.categories import schemas, service
from api.analytics.categories.params import Category
from api.analytics.scope import Limit
from api.deps import EngineDep
from api.descriptions import module_rules
from queries import categories as category_rules

router = APIRouter(prefix="/analytics/category/{siteId}", tags=["analytics"])

# The rules are ``queries.categories``' (its first paragraph; the second is how it runs); what the
# parameters and the card mean follows them.
SEMANTICS = (
    f"{module_rules(category_rules, paragraphs=slice(1))}\n\n"
    "`categoryPath` selects a category and everything below it; omitted means every category. `days`: the "
    "last N days in the site's time zone, today included. A card total (`revenue`) has an amount only "
    "when one currency is present (with no sales: zero in the site's currency), else `amount` and "
    "`currency` are null and `mixed` is true."
)


@router.get("/overview", response_model=schemas.CategoryOverview)
def overview(engine: EngineDep, query: Category) -> schemas.CategoryOverview:
    """Totals over the selected categories: `categoryViews`, `viewers` (people with a view), `sessions`
    with a view (a session is a person's `sessionId`: a visitor id that changes at login within a session
    stays one session), `filterUses`, `productViews`, `addToCarts`, `categories` (distinct paths seen),
    `orders` holding a line of them and `unitsSold`; `revenueByCurrency` (`{currency, revenue, orders,
    avgOrderValue}`, average = revenue / orders of that currency) and the `revenue` card; and
    `topCategories`, the five most viewed paths as `/top` lists them."""
    return service.get_overview(engine, query=query)


@router.get("/top", response_model=schemas.CategoryList)
def top(engine: EngineDep, query: Category, limit: Limit = 20) -> schemas.CategoryList:
    """Category paths as events and order lines name them (a parent's row holds only what names the
    parent itself; `/all` adds children up), most viewed first, then most orders, then by path. Each row:
    `categoryPath`, `parentPath`, `depth` (1 for a top-level category), `categoryViews`, `viewers`,
    `filterUses`, `productViews`, `addToCarts`, `orders`, `unitsSold`, `buyers` and `revenueByCurrency`."""
    return service.list_top(engine, query=query, limit=limit)


@router.get("/conversion", response_model=schemas.CategoryConversion)
def conversion(engine: EngineDep, query: Category) -> schemas.CategoryConversion:
    """`metrics`: `viewers` (people who viewed the categories), `productViewers`, `cartAdders` and
    `buyers` (people who bought a line of them), `convertedViewers` (viewers who bought a line of them
    at or after their first view of them in the range) and `conversionRate` = convertedViewers /
    viewers (0 without viewers), `orders`, `unitsSold`, `revenueByCurrency: [{currency, revenue,
    orders, avgOrderValue}]` and the `revenue` card (never one total over several currencies)."""
    return service.get_conversion(engine, query=query)


@router.get("/products", response_model=schemas.CategoryProducts)
def products(engine: EngineDep, query: Category, limit: Limit = 20) -> schemas.CategoryProducts:
    """Products viewed, clicked, added or sold in the categories (`product_view`, `product_click` and
    `add_to_cart` events and order lines: a category event carrying a `productItemCode` names no
    product), most viewed first, then most orders, then by code (products known only by `productId`
    last). A product is its `productId`, the canonical uuid of its `productItemCode` (the same code on
    the same site is always the same id); an order line
    without a code is the product its `productId` names, which is the product of a code when that id
    derives from it (one row, with the code), else a row with `productItemCode` null. Counts are those
    that name the selected categories: `views`, `viewers`, `clicks`, `addToCarts`, `orders`,
    `unitsSold`, `buyers`, `viewersWhoBought` (viewers who bought it at or after their first view) and
    `viewToPurchaseRate` = viewersWhoBought / viewers;
    `name` is the latest non-empty `metadata.name` (else `productName`) of its product events there, else
    the latest non-empty name of its order lines there (at one instant the later event id; the later order
    id, then line); `revenueByCurrency` per currency."""
    return service.list_products(engine, query=query, limit=limit)


@router.get("/paths", response_model=schemas.CategoryPaths)
def paths(engine: EngineDep, query: Category, limit: Limit = 20) -> schemas.CategoryPaths:
    """How people move between categories: the `category_view` events of each session (a person's
    `sessionId`) in time order (at one instant by `eventId`), repeated views of one category in a row
    folded into one, each step from one category to the next. Per step (`fromPath` → `toPath`):
    `transitions`, `sessions`, `people`, and `share` of all steps leaving `fromPath`. With
    `categoryPath`, steps that start or end in the selected categories; most frequent first."""
    return service.list_paths(engine, query=query, limit=limit)


@router.get("/trends", response_model=schemas.CategoryTrends)
def trends(engine: EngineDep, query: Category) -> schemas.CategoryTrends:
    """One row per day of the range in the site's time zone, zero days included: `categoryViews`,
    `viewers`, `productViews`, `addToCarts`, `orders` (a count over all currencies) and
    `revenueByCurrency`."""
    return service.get_trends(engine, query=query)


@router.get("/filters", response_model=schemas.CategoryFilters)
def filters(engine: EngineDep, query: Category, limit: Limit = 20) -> schemas.CategoryFilters:
    """Filters used on category listings, from `category_filter` events: the filter is
    `metadata.filterName`, else `filterType`, else `filter` (`unknown` when none); its value
    `metadata.filterValue`, else `value` (null when none); an empty text is none. Per filter and value: `uses`, `people`,
    `categories` (distinct paths); most used first. `totalUses` counts every use in the selection."""
    return service.list_filters(engine, query=query, limit=limit)


@router.get("/all", response_model=schemas.CategoryTree)
def all_categories(engine: EngineDep, query: Category) -> schemas.CategoryTree:
    """Every category seen and all its ancestors, in path order (a parent before its children): `own`
    holds what names the path itself, `total` what names it or any path below it (people counted once
    per node). With `categoryPath`, that category and its subcategories only."""
    return service.get_tree(engine, query=query)


# Every route states the shared semantics after its own.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        _route.description = f"{_route.description}\n\n{SEMANTICS}"
