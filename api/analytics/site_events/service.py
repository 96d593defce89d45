"""Site-level event analytics over the lake: overview, key metrics, event pages, time series."""

from __future__ import annotations

from datetime import UTC, date, datetime

from api.analytics.overview.schemas import OverviewReport
from api.analytics.scope import check_range_length, date_range
from api.analytics.site_events.schemas import (
    EventsPage,
    EventTimeseries,
    EventTypes,
    SiteMetrics,
    TimeseriesBucket,
)
from api.errors import BadRequest
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries import site_events
from queries.overview import Scope, event_breakdown, overview
from queries.site_events import Bucket
from warehouse.config_store.sites import Site
from warehouse.engine import Engine

# What the web library marks in `metadata.source` on events it maps from the storefront's data layer.
DATA_LAYER_SOURCE = "dataLayer"


def _scope(site: Site, days: int) -> Scope:
    return Scope.last_days([site["id"]], days, today=datetime.now(UTC).date())


def _event_name(name: str | None) -> str | None:
    if name is not None and name not in CANONICAL_EVENT_NAMES:
        raise BadRequest(f"'{name}' is not a canonical event name", code="UNKNOWN_EVENT_NAME")
    return name


def get_overview(engine: Engine, *, site: Site, days: int) -> OverviewReport:
    return OverviewReport.model_validate(overview(engine, _scope(site, days)))


def get_metrics(engine: Engine, *, site: Site, days: int) -> SiteMetrics:
    return SiteMetrics.model_validate(site_events.site_metrics(engine, site["id"], _scope(site, days)))


def list_events(
    engine: Engine,
    *,
    site: Site,
    days: int,
    limit: int,
    offset: int,
    name: str | None = None,
    source: str | None = None,
) -> EventsPage:
    page = site_events.events_page(
        engine,
        site["id"],
        _scope(site, days),
        limit=limit,
        offset=offset,
        name=_event_name(name),
        source=source,
    )
    return EventsPage.model_validate(page)


def list_data_layer_events(engine: Engine, *, site: Site, days: int, limit: int, offset: int) -> EventsPage:
    return list_events(engine, site=site, days=days, limit=limit, offset=offset, source=DATA_LAYER_SOURCE)


def list_event_types(engine: Engine, *, site: Site, days: int) -> EventTypes:
    return EventTypes.model_validate({"eventTypes": event_breakdown(engine, _scope(site, days))})


def get_timeseries(
    engine: Engine,
    *,
    site: Site,
    start_date: date | None,
    end_date: date | None,
    interval: Bucket,
    name: str | None,
) -> EventTimeseries:
    start, end = date_range(site, start_date, end_date)
    check_range_length(start, end)
    if interval == "hour" and (end - start).days > 31:
        raise BadRequest("Hourly series cover at most 31 days", code="RANGE_TOO_LONG_FOR_INTERVAL")
    series = site_events.timeseries(
        engine,
        site["id"],
        start=start,
        end=end,
        timezone=site["timezone"],
        interval=interval,
        name=_event_name(name),
    )
    return EventTimeseries(
        interval=interval, timezone=site["timezone"], series=[TimeseriesBucket(**row) for row in series]
    )
