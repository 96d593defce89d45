"""Organisation- and site-level overview routes: overview, dashboard summary, events breakdown,
activity logs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.analytics.overview import service
from api.analytics.overview.schemas import ActivityLogs, DashboardSummary, EventsBreakdown, OverviewReport
from api.analytics.scope import Analyst, Days, SiteFilter
from api.deps import ConfigStoreDep, EngineDep

router = APIRouter(prefix="/analytics", tags=["analytics"])


@router.get("/overview", response_model=OverviewReport)
def get_overview(
    engine: EngineDep, store: ConfigStoreDep, principal: Analyst, days: Days = 30, site_id: SiteFilter = None
) -> OverviewReport:
    """Events, people (a person is the linked user when a visitor was ever identified), sessions,
    page views and orders; the share of people who bought; revenue per currency (`mixedCurrency` is true
    when several currencies appear — amounts are never converted or added up across currencies)."""
    return service.get_overview(engine, store, principal=principal, site_id=site_id, days=days)


@router.get("/dashboard-summary", response_model=DashboardSummary)
def dashboard_summary(
    engine: EngineDep, store: ConfigStoreDep, principal: Analyst, days: Days = 30, site_id: SiteFilter = None
) -> DashboardSummary:
    """The overview of the last `days` days next to the `days` days before, with relative change
    (null when the earlier period had none), and a daily trend with zero days included."""
    return service.get_dashboard_summary(engine, store, principal=principal, site_id=site_id, days=days)


@router.get("/events/breakdown", response_model=EventsBreakdown)
def events_breakdown(
    engine: EngineDep, store: ConfigStoreDep, principal: Analyst, days: Days = 30, site_id: SiteFilter = None
) -> EventsBreakdown:
    """Events by canonical name with their family, count and distinct people, most frequent first."""
    return service.get_events_breakdown(engine, store, principal=principal, site_id=site_id, days=days)


@router.get("/activity-logs", response_model=ActivityLogs)
def activity_logs(
    store: ConfigStoreDep,
    principal: Analyst,
    site_id: SiteFilter = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> ActivityLogs:
    """Configuration changes of the organisation (or one of its sites), newest first."""
    return service.list_activity_logs(store, principal=principal, site_id=site_id, limit=limit)
