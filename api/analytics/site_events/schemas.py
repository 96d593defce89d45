"""Answers of the site-level event routes (the shapes `queries.site_events` and `queries.overview`
read)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from aisle.wire import CamelModel
from api.analytics.overview.schemas import EventCount, OverviewRevenue, OverviewTotals
from queries.site_events import Bucket


class SiteMetrics(OverviewTotals):
    bounce_rate: float = Field(description="The share of sessions with a single event.")
    avg_session_duration_seconds: float = Field(description="Last event time less first, per session.")
    avg_events_per_session: float
    purchase_conversion_rate: float
    revenue_by_currency: list[OverviewRevenue]
    mixed_currency: bool


class SiteEvent(CamelModel):
    event_id: str
    name: str
    timestamp: str = Field(description="ISO 8601, UTC.", json_schema_extra={"format": "date-time"})
    visitor_id: str
    session_id: str
    journey_id: str | None
    user_id: str | None
    url: str | None = Field(description="The page the event was sent from, if any.")
    entity_type: str | None = Field(description="The kind of thing the event is about, as sent.")
    entity_id: str | None = Field(description="The id of the thing the event is about, as sent.")
    product_item_code: str | None = Field(description="The product the event names, if any.")
    category_path: str | None = Field(description="The category the event names, if any.")
    metadata: dict[str, Any] = Field(description="The event's metadata, as stored.")
    channel: str | None = Field(description="web, mobile, server or import.")


class EventsPage(CamelModel):
    total: int = Field(description="Every match, whichever page is asked for.")
    limit: int
    offset: int
    events: list[SiteEvent]


class EventTypes(CamelModel):
    event_types: list[EventCount]


class TimeseriesBucket(CamelModel):
    bucket: str = Field(
        description="Day and week buckets: their local date (`2026-10-25T00:00:00`); hour buckets: their "
        "local start with its UTC offset (`2026-10-25T01:00:00+01:00`)."
    )
    events: int
    people: int


class EventTimeseries(CamelModel):
    interval: Bucket
    timezone: str
    series: list[TimeseriesBucket]
