"""Category analytics over the lake: each report is one ``queries.categories`` read."""

from __future__ import annotations

from api.analytics.categories import schemas
from queries import categories
from queries.categories import CategoryQuery
from warehouse.engine import Engine


def get_overview(engine: Engine, *, query: CategoryQuery) -> schemas.CategoryOverview:
    return categories.category_overview(engine, query)


def list_top(engine: Engine, *, query: CategoryQuery, limit: int) -> schemas.CategoryList:
    return categories.top_categories(engine, query, limit=limit)


def get_conversion(engine: Engine, *, query: CategoryQuery) -> schemas.CategoryConversion:
    return categories.category_conversion(engine, query)


def list_products(engine: Engine, *, query: CategoryQuery, limit: int) -> schemas.CategoryProducts:
    return categories.category_products(engine, query, limit=limit)


def list_paths(engine: Engine, *, query: CategoryQuery, limit: int) -> schemas.CategoryPaths:
    return categories.category_paths(engine, query, limit=limit)


def get_trends(engine: Engine, *, query: CategoryQuery) -> schemas.CategoryTrends:
    return categories.category_trends(engine, query)


def list_filters(engine: Engine, *, query: CategoryQuery, limit: int) -> schemas.CategoryFilters:
    return categories.category_filters(engine, query, limit=limit)


def get_tree(engine: Engine, *, query: CategoryQuery) -> schemas.CategoryTree:
    return categories.category_tree(engine, query)
