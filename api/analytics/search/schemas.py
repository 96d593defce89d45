"""The search area's wire: the reports of ``queries.search_analytics``, which its routes return as they
are."""

from __future__ import annotations

from queries.search_analytics import TopProducts, TopQueries, ZeroResults

__all__ = ["TopProducts", "TopQueries", "ZeroResults"]
