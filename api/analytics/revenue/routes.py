"""Revenue routes: the per-currency overview, revenue attributed to one campaign, widget or
recommendation, the recommendations breakdown, and identified versus anonymous conversion."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.routing import APIRoute

from api.analytics.revenue import service
from api.analytics.revenue.params import LookbackDays, Range
from api.analytics.revenue.schemas import (
    EntityRevenue,
    IdentityConversionMetrics,
    RecommendationsBreakdown,
    RevenueOverview,
)
from api.analytics.revenue.semantics import CONVERSIONS, MONEY, RANGE, TOUCHPOINTS
from api.analytics.scope import MAX_RANGE_DAYS, AnalyticsSite, Offset
from api.deps import EngineDep
from queries.attribution import DEFAULT_LOOKBACK_DAYS, EntityType, Model

router = APIRouter(prefix="/analytics", tags=["analytics"])


@router.get(
    "/revenue/overview",
    response_model=RevenueOverview,
    responses={
        400: {"description": f"DATE_RANGE_TOO_LONG: the daily series covers at most {MAX_RANGE_DAYS} days."}
    },
)
def overview(engine: EngineDep, site: AnalyticsSite, report: Range) -> RevenueOverview:
    """Sales of one site (`siteId`, required) per currency, orders timed in the range:
    `revenueByCurrency` rows with `revenue` (sales, refunds excluded), `orders`, `avgOrderValue`
    (revenue / orders), `refunds` (refund orders) and `refunded` (their absolute amount), and
    `netRevenue` (revenue - refunded). `totalRevenue` and `totalNetRevenue` are cards (one amount only
    when a single currency appears; with no orders, zero in the site's currency). `orders` and `refunds`
    count across currencies (counts, not money). `daily`: every day of the range with a row for each
    currency that sold in the range (zeros included), so a range covers at most ten years
    (400 `DATE_RANGE_TOO_LONG`)."""
    return service.get_overview(engine, report=report, site_currency=site["currency"])


def _entity_route(entity_type: EntityType, path: str, noun: str) -> None:
    def route(
        engine: EngineDep,
        entityId: str,  # noqa: N803 - the path parameter's name on the wire
        site: AnalyticsSite,
        report: Range,
        lookback_days: LookbackDays = DEFAULT_LOOKBACK_DAYS,
    ) -> EntityRevenue:
        return service.get_entity_revenue(
            engine,
            report=report,
            entity_type=entity_type,
            entity_id=entityId,
            site_currency=site["currency"],
            lookback_days=lookback_days,
        )

    route.__name__ = f"{entity_type}_revenue"
    route.__doc__ = (
        f"Revenue attributed to one {noun} (`entityId`: the `entityId` its events carry, with `entityType` "
        f"`{entity_type}`) of the site `siteId` (required), over conversions timed in the range: "
        "`impressions`, `clicks`, `ctr` and `people` (who saw or clicked it) in the range; "
        "`assistedConversions`; and `models`, one entry per attribution model with `conversions` "
        "(credited conversions, purchases without an order included), `revenueByCurrency` "
        "(`{currency, revenue, orders}`, orders being credited orders) and the card `totalRevenue`. "
        "An id no event carries answers zeros, not 404 (ids of the storefront configuration are not "
        "checked here)."
    )
    router.add_api_route(
        # `{entityId}`, not `{id}`: across the API `{id}` in a path names a site.
        f"/revenue/{path}/{{entityId}}",
        route,
        methods=["GET"],
        response_model=EntityRevenue,
    )


_entity_route("campaign", "campaigns", "campaign")
_entity_route("widget", "widgets", "widget")
_entity_route("recommendation", "recommendations", "recommendation")


@router.get("/recommendations/breakdown", response_model=RecommendationsBreakdown)
def breakdown(
    engine: EngineDep,
    site: AnalyticsSite,
    report: Range,
    model: Annotated[
        Model,
        Query(description="The attribution model that credits conversions and revenue (default last_touch)."),
    ] = "last_touch",
    lookback_days: LookbackDays = DEFAULT_LOOKBACK_DAYS,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
) -> RecommendationsBreakdown:
    """Every recommendation (`entityType` `recommendation`, by `entityId`) of the site `siteId`
    (required) with impressions or clicks in the range, or a touchpoint of a conversion in it (one
    before the range too; listed even when `model` gives it no credit, as an assisted conversion): its
    `impressions`, `clicks`, `ctr`, `people`, `assistedConversions`, `attributedConversions` and
    `revenueByCurrency` (`{currency, revenue, orders}`) credited by `model`, and the card
    `totalRevenue`. Most clicked first, then most seen, then by id; `total` counts every row, `limit` /
    `offset` page them. The top level sums the same figures over every recommendation, per currency."""
    return service.get_recommendations_breakdown(
        engine,
        report=report,
        site_currency=site["currency"],
        model=model,
        lookback_days=lookback_days,
        limit=limit,
        offset=offset,
    )


@router.get("/identity/conversion-metrics", response_model=IdentityConversionMetrics)
def identity_metrics(engine: EngineDep, site: AnalyticsSite, report: Range) -> IdentityConversionMetrics:
    """People of the site `siteId` (required) active in the range (an event or a sale; a refund alone
    is none), split into `identified` (the person is a shop user: its visitor was linked to a user id at any time, or its
    events carry one) and `anonymous`. Each group: `people`, `converters` (bought in the range: an order
    that is not a refund, or a purchase event), `conversionRate` (converters / people), `orders`,
    `revenueByCurrency` (`{currency, revenue, orders, buyers, avgOrderValue, revenuePerPerson}`,
    revenuePerPerson = revenue / people of the group) and the card `totalRevenue`. `identifiedShare`:
    identified / all people; `conversionRateRatio`: identified rate / anonymous rate (null when the
    anonymous group has no converter or the identified group no people). A blank user id (`" "`) is no user."""
    return service.get_identity_metrics(engine, report=report, site_currency=site["currency"])


# Every route states the shared semantics after its own; the attribution ones also state the models.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        attributed = _route.path.endswith("/{entityId}") or _route.path.endswith("/recommendations/breakdown")
        shared = [TOUCHPOINTS, CONVERSIONS, RANGE, MONEY] if attributed else [RANGE, MONEY]
        _route.description = "\n\n".join([_route.description, *shared])
