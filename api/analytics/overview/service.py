"""Overview numbers of one site or every site of an organisation, and its activity log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.analytics.overview.schemas import (
    ActivityLog,
    ActivityLogs,
    DashboardSummary,
    EventsBreakdown,
    OverviewReport,
    TotalsChange,
)
from api.deps import Principal, load_owned_site
from queries.overview import Scope, daily_activity, event_breakdown, overview, revenue_by_currency
from warehouse.config_store import activity, sites
from warehouse.config_store.store import ConfigStore
from warehouse.engine import Engine


def site_ids(store: ConfigStore, *, principal: Principal, site_id: str | None) -> list[str]:
    """The one site asked for (which the caller's organisation must own), else every site of it."""
    if site_id:
        return [load_owned_site(store, principal, site_id)["id"]]
    with store.connect() as conn:
        return [s["id"] for s in sites.list_for_organization(conn, organization_id=principal.organization_id)]


def last_days(store: ConfigStore, *, principal: Principal, site_id: str | None, days: int) -> Scope:
    """The last ``days`` UTC days, today included, of the sites asked for."""
    return Scope.last_days(
        site_ids(store, principal=principal, site_id=site_id), days, today=datetime.now(UTC).date()
    )


def get_overview(
    engine: Engine, store: ConfigStore, *, principal: Principal, site_id: str | None, days: int
) -> OverviewReport:
    scope = last_days(store, principal=principal, site_id=site_id, days=days)
    return OverviewReport.model_validate(overview(engine, scope))


def _change(current: int, previous: int) -> float | None:
    return round((current - previous) / previous, 6) if previous else None


def get_dashboard_summary(
    engine: Engine, store: ConfigStore, *, principal: Principal, site_id: str | None, days: int
) -> DashboardSummary:
    """The overview of the last ``days`` days next to the ``days`` days before, with relative change,
    and a daily trend."""
    scope = last_days(store, principal=principal, site_id=site_id, days=days)
    before = Scope(
        scope.site_ids, scope.start_date - timedelta(days=days), scope.start_date - timedelta(days=1)
    )
    current = OverviewReport.model_validate(overview(engine, scope))
    previous = OverviewReport.model_validate(overview(engine, before))
    now, then = current.totals.model_dump(), previous.totals.model_dump()
    return DashboardSummary.model_validate(
        {
            "scope": current.scope,
            "site_count": len(scope.site_ids),
            "current": current.totals,
            "previous": previous.totals,
            "change": TotalsChange(**{name: _change(value, then[name]) for name, value in now.items()}),
            "revenue_by_currency": current.revenue_by_currency,
            "previous_revenue_by_currency": revenue_by_currency(engine, before),
            "mixed_currency": current.mixed_currency,
            "trend": daily_activity(engine, scope),
        }
    )


def get_events_breakdown(
    engine: Engine, store: ConfigStore, *, principal: Principal, site_id: str | None, days: int
) -> EventsBreakdown:
    scope = last_days(store, principal=principal, site_id=site_id, days=days)
    return EventsBreakdown.model_validate(
        {"scope": scope.describe(), "events": event_breakdown(engine, scope)}
    )


def list_activity_logs(
    store: ConfigStore, *, principal: Principal, site_id: str | None, limit: int
) -> ActivityLogs:
    """Configuration changes of the caller's organisation (or of one of its sites), newest first."""
    if site_id:
        load_owned_site(store, principal, site_id)
    with store.connect() as conn:
        rows = activity.list_recent(
            conn, organization_id=principal.organization_id, site_id=site_id, limit=limit
        )
    return ActivityLogs(
        logs=[
            ActivityLog(
                id=r["id"],
                action=r["action"],
                site_id=r["site_id"],
                user_id=r["user_id"],
                message=r["message"],
                details=r["details"],
                created_at=r["created_at"].isoformat(),
            )
            for r in rows
        ]
    )
