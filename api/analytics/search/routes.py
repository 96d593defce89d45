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
from api.descriptions import module_rules
from queries import search_analytics

router = APIRouter(prefix="/analytics/search", tags=["analytics"])


async def _report(
    principal: Analyst, site_id: SiteFilter = None, days: Days = 30, limit: Limit = 20
) -> service.SearchReport:
    return service.SearchReport(principal=principal, site_id=site_id, days=days, limit=limit)


# The query every search report takes: the caller, `siteId` (else every site), `days` and `limit`.
Report = Annotated[service.SearchReport, Depends(_report)]

# The rules are ``queries.search_analytics``'s; what the parameters mean follows them.
SEMANTICS = (
    f"{module_rules(search_analytics)}\n\n"
    "`siteId` omitted: every site of the organisation. `days`: the last N UTC days, today included."
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
