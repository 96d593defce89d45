"""The category area's wire: the reports of ``queries.categories``, which its routes return as they are."""

from __future__ import annotations

from queries.categories import (
    CategoryConversion,
    CategoryFilters,
    CategoryList,
    CategoryOverview,
    CategoryPaths,
    CategoryProducts,
    CategoryTree,
    CategoryTrends,
)

__all__ = [
    "CategoryConversion",
    "CategoryFilters",
    "CategoryList",
    "CategoryOverview",
    "CategoryPaths",
    "CategoryProducts",
    "CategoryTree",
    "CategoryTrends",
]
