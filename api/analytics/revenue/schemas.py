"""The revenue area's wire: the reports of ``queries.revenue`` and ``queries.attribution``, which its
routes return as they are."""

from __future__ import annotations

from queries.attribution import EntityRevenue, RecommendationsBreakdown
from queries.revenue import IdentityConversionMetrics, RevenueOverview

__all__ = ["EntityRevenue", "IdentityConversionMetrics", "RecommendationsBreakdown", "RevenueOverview"]
