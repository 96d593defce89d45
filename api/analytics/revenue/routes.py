"""Revenue routes: the per-currency overview, revenue attributed to one campaign, widget or
recommendation, the recommendations breakdown, and identified versus anonymous conversion."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.routing import APIRoute

from api.analytics.scope import MAX_RANGE_DAYS, AnalyticsSite, Offset, check_range_length, date_range
from api.errors import BadRequest
from api.schemas import IsoDate
from queries.attribution import (
    CLICK_NAMES,
    DEFAULT_LOOKBACK_DAYS,
    IMPRESSION_NAMES,
    EntityRevenue,
    EntityType,
    Model,
    RecommendationsBreakdown,
    entity_revenue,
    recommendations_breakdown,
)
from queries.revenue import (
    IdentityConversionMetrics,
    ReportRange,
    RevenueOverview,
    identity_conversion_metrics,
    revenue_overview,
)

router = APIRouter(prefix="/analytics", tags=["analytics"])

MONEY = (
    "Money comes from orders: amounts are never converted and never summed across currencies. Every "
    "amount sits in a row with its own `currency` and is a decimal string with that currency's ISO-4217 "
    "minor units (JPY `1200`, EUR `10.50`, KWD `1.500`), rounded half to even. A card over several "
    "currencies has `amount: null`, `currency: null`, `mixed: true`; the per-currency rows beside it "
    "carry the figures; a card with nothing to total is zero in the site's currency. People are the linked user when the visitor was ever identified, else the visitor."
)

RANGE = (
    "The range is whole days of the site's time zone: `startDate`..`endDate` (inclusive; the last 30 "
    "days by default) or `days` (the last N days, today included), not both."
)

TOUCHPOINTS = (
    "Touchpoints are impressions (events " + ", ".join(f"`{n}`" for n in IMPRESSION_NAMES) + ") and "
    "clicks (" + ", ".join(f"`{n}`" for n in CLICK_NAMES) + ") whose `entityType` is `campaign`, "
    "`widget` or `recommendation` (any case) with an `entityId`, by the same person, strictly before "
    "the conversion and at most `lookbackDays` (default 30, 1-365) earlier. A conversion's touchpoints "
    "are ordered by time, then event id, and each model gives them credits that sum to 1: `first_touch` "
    "/ `last_touch` all to the first / last; `linear` 1/n each; `time_decay` weight 2^(-age / 7 days) "
    "(half-life 7 days, age = conversion time - touchpoint time), normalised; `position_based` 40% "
    "first, 40% last, 20% split evenly between the others (one touchpoint: 100%; two: 50% each). "
    "Credits are split over every touchpoint of a conversion, whatever entity it belongs to; an "
    "entity's credit is the sum of its touchpoints' credits, its revenue that credit times the order "
    "total."
)

CONVERSIONS = (
    "Conversions are orders timed in the range (refunds excluded) and `purchase` events in it that name "
    "no sale; a purchase event whose `metadata.orderId` names a sale of the site (of any date; a refund "
    "is no sale) is that same purchase, once, at the sale's time and with its money (other purchase "
    "events count as conversions without money). "
    "Touchpoints may precede the range. Attributed revenue is the sum over conversions of the entity's "
    "share (credit times order total, kept at 6 decimals), the row then rounded to the currency's minor "
    "units; `orders` / `conversions` are summed credits (fractions of conversions). Refunds are not "
    "netted from attributed revenue. `assistedConversions`: conversions with at least one touchpoint of "
    "the entity. `ctr` is clicks / impressions in the range (null without impressions)."
)


def report_range(
    site: AnalyticsSite,
    start_date: Annotated[
        IsoDate | None, Query(alias="startDate", description="First day (site time zone).")
    ] = None,
    end_date: Annotated[IsoDate | None, Query(alias="endDate", description="Last day, inclusive.")] = None,
    days: Annotated[
        int | None,
        Query(
            ge=1,
            le=365,
            description="The last N days, today included; not with `startDate`/`endDate` (400 "
            "`RANGE_PARAMETERS_CONFLICT`).",
        ),
    ] = None,
) -> ReportRange:
    if days is not None:
        if start_date or end_date:
            raise BadRequest(
                "Send either days or startDate/endDate, not both", code="RANGE_PARAMETERS_CONFLICT"
            )
        return ReportRange.last_days(site_id=site["id"], days=days, timezone=site["timezone"])
    start, end = date_range(site, start_date, end_date)
    return ReportRange(site["id"], start, end, site["timezone"])


Range = Annotated[ReportRange, Depends(report_range)]
LookbackDays = Annotated[
    int,
    Query(
        alias="lookbackDays",
        ge=1,
        le=365,
        description="How many days before a conversion a touchpoint still counts (default 30).",
    ),
]


@router.get(
    "/revenue/overview",
    response_model=RevenueOverview,
    response_model_by_alias=True,
    responses={
        400: {"description": f"DATE_RANGE_TOO_LONG: the daily series covers at most {MAX_RANGE_DAYS} days."}
    },
)
def overview(request: Request, site: AnalyticsSite, report: Range) -> RevenueOverview:
    """Sales of one site (`siteId`, required) per currency, orders timed in the range:
    `revenueByCurrency` rows with `revenue` (sales, refunds excluded), `orders`, `avgOrderValue`
    (revenue / orders), `refunds` (refund orders) and `refunded` (their absolute amount), and
    `netRevenue` (revenue - refunded). `totalRevenue` and `totalNetRevenue` are cards (one amount only
    when a single currency appears; with no orders, zero in the site's currency). `orders` and `refunds`
    count across currencies (counts, not money). `daily`: every day of the range with a row for each
    currency that sold in the range (zeros included), so a range covers at most ten years
    (400 `DATE_RANGE_TOO_LONG`)."""
    check_range_length(report.start_date, report.end_date)
    return revenue_overview(request.app.state.engine, report, site_currency=site["currency"])


def _entity_route(entity_type: EntityType, path: str, noun: str) -> None:
    def route(
        request: Request,
        entityId: str,  # noqa: N803 - the path parameter's name on the wire
        site: AnalyticsSite,
        report: Range,
        lookback_days: LookbackDays = DEFAULT_LOOKBACK_DAYS,
    ):
        return entity_revenue(
            request.app.state.engine,
            report,
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
        response_model_by_alias=True,
    )


_entity_route("campaign", "campaigns", "campaign")
_entity_route("widget", "widgets", "widget")
_entity_route("recommendation", "recommendations", "recommendation")


@router.get(
    "/recommendations/breakdown", response_model=RecommendationsBreakdown, response_model_by_alias=True
)
def breakdown(
    request: Request,
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
    return recommendations_breakdown(
        request.app.state.engine,
        report,
        site_currency=site["currency"],
        model=model,
        lookback_days=lookback_days,
        limit=limit,
        offset=offset,
    )


@router.get(
    "/identity/conversion-metrics", response_model=IdentityConversionMetrics, response_model_by_alias=True
)
def identity_metrics(request: Request, site: AnalyticsSite, report: Range) -> IdentityConversionMetrics:
    """People of the site `siteId` (required) active in the range (an event or a sale; a refund alone
    is none), split into `identified` (the person is a shop user: its visitor was linked to a user id at any time, or its
    events carry one) and `anonymous`. Each group: `people`, `converters` (bought in the range: an order
    that is not a refund, or a purchase event), `conversionRate` (converters / people), `orders`,
    `revenueByCurrency` (`{currency, revenue, orders, buyers, avgOrderValue, revenuePerPerson}`,
    revenuePerPerson = revenue / people of the group) and the card `totalRevenue`. `identifiedShare`:
    identified / all people; `conversionRateRatio`: identified rate / anonymous rate (null when the
    anonymous group has no converter or the identified group no people). A blank user id (`" "`) is no user."""
    return identity_conversion_metrics(request.app.state.engine, report, site_currency=site["currency"])


# Every route states the shared semantics after its own; the attribution ones also state the models.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        attributed = _route.path.endswith("/{entityId}") or _route.path.endswith("/recommendations/breakdown")
        shared = [TOUCHPOINTS, CONVERSIONS, RANGE, MONEY] if attributed else [RANGE, MONEY]
        _route.description = "\n\n".join([_route.description, *shared])
