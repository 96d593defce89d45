"""Site-level event analytics routes under /analytics/sites/:siteId."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from api.analytics.scope import (
    MAX_RANGE_DAYS,
    AnalyticsSite,
    Days,
    Limit,
    Offset,
    check_range_length,
    date_range,
)
from api.errors import BadRequest
from api.schemas import EVENT_NAME_ENUM, IsoDate
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.overview import Scope, event_breakdown, overview
from queries.site_events import Bucket, events_page, site_metrics, timeseries

router = APIRouter(prefix="/analytics/sites/{siteId}", tags=["analytics"])

DATA_LAYER_SOURCE = "dataLayer"
EventName = Annotated[
    str | None, Query(description="Only events of this canonical name.", json_schema_extra=EVENT_NAME_ENUM)
]


def _scope(site: dict[str, Any], days: int) -> Scope:
    return Scope.last_days([site["id"]], days, today=datetime.now(UTC).date())


def _event_name(name: str | None) -> str | None:
    if name is not None and name not in CANONICAL_EVENT_NAMES:
        raise BadRequest(f"'{name}' is not a canonical event name", code="UNKNOWN_EVENT_NAME")
    return name


@router.get("")
def site_analytics(request: Request, site: AnalyticsSite, days: Days = 30) -> dict[str, Any]:
    """The overview of one site: counts, people across devices, revenue per currency, top events."""
    return overview(request.app.state.engine, _scope(site, days))


@router.get("/metrics")
def metrics(request: Request, site: AnalyticsSite, days: Days = 30) -> dict[str, Any]:
    """Key metrics: the overview counts, bounce rate (share of sessions with a single event), average
    session duration and events per session, purchase conversion and revenue per currency."""
    return site_metrics(request.app.state.engine, site["id"], _scope(site, days))


@router.get("/events")
def events(
    request: Request,
    site: AnalyticsSite,
    days: Days = 30,
    limit: Limit = 50,
    offset: Offset = 0,
    name: EventName = None,
) -> dict[str, Any]:
    """The site's events, newest first, paged (`total` counts every match)."""
    return events_page(
        request.app.state.engine,
        site["id"],
        _scope(site, days),
        limit=limit,
        offset=offset,
        name=_event_name(name),
    )


@router.get("/events/types")
def event_types(request: Request, site: AnalyticsSite, days: Days = 30) -> dict[str, Any]:
    """Every event name seen, with its family, count and distinct people."""
    return {"eventTypes": event_breakdown(request.app.state.engine, _scope(site, days))}


@router.get(
    "/events/timeseries",
    responses={
        400: {
            "description": f"DATE_RANGE_TOO_LONG (over {MAX_RANGE_DAYS} days), "
            "RANGE_TOO_LONG_FOR_INTERVAL (hourly over 31 days), DATE_RANGE_INVALID."
        }
    },
)
def events_timeseries(
    request: Request,
    site: AnalyticsSite,
    start_date: Annotated[IsoDate | None, Query(alias="startDate")] = None,
    end_date: Annotated[IsoDate | None, Query(alias="endDate")] = None,
    interval: Annotated[
        Bucket, Query(description="hour, day or week (Monday), in the site's time zone.")
    ] = "day",
    name: EventName = None,
) -> dict[str, Any]:
    """Events and people per bucket, every bucket of the range included (zeros too). Dates are
    inclusive, in the site's time zone; the last 30 days by default. Day and week buckets are named by
    their local date (`2026-10-25T00:00:00`), hour buckets by their local start with its UTC offset
    (`2026-10-25T01:00:00+01:00`), so a day when summer time ends has 25 of them and one when it starts 23. A range covers at most ten years
    (400 `DATE_RANGE_TOO_LONG`), an hourly one 31 days (400 `RANGE_TOO_LONG_FOR_INTERVAL`)."""
    start, end = date_range(site, start_date, end_date)
    check_range_length(start, end)
    if interval == "hour" and (end - start).days > 31:
        raise BadRequest("Hourly series cover at most 31 days", code="RANGE_TOO_LONG_FOR_INTERVAL")
    series = timeseries(
        request.app.state.engine,
        site["id"],
        start=start,
        end=end,
        timezone=site["timezone"],
        interval=interval,
        name=_event_name(name),
    )
    return {"interval": interval, "timezone": site["timezone"], "series": series}


@router.get("/datalayer/events")
def datalayer_events(
    request: Request, site: AnalyticsSite, days: Days = 30, limit: Limit = 50, offset: Offset = 0
) -> dict[str, Any]:
    """Events captured from the storefront's data layer: those whose `metadata.source` is `dataLayer`
    (the web library marks events it maps from `externalDataLayerName`)."""
    return events_page(
        request.app.state.engine,
        site["id"],
        _scope(site, days),
        limit=limit,
        offset=offset,
        source=DATA_LAYER_SOURCE,
    )
