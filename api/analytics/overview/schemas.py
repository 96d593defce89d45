"""Answers of the overview routes, over one site or every site of an organisation (the shapes
`queries.overview` reads)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from aisle.wire import CamelModel


class ReportScope(CamelModel):
    site_ids: list[str]
    start_date: dt.date = Field(description="First UTC day, inclusive.")
    end_date: dt.date = Field(description="Last UTC day, inclusive.")


class OverviewTotals(CamelModel):
    events: int
    people: int = Field(description="The linked user when a visitor was ever identified, else the visitor.")
    sessions: int
    page_views: int = Field(description="`page_view` and `virtual_page_view` events.")
    orders: int


class OverviewRevenue(CamelModel):
    """Sales of one currency (refunds apart), in its minor units."""

    currency: str
    revenue: str
    orders: int
    avg_order_value: str
    refunded: str


class EventCount(CamelModel):
    name: str
    family: str | None = Field(description="The canonical family of the name (null for none).")
    count: int
    people: int


class OverviewReport(CamelModel):
    scope: ReportScope
    totals: OverviewTotals
    purchase_conversion_rate: float = Field(description="The share of people who bought.")
    revenue_by_currency: list[OverviewRevenue]
    mixed_currency: bool = Field(description="True when several currencies appear; never added up.")
    top_events: list[EventCount] = Field(description="The ten most frequent event names.")


class TotalsChange(CamelModel):
    """(current - previous) / previous of each total; null when the earlier period had none."""

    events: float | None
    people: float | None
    sessions: float | None
    page_views: float | None
    orders: float | None


class ActivityDay(CamelModel):
    date: dt.date
    events: int
    people: int


class DashboardSummary(CamelModel):
    scope: ReportScope
    site_count: int
    current: OverviewTotals
    previous: OverviewTotals = Field(description="The `days` days before the current ones.")
    change: TotalsChange
    revenue_by_currency: list[OverviewRevenue]
    previous_revenue_by_currency: list[OverviewRevenue]
    mixed_currency: bool
    trend: list[ActivityDay] = Field(description="Every day of the range, zero days included.")


class EventsBreakdown(CamelModel):
    scope: ReportScope
    events: list[EventCount]


class ActivityLog(CamelModel):
    id: str
    action: str
    site_id: str | None
    user_id: str | None
    message: str | None
    details: dict[str, Any] | None
    created_at: str = Field(description="ISO 8601.", json_schema_extra={"format": "date-time"})


class ActivityLogs(CamelModel):
    logs: list[ActivityLog]
