"""Search analytics routes: top queries, zero-result queries and the products opened from search, for
one site or every site of the caller's organisation."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.routing import APIRoute

from api.analytics.scope import Analyst, Days, Limit, SiteFilter
from api.analytics.search import service
from api.analytics.search.schemas import TopProducts, TopQueries, ZeroResults
from api.deps import ConfigStoreDep, EngineDep

router = APIRouter(prefix="/analytics/search", tags=["analytics"])


async def _report(
    principal: Analyst, site_id: SiteFilter = None, days: Days = 30, limit: Limit = 20
) -> service.SearchReport:
    return service.SearchReport(principal=principal, site_id=site_id, days=days, limit=limit)


# The query every search report takes: the caller, `siteId` (else every site), `days` and `limit`.
Report = Annotated[service.SearchReport, Depends(_report)]

SEMANTICS = (
    "Rows are per site and query (or product), so an organisation-wide answer never merges two sites' "
    "queries or products. A query is the text of the search event's `metadata.query` (else `q`, "
    "`searchQuery` or `searchTerm`), trimmed, in lower case, runs of white space as one space; search "
    "events without one are not counted. A search shows as a `search_query` event and as an outcome: "
    "`search_zero_results`, or `search_results` (with `metadata.resultCount`); `searches` is the larger "
    "of the two counts, so storefronts sending only one kind still count each search once. A "
    "zero-result search is a `search_zero_results` event or a `search_results` event with "
    "`resultCount` 0 (once when a session reports the same query both ways). A search click is a "
    "`product_click`, `product_view` or `popular_product_click` naming a product "
    "(`metadata.productItemCode`) that carries a query itself, is a `popular_product_click`, or comes "
    "right after a search step in its session (`search_instant_open`, `search_query`, `search_results`, "
    "`search_zero_results`, `search_filter`, `search_sort`, `search_page`, `recent_search_click`, "
    "`popular_search_click`; page views, scrolls, impressions, dwell time, identity and runtime events "
    "and placement interactions (hover, close, slider navigation, custom events) in between do not "
    "count as steps), so opening a result counts once and the product page it leads to does not count "
    "again. A click carrying its query counts in any session, one with no search event too. A click "
    "belongs to its own query, else to the latest query a step of its session carried before it (a "
    "search's, or any step whose metadata names one); sessions are read back to the "
    "UTC day before the range, so a search at 23:59 leads to a click at 00:00 of the range's first day "
    "(the search itself counts in its own day). At one instant events go by event id. `siteId` omitted: every site of the organisation. `days`: the last N UTC days, today "
    "included. People are the linked user when a visitor was ever identified, else the visitor."
)


@router.get("/top-queries", response_model=TopQueries)
def get_top_queries(store: ConfigStoreDep, engine: EngineDep, report: Report) -> TopQueries:
    """Queries by number of searches (then by query): `searches`, `people`, `zeroResultSearches` and
    `zeroResultRate` (zero-result searches / searches), `avgResultCount` (mean `resultCount` of its
    `search_results` events; null when none reported one), `clicks` (search clicks attributed to the
    query) and `clicksPerSearch` (clicks / searches; above 1 when people open several results),
    `lastSearchedAt`. `totalSearches`, `totalQueries` and `zeroResultRate` cover every query, also those
    past `limit`."""
    return service.list_top_queries(store, engine, report)


@router.get("/zero-results", response_model=ZeroResults)
def get_zero_results(store: ConfigStoreDep, engine: EngineDep, report: Report) -> ZeroResults:
    """Queries that found nothing at least once, by number of zero-result searches: `zeroResultSearches`,
    all its `searches`, `zeroResultRate`, `people` (who found nothing) and `lastSeenAt` (the latest zero result).
    `totalZeroResultSearches` and `totalQueries` cover every such query, also those past `limit`."""
    return service.list_zero_results(store, engine, report)


@router.get("/top-products", response_model=TopProducts)
def get_top_products(store: ConfigStoreDep, engine: EngineDep, report: Report) -> TopProducts:
    """Products by search clicks (then people, then code): `productId` (the canonical uuid of the site's
    `productItemCode`), `clicks`, `people`, `queries` (distinct queries that led to it) and `topQueries`
    (the three with most clicks). `totalClicks` covers every product, also those past `limit`."""
    return service.list_top_products(store, engine, report)


# Every route states the shared semantics after its own.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        _route.description = f"{_route.description}\n\n{SEMANTICS}"
