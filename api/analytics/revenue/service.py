"""Revenue over the lake: sales per currency, attributed revenue, the recommendations breakdown and
identified versus anonymous conversion, each one ``queries`` read."""

from __future__ import annotations

from api.analytics.revenue.schemas import (
    EntityRevenue,
    IdentityConversionMetrics,
    RecommendationsBreakdown,
    RevenueOverview,
)
from api.analytics.scope import check_range_length
from queries import attribution, revenue
from queries.attribution import EntityType, Model
from queries.revenue import ReportRange
from warehouse.engine import Engine


def get_overview(engine: Engine, *, report: ReportRange, site_currency: str) -> RevenueOverview:
    """The overview's daily series walks every day: its range is held to ``MAX_RANGE_DAYS`` (400
    ``DATE_RANGE_TOO_LONG``)."""
    check_range_length(report.start_date, report.end_date)
    return revenue.revenue_overview(engine, report, site_currency=site_currency)


def get_entity_revenue(
    engine: Engine,
    *,
    report: ReportRange,
    entity_type: EntityType,
    entity_id: str,
    site_currency: str,
    lookback_days: int,
) -> EntityRevenue:
    return attribution.entity_revenue(
        engine,
        report,
        entity_type=entity_type,
        entity_id=entity_id,
        site_currency=site_currency,
        lookback_days=lookback_days,
    )


def get_recommendations_breakdown(
    engine: Engine,
    *,
    report: ReportRange,
    site_currency: str,
    model: Model,
    lookback_days: int,
    limit: int,
    offset: int,
) -> RecommendationsBreakdown:
    return attribution.recommendations_breakdown(
        engine,
        report,
        site_currency=site_currency,
        model=model,
        lookback_days=lookback_days,
        limit=limit,
        offset=offset,
    )


def get_identity_metrics(
    engine: Engine, *, report: ReportRange, site_currency: str
) -> IdentityConversionMetrics:
    return revenue.identity_conversion_metrics(engine, report, site_currency=site_currency)
