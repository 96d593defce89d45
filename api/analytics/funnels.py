"""Funnel analytics routes."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Depends, Query, Request

from api.auth.permissions import ANALYTICS_VIEW
from api.deps import CurrentUser, StoreDep, load_owned_site
from api.errors import BadRequest, Forbidden
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.funnel import DEFAULT_WINDOW_SECONDS, FunnelQuery, FunnelReport, Order, funnel

router = APIRouter(prefix="/analytics", tags=["analytics"])

MAX_STEPS = 20
MAX_WINDOW_SECONDS = 365 * 24 * 3600


def analytics_site(store: StoreDep, principal: CurrentUser, siteId: str) -> dict[str, Any]:
    """The site of the path, for a caller with `analytics:view` in the organisation that owns it."""
    site = load_owned_site(store, principal, siteId)
    if not principal.can(ANALYTICS_VIEW):
        raise Forbidden("Your role lacks the permission 'analytics:view'", code="PERMISSION_DENIED")
    return site


AnalyticsSite = Annotated[dict[str, Any], Depends(analytics_site)]


def parse_steps(steps: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in steps.split(",") if s.strip())
    if len(names) < 2:
        raise BadRequest(
            "A funnel needs at least two steps: steps=page_view,add_to_cart", code="FUNNEL_NEEDS_TWO_STEPS"
        )
    if len(names) > MAX_STEPS:
        raise BadRequest(f"A funnel has at most {MAX_STEPS} steps", code="FUNNEL_TOO_MANY_STEPS")
    unknown = [n for n in names if n not in CANONICAL_EVENT_NAMES]
    if unknown:
        raise BadRequest(
            f"Not canonical event names: {', '.join(unknown)}",
            code="UNKNOWN_EVENT_NAME",
            details={"steps": unknown},
        )
    return names


def date_range(site: dict[str, Any], start: date | None, end: date | None) -> tuple[date, date]:
    """Inclusive dates in the site's time zone; the last 30 days by default."""
    today = datetime.now(ZoneInfo(site["timezone"])).date()
    end = end or today
    start = start or end - timedelta(days=29)
    if start > end:
        raise BadRequest("startDate must not be after endDate", code="DATE_RANGE_INVALID")
    return start, end


@router.get("/funnels/{siteId}", response_model=FunnelReport, response_model_by_alias=True)
def get_funnel(
    request: Request,
    site: AnalyticsSite,
    steps: Annotated[
        str, Query(description="Comma-separated canonical event names, in order; repeats allowed.")
    ],
    start_date: Annotated[
        date | None, Query(alias="startDate", description="First entry day (site time zone).")
    ] = None,
    end_date: Annotated[date | None, Query(alias="endDate", description="Last entry day, inclusive.")] = None,
    window_seconds: Annotated[
        int,
        Query(
            alias="windowSeconds",
            ge=1,
            le=MAX_WINDOW_SECONDS,
            description="Conversion window from step 1, inclusive.",
        ),
    ] = DEFAULT_WINDOW_SECONDS,
    order: Annotated[
        Order,
        Query(
            description="sequential: each step after the previous, other events may come between; "
            "strict: no other event of the person between steps; any: steps after step 1 in any order."
        ),
    ] = "sequential",  # fmt: skip
) -> FunnelReport:
    """People are counted once (the linked user when the visitor was ever identified, else the visitor),
    at the furthest step reached. Every step-1 event in the date range is a possible start; times come
    from each person's first most complete conversion. Orders count as `purchase` events, once.
    `conversionRate` is relative to people entered; `dropOff` is the people lost since the previous step."""
    names = parse_steps(steps)
    start, end = date_range(site, start_date, end_date)
    query = FunnelQuery(
        site_id=site["id"], steps=names, start_date=start, end_date=end, timezone=site["timezone"],
        window_seconds=window_seconds, order=order,
    )  # fmt: skip
    return funnel(request.app.state.engine, query)
