"""Site-level event analytics routes under /analytics/sites/:siteId."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.analytics.overview.schemas import OverviewReport
from api.analytics.scope import MAX_RANGE_DAYS, AnalyticsSite, Days, Limit, Offset
from api.analytics.site_events import service
from api.analytics.site_events.schemas import EventsPage, EventTimeseries, EventTypes, SiteMetrics
from api.deps import EngineDep
from api.schemas import EVENT_NAME_ENUM, IsoDate
from queries.site_events import Bucket

router = APIRouter(prefix="/analytics/sites/{siteId}", tags=["analytics"])

EventName = Annotated[
    str | None, Query(description="Only events of this canonical name.", json_schema_extra=EVENT_NAME_ENUM)
]


@router.get("", response_model=OverviewReport)
def site_analytics(engine: EngineDep, site: AnalyticsSite, days: Days = 30) -> OverviewReport:
    """The overview of one site: counts, people across devices, revenue per currency, top events."""
    return service.get_overview(engine, site=site, days=days)


@router.get("/metrics", response_model=SiteMetrics)
def metrics(engine: EngineDep, site: AnalyticsSite, days: Days = 30) -> SiteMetrics:
    """Key metrics: the overview counts, bounce rate (share of sessions with a single event), average
    session duration and events per session, purchase conversion and revenue per currency."""
    return service.get_metrics(engine, site=site, days=days)


@router.get("/events", response_model=EventsPage)
def events(
    engine: EngineDep,
    site: AnalyticsSite,
    days: Days = 30,
    limit: Limit = 50,
    offset: Offset = 0,
    name: EventName = None,
) -> EventsPage:
    """The site's events, newest first, paged (`total` counts every match)."""
    return service.list_events(engine, site=site, days=days, limit=limit, offset=offset, name=name)


@router.get("/events/types", response_model=EventTypes)
def event_types(engine: EngineDep, site: AnalyticsSite, days: Days = 30) -> EventTypes:
    """Every event name seen, with its family, count and distinct people."""
    return service.list_event_types(engine, site=site, days=days)


@router.get(
    "/events/timeseries",
    response_model=EventTimeseries,
    responses={
        400: {
            "description": f"DATE_RANGE_TOO_LONG (over {MAX_RANGE_DAYS} days), "
            "RANGE_TOO_LONG_FOR_INTERVAL (hourly over 31 days), DATE_RANGE_INVALID."
        }
    },
)
def events_timeseries(
    engine: EngineDep,
    site: AnalyticsSite,
    start_date: Annotated[IsoDate | None, Query(alias="startDate")] = None,
    end_date: Annotated[IsoDate | None, Query(alias="endDate")] = None,
    interval: Annotated[
        Bucket, Query(description="hour, day or week (Monday), in the site's time zone.")
    ] = "day",
    name: EventName = None,
) -> EventTimeseries:
    """Events and people per bucket, every bucket of the range included (zeros too). Dates are
    inclusive, in the site's time zone; the last 30 days by default. Buckets are named as `bucket`
    says, so a day when summer time ends has 25 hour buckets and one when it starts 23. A range covers
    at most ten years, an hourly one 31 days (the 400 answer names the codes)."""
    return service.get_timeseries(
        engine, site=site, start_date=start_date, end_date=end_date, interval=interval, name=name
    )


@router.get("/datalayer/events", response_model=EventsPage)
def datalayer_events(
    engine: EngineDep, site: AnalyticsSite, days: Days = 30, limit: Limit = 50, offset: Offset = 0
) -> EventsPage:
    """Events captured from the storefront's data layer: those whose `metadata.source` is `dataLayer`
    (the web library marks events it maps from `externalDataLayerName`)."""
    return service.list_data_layer_events(engine, site=site, days=days, limit=limit, offset=offset)
