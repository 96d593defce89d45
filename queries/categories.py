"""Category analytics: how a site's categories are browsed, filtered, moved between and bought from.

Category activity is read from ``category_view`` and ``category_filter`` events (their
``metadata.categoryPath``, else ``entityId`` when that path names no category, as ``''`` or `` > ``),
from ``product_view``, ``product_click`` and ``add_to_cart`` events (their ``metadata.categoryPath``)
and from the lines of orders (each line's ``categoryPath``; sales only, refunds apart). Events and lines
that name no category count under the category ``unknown``. A path is its parts joined by `` > ``
(``Home > Kitchen``; spaces around ``>`` do not matter, case does). A category covers its
subcategories: ``Home`` includes ``Home > Kitchen``. Days are the site's local days. People are the
linked user when a visitor was ever identified, else the visitor. Money comes from order lines (unit
price × quantity; a line of quantity 0 bought nothing) per currency, never converted or summed across
currencies, each amount formatted with its currency's minor units (JPY without decimals); an order
counts once per category however many of its lines fall there.

How it runs: every report reads two cursor-local tables built for its range and category subtree,
``category_events`` (the events above, each with its category path) and ``category_sales`` (the order
lines, each with its line's category path).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import duckdb

from aisle.wire import CamelModel
from ingest.category_paths import SEPARATOR
from queries import library
from queries.money import MoneyTotal, format_amount, money_total, per_unit
from queries.ranges import LocalDays
from queries.rates import rate
from warehouse.engine import Engine


def parent_of(path: str) -> str | None:
    head, sep, _ = path.rpartition(SEPARATOR)
    return head if sep else None


class CurrencyRevenue(CamelModel):
    currency: str
    revenue: str
    orders: int
    avg_order_value: str


class CategoryScope(CamelModel):
    site_id: str
    category_path: str | None
    start_date: date
    end_date: date
    timezone: str


class CategoryTotals(CamelModel):
    category_views: int
    viewers: int
    sessions: int
    filter_uses: int
    product_views: int
    add_to_carts: int
    categories: int
    orders: int
    units_sold: int


class NodeMetrics(CamelModel):
    category_views: int
    viewers: int
    filter_uses: int
    product_views: int
    add_to_carts: int
    orders: int
    units_sold: int
    buyers: int
    revenue_by_currency: list[CurrencyRevenue]


class TopCategory(NodeMetrics):
    category_path: str
    parent_path: str | None
    depth: int


class CategoryOverview(CamelModel):
    scope: CategoryScope
    totals: CategoryTotals
    revenue_by_currency: list[CurrencyRevenue]
    revenue: MoneyTotal
    top_categories: list[TopCategory]


class ConversionMetrics(CamelModel):
    viewers: int
    product_viewers: int
    cart_adders: int
    buyers: int
    converted_viewers: int
    conversion_rate: float
    orders: int
    units_sold: int
    revenue_by_currency: list[CurrencyRevenue]
    revenue: MoneyTotal


class CategoryConversion(CamelModel):
    scope: CategoryScope
    metrics: ConversionMetrics


class CategoryList(CamelModel):
    scope: CategoryScope
    categories: list[TopCategory]


class CategoryNode(CamelModel):
    category_path: str
    parent_path: str | None
    depth: int
    own: NodeMetrics
    total: NodeMetrics


class CategoryTree(CamelModel):
    scope: CategoryScope
    categories: list[CategoryNode]


class CategoryProduct(CamelModel):
    product_id: str
    product_item_code: str | None
    name: str | None
    views: int
    viewers: int
    clicks: int
    add_to_carts: int
    orders: int
    units_sold: int
    buyers: int
    viewers_who_bought: int
    view_to_purchase_rate: float
    revenue_by_currency: list[CurrencyRevenue]


class CategoryProducts(CamelModel):
    scope: CategoryScope
    products: list[CategoryProduct]


class CategoryTransition(CamelModel):
    from_path: str
    to_path: str
    transitions: int
    sessions: int
    people: int
    share: float


class CategoryPaths(CamelModel):
    scope: CategoryScope
    transitions: list[CategoryTransition]


class TrendDay(CamelModel):
    date: date
    category_views: int
    viewers: int
    product_views: int
    add_to_carts: int
    orders: int
    revenue_by_currency: list[CurrencyRevenue]


class CategoryTrends(CamelModel):
    scope: CategoryScope
    days: list[TrendDay]


class FilterUse(CamelModel):
    filter: str
    value: str | None
    uses: int
    people: int
    categories: int


class CategoryFilters(CamelModel):
    scope: CategoryScope
    total_uses: int
    filters: list[FilterUse]


@dataclass(frozen=True)
class CategoryQuery(LocalDays):
    """One site's category activity between two inclusive local days, for one category subtree (a
    normalised path) or every category (None)."""

    category_path: str | None = None

    def params(self) -> dict[str, Any]:
        return {**super().params(), "category_path": self.category_path}

    def scope(self) -> CategoryScope:
        return CategoryScope(
            site_id=self.site_id,
            category_path=self.category_path,
            start_date=self.start_date,
            end_date=self.end_date,
            timezone=self.timezone,
        )


# --- small pure helpers ------------------------------------------------------------------------------


def currency_revenue(currency: str, revenue: Decimal, orders: int) -> CurrencyRevenue:
    """One currency's sales: the amount and the average per order, both in that currency's minor units."""
    return CurrencyRevenue(
        currency=currency,
        revenue=format_amount(revenue, currency),
        orders=orders,
        avg_order_value=per_unit(revenue, orders, currency),
    )


def _revenue_rows(rows: list[dict[str, Any]]) -> list[CurrencyRevenue]:
    return [currency_revenue(r["currency"], r["revenue"], r["orders"]) for r in rows]


def _total(rows: list[dict[str, Any]], query: CategoryQuery) -> MoneyTotal:
    return money_total(((r["currency"], r["revenue"]) for r in rows), empty_currency=query.currency)


def _node_metrics(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "category_views": row["category_views"],
        "viewers": row["viewers"],
        "filter_uses": row["filter_uses"],
        "product_views": row["product_views"],
        "add_to_carts": row["add_to_carts"],
        "orders": row["orders"],
        "units_sold": int(row["units_sold"]),
        "buyers": row["buyers"],
        "revenue_by_currency": _revenue_rows(row["revenue"]),
    }


def _top_category(row: dict[str, Any]) -> TopCategory:
    path = row["category_path"]
    return TopCategory(
        category_path=path, parent_path=parent_of(path), depth=path.count(SEPARATOR) + 1, **_node_metrics(row)
    )


_NO_ACTIVITY = NodeMetrics(
    category_views=0,
    viewers=0,
    filter_uses=0,
    product_views=0,
    add_to_carts=0,
    orders=0,
    units_sold=0,
    buyers=0,
    revenue_by_currency=[],
)


# --- running on one cursor ---------------------------------------------------------------------------


_run = library.rows_on


@contextmanager
def _category_activity(engine: Engine, query: CategoryQuery) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor holding the temporary tables `category_events` and `category_sales` of the query."""
    cursor = engine.cursor()
    try:
        params = query.params()
        cursor.execute(library.sql("category_events"), params)
        cursor.execute(library.sql("category_sales"), params)
        yield cursor
    finally:
        cursor.close()


def _nodes(cursor: duckdb.DuckDBPyConnection, query: CategoryQuery, *, rollup: bool) -> list[dict[str, Any]]:
    return _run(cursor, "category_nodes", {"rollup": rollup, "category_path": query.category_path})


# --- the reports ----------------------------------------------------------------------------------------


def category_overview(engine: Engine, query: CategoryQuery, *, top: int = 5) -> CategoryOverview:
    """Counts over the subtree (views, viewers, sessions with a view, filter uses, product views,
    add-to-carts, distinct category paths, orders with a line there, units), its sales per currency
    with a total only when there is a single currency, and the most viewed categories."""
    with _category_activity(engine, query) as cursor:
        totals = _run(cursor, "category_totals", {})[0]
        revenue = _run(cursor, "category_revenue", {})
        nodes = _nodes(cursor, query, rollup=False)
    return CategoryOverview(
        scope=query.scope(),
        totals=CategoryTotals(
            category_views=totals["category_views"],
            viewers=totals["viewers"],
            sessions=totals["sessions"],
            filter_uses=totals["filter_uses"],
            product_views=totals["product_views"],
            add_to_carts=totals["add_to_carts"],
            categories=totals["categories"],
            orders=totals["orders"],
            units_sold=int(totals["units_sold"]),
        ),
        revenue_by_currency=_revenue_rows(revenue),
        revenue=_total(revenue, query),
        top_categories=[_top_category(r) for r in nodes[:top]],
    )


def category_conversion(engine: Engine, query: CategoryQuery) -> CategoryConversion:
    """People who viewed the subtree (category_view), viewed a product in it, added one to the cart,
    bought a line of it; viewers who bought a line of it at or after their first view in the range
    (`convertedViewers`, over `viewers` = `conversionRate`); its sales per currency."""
    with _category_activity(engine, query) as cursor:
        totals = _run(cursor, "category_totals", {})[0]
        revenue = _run(cursor, "category_revenue", {})
    return CategoryConversion(
        scope=query.scope(),
        metrics=ConversionMetrics(
            viewers=totals["viewers"],
            product_viewers=totals["product_viewers"],
            cart_adders=totals["cart_adders"],
            buyers=totals["buyers"],
            converted_viewers=totals["converted_viewers"],
            conversion_rate=rate(totals["converted_viewers"], totals["viewers"]),
            orders=totals["orders"],
            units_sold=int(totals["units_sold"]),
            revenue_by_currency=_revenue_rows(revenue),
            revenue=_total(revenue, query),
        ),
    )


def top_categories(engine: Engine, query: CategoryQuery, *, limit: int) -> CategoryList:
    """Category paths as events and lines name them (no roll-up), most viewed first (then most
    orders, then by path)."""
    with _category_activity(engine, query) as cursor:
        nodes = _nodes(cursor, query, rollup=False)
    return CategoryList(scope=query.scope(), categories=[_top_category(r) for r in nodes[:limit]])


def category_tree(engine: Engine, query: CategoryQuery) -> CategoryTree:
    """Every category path seen and each of its ancestors, in path order: `own` counts what names the
    path itself, `total` what names it or any path below it (people distinct per node)."""
    with _category_activity(engine, query) as cursor:
        own = {r["category_path"]: r for r in _nodes(cursor, query, rollup=False)}
        total = {r["category_path"]: r for r in _nodes(cursor, query, rollup=True)}
    nodes = []
    for path in sorted(total, key=lambda p: p.split(SEPARATOR)):
        nodes.append(
            CategoryNode(
                category_path=path,
                parent_path=parent_of(path),
                depth=path.count(SEPARATOR) + 1,
                own=NodeMetrics(**_node_metrics(own[path])) if path in own else _NO_ACTIVITY,
                total=NodeMetrics(**_node_metrics(total[path])),
            )
        )
    return CategoryTree(scope=query.scope(), categories=nodes)


def category_products(engine: Engine, query: CategoryQuery, *, limit: int) -> CategoryProducts:
    """Products viewed, clicked or added to carts in the subtree (product events; a category event
    carrying a code names no product) or sold there, most viewed first (then most orders, then by
    code, products known only by productId last): their activity there, sales per currency, and the
    share of their viewers who bought them at or after viewing. A product is its productId: a line naming only the
    productId of a code is that code's product."""
    with _category_activity(engine, query) as cursor:
        rows = _run(cursor, "category_products", {"site_id": query.site_id, "limit": limit})
    products = []
    for r in rows:
        products.append(
            CategoryProduct(
                product_id=r["product_id"],
                product_item_code=r["code"],
                name=r["product_name"],
                views=r["views"],
                viewers=r["viewers"],
                clicks=r["clicks"],
                add_to_carts=r["add_to_carts"],
                orders=r["orders"],
                units_sold=int(r["units_sold"]),
                buyers=r["buyers"],
                viewers_who_bought=r["viewers_who_bought"],
                view_to_purchase_rate=rate(r["viewers_who_bought"], r["viewers"]),
                revenue_by_currency=_revenue_rows(r["revenue"]),
            )
        )
    return CategoryProducts(scope=query.scope(), products=products)


def category_trends(engine: Engine, query: CategoryQuery) -> CategoryTrends:
    """Every local day of the range, zero days included: views, viewers, product views, add-to-carts,
    orders (a day's orders over all currencies is a count, not money) and sales per currency."""
    with _category_activity(engine, query) as cursor:
        rows = _run(cursor, "category_trends", {"timezone": query.timezone})
    activity: dict[date, dict[str, Any]] = {}
    sales: dict[date, list[dict[str, Any]]] = {}
    for r in rows:
        if r["currency"] is None:
            activity[r["day"]] = r
        else:
            sales.setdefault(r["day"], []).append(r)
    days = []
    day = query.start_date
    while day <= query.end_date:
        a = activity.get(day, {"category_views": 0, "viewers": 0, "product_views": 0, "add_to_carts": 0})
        day_sales = sales.get(day, [])
        days.append(
            TrendDay(
                date=day,
                category_views=a["category_views"],
                viewers=a["viewers"],
                product_views=a["product_views"],
                add_to_carts=a["add_to_carts"],
                orders=sum(s["orders"] for s in day_sales),
                revenue_by_currency=_revenue_rows(day_sales),
            )
        )
        day += timedelta(days=1)
    return CategoryTrends(scope=query.scope(), days=days)


def category_filters(engine: Engine, query: CategoryQuery, *, limit: int) -> CategoryFilters:
    """Filters used on the subtree's listings (category_filter events), most used first."""
    with _category_activity(engine, query) as cursor:
        rows = _run(cursor, "category_filters", {"limit": limit})
    return CategoryFilters(
        scope=query.scope(),
        total_uses=int(rows[0]["total_uses"]) if rows else 0,
        filters=[
            FilterUse(
                filter=r["filter"],
                value=r["value"],
                uses=r["uses"],
                people=r["people"],
                categories=r["categories"],
            )
            for r in rows
        ],
    )


def category_paths(engine: Engine, query: CategoryQuery, *, limit: int) -> CategoryPaths:
    """Steps between consecutive category views of a session (a person's session id; at one instant by
    event id), repeats folded, most frequent first; `share` is the step's part of all steps leaving
    its `fromPath`."""
    params = {**query.params(), "limit": limit}
    rows = library.run(engine, "category_paths", params).to_pylist()
    return CategoryPaths(
        scope=query.scope(),
        transitions=[
            CategoryTransition(
                from_path=r["from_path"],
                to_path=r["to_path"],
                transitions=r["transitions"],
                sessions=r["sessions"],
                people=r["people"],
                share=rate(r["transitions"], int(r["leaving"])),
            )
            for r in rows
        ],
    )
