"""Search analytics over one site or all sites of an organisation: the queries people search for, the
queries that find nothing, and the products people open from search.

Rows are per site and query (or product), so an answer over several sites never merges two sites'
queries or products. A query is the text of a search event's ``metadata.query`` (else ``q``,
``searchQuery`` or ``searchTerm``), trimmed, in lower case, runs of white space as one space (tabs, line
breaks and Unicode spaces such as the no-break space are white space too); search events without one
are not counted. A search shows as a ``search_query`` event and as an outcome: ``search_zero_results``,
or ``search_results`` (with ``metadata.resultCount``); ``searches`` is the larger of the two counts, so
storefronts sending only one kind still count each search once. A zero-result search is a
``search_zero_results`` event or a ``search_results`` event with ``resultCount`` 0 (once when a session
reports the same query both ways).

A search click is a ``product_click``, ``product_view`` or ``popular_product_click`` naming a product
(``metadata.productItemCode``) that carries a query itself, is a ``popular_product_click``, or comes
right after a search step in its session (``search_instant_open``, ``search_query``, ``search_results``,
``search_zero_results``, ``search_filter``, ``search_sort``, ``search_page``, ``recent_search_click``,
``popular_search_click``; page views, scrolls, impressions, dwell time, identity and runtime events and
placement interactions (hover, close, slider navigation, custom events) in between do not count as
steps), so opening a result counts once and the product page it leads to does not count again. A click
carrying its query counts in any session, one with no search event too. A click belongs to its own
query, else to the latest query a step of its session carried before it (a search's, or any step whose
metadata names one). At one instant events go by event id.

Days are UTC calendar days of the lake's partitions, as in the overview. A session is read back to the
UTC day before the range, so a search at 23:59 leads to a click at 00:00 of the range's first day (the
search itself counts in its own day). People are the linked user when a visitor was ever identified,
else the visitor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import duckdb

from aisle.wire import CamelModel
from ingest.event_names import EVENT_FAMILIES
from queries import library
from queries.overview import Scope
from queries.rates import rate
from warehouse.config_store.product_identity import product_id_for
from warehouse.engine import Engine

# The search family's steps a click can follow: closing the search leaves it, and a click on a popular
# category or product is a click itself, not a search step.
SEARCH_STEPS = tuple(
    name
    for name in EVENT_FAMILIES["search"]
    if name not in {"search_close", "popular_category_click", "popular_product_click"}
)
# Events that are no step between a search and the click that follows it.
IGNORED = (
    *EVENT_FAMILIES["page"],
    *EVENT_FAMILIES["runtime"],
    *EVENT_FAMILIES["widget"],
    *EVENT_FAMILIES["identity"],
    "product_impression",
    "product_dwell_time",
    "impression",
    "view",
    "hover",
    "close",
    "slider_navigate",
    "slider_swipe",
    "custom_event",
)


class SearchScope(CamelModel):
    site_ids: list[str]
    start_date: str
    end_date: str


class SearchQuery(CamelModel):
    site_id: str
    query: str
    searches: int
    people: int
    zero_result_searches: int
    zero_result_rate: float
    avg_result_count: float | None
    clicks: int
    clicks_per_search: float
    last_searched_at: datetime


class TopQueries(CamelModel):
    scope: SearchScope
    total_searches: int
    total_queries: int
    zero_result_rate: float
    queries: list[SearchQuery]


class ZeroResultQuery(CamelModel):
    site_id: str
    query: str
    zero_result_searches: int
    searches: int
    zero_result_rate: float
    people: int
    last_seen_at: datetime


class ZeroResults(CamelModel):
    scope: SearchScope
    total_zero_result_searches: int
    total_queries: int
    queries: list[ZeroResultQuery]


class QueryClicks(CamelModel):
    query: str
    clicks: int


class SearchProduct(CamelModel):
    site_id: str
    product_id: str
    product_item_code: str
    clicks: int
    people: int
    queries: int
    top_queries: list[QueryClicks]


class TopProducts(CamelModel):
    scope: SearchScope
    total_clicks: int
    products: list[SearchProduct]


def _scope(scope: Scope) -> SearchScope:
    return SearchScope(**scope.describe())


@contextmanager
def _search_steps(engine: Engine, scope: Scope) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor holding the temporary table `search_steps` of the scope."""
    cursor = engine.cursor()
    try:
        params = {**scope.params(), "ignored": list(IGNORED), "search_steps": list(SEARCH_STEPS)}
        cursor.execute(library.sql("search_steps"), params)
        yield cursor
    finally:
        cursor.close()


def _query_rows(engine: Engine, scope: Scope, *, limit: int, zero_only: bool) -> list[dict[str, Any]]:
    with _search_steps(engine, scope) as cursor:
        sql = library.sql("search_queries")
        return cursor.sql(sql, params={"limit": limit, "zero_only": zero_only}).to_arrow_table().to_pylist()


def top_queries(engine: Engine, scope: Scope, *, limit: int) -> TopQueries:
    """Queries by number of searches: people, zero-result searches and their share, the mean number of
    results reported, search clicks and clicks per search."""
    rows = _query_rows(engine, scope, limit=limit, zero_only=False)
    total_searches = int(rows[0]["total_searches"]) if rows else 0
    total_zero = int(rows[0]["total_zero_results"]) if rows else 0
    return TopQueries(
        scope=_scope(scope),
        total_searches=total_searches,
        total_queries=rows[0]["total_queries"] if rows else 0,
        zero_result_rate=rate(total_zero, total_searches),
        queries=[
            SearchQuery(
                site_id=r["site_id"],
                query=r["query"],
                searches=r["searches"],
                people=r["people"],
                zero_result_searches=r["zero_results"],
                zero_result_rate=rate(r["zero_results"], r["searches"]),
                avg_result_count=None if r["avg_result_count"] is None else round(r["avg_result_count"], 3),
                clicks=r["clicks"],
                clicks_per_search=rate(r["clicks"], r["searches"]),
                last_searched_at=r["last_searched_at"],
            )
            for r in rows
        ],
    )


def zero_result_queries(engine: Engine, scope: Scope, *, limit: int) -> ZeroResults:
    """Queries that found nothing, by number of zero-result searches (then by searches, then by query),
    with all their searches, the share that found nothing, the people who found nothing and the last
    time one found nothing."""
    rows = _query_rows(engine, scope, limit=limit, zero_only=True)
    return ZeroResults(
        scope=_scope(scope),
        total_zero_result_searches=int(rows[0]["total_zero_results"]) if rows else 0,
        total_queries=rows[0]["total_queries"] if rows else 0,
        queries=[
            ZeroResultQuery(
                site_id=r["site_id"],
                query=r["query"],
                zero_result_searches=r["zero_results"],
                searches=r["searches"],
                zero_result_rate=rate(r["zero_results"], r["searches"]),
                people=r["zero_people"],
                last_seen_at=r["last_zero_at"],
            )
            for r in rows
        ],
    )


def top_products(engine: Engine, scope: Scope, *, limit: int) -> TopProducts:
    """Products by search clicks: people who clicked, distinct queries, and the three queries that led
    to most clicks."""
    with _search_steps(engine, scope) as cursor:
        rows = (
            cursor.sql(library.sql("search_products"), params={"limit": limit}).to_arrow_table().to_pylist()
        )
    return TopProducts(
        scope=_scope(scope),
        total_clicks=int(rows[0]["total_clicks"]) if rows else 0,
        products=[
            SearchProduct(
                site_id=r["site_id"],
                product_id=str(product_id_for(r["site_id"], r["product_item_code"])),
                product_item_code=r["product_item_code"],
                clicks=r["clicks"],
                people=r["people"],
                queries=r["queries"],
                top_queries=[QueryClicks(**q) for q in r["top_queries"]],
            )
            for r in rows
        ],
    )
