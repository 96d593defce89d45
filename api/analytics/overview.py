"""Organisation- and site-level overview routes: overview, dashboard summary, events breakdown,
activity logs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from api.analytics.scope import Analyst, Days, SiteFilter
from api.deps import ConfigStoreDep, Principal, load_owned_site
from queries.overview import Scope, daily_activity, event_breakdown, overview, revenue_by_currency
from warehouse.config_store import activity, sites

router = APIRouter(prefix="/analytics", tags=["analytics"])


def _site_ids(store, principal: Principal, site_id: str | None) -> list[str]:
    if site_id:
        return [load_owned_site(store, principal, site_id)["id"]]
    with store.connect() as conn:
        return [s["id"] for s in sites.list_for_organization(conn, organization_id=principal.organization_id)]


def _scope(store, principal: Principal, site_id: str | None, days: int) -> Scope:
    return Scope.last_days(_site_ids(store, principal, site_id), days, today=datetime.now(UTC).date())


@router.get("/overview")
def get_overview(
    request: Request, store: ConfigStoreDep, principal: Analyst, days: Days = 30, site_id: SiteFilter = None
):
    """Events, people (a person is the linked user when a visitor was ever identified), sessions,
    page views and orders; the share of people who bought; revenue per currency (`mixedCurrency` is true
    when several currencies appear — amounts are never converted or added up across currencies)."""
    return overview(request.app.state.engine, _scope(store, principal, site_id, days))


def _change(current: int, previous: int) -> float | None:
    return round((current - previous) / previous, 6) if previous else None


@router.get("/dashboard-summary")
def dashboard_summary(
    request: Request, store: ConfigStoreDep, principal: Analyst, days: Days = 30, site_id: SiteFilter = None
) -> dict[str, Any]:
    """The overview of the last `days` days next to the `days` days before, with relative change
    (null when the earlier period had none), and a daily trend with zero days included."""
    engine = request.app.state.engine
    scope = _scope(store, principal, site_id, days)
    before = Scope(
        scope.site_ids, scope.start_date - timedelta(days=days), scope.start_date - timedelta(days=1)
    )
    current, previous = overview(engine, scope), overview(engine, before)
    return {
        "scope": scope.describe(),
        "siteCount": len(scope.site_ids),
        "current": current["totals"],
        "previous": previous["totals"],
        "change": {k: _change(v, previous["totals"][k]) for k, v in current["totals"].items()},
        "revenueByCurrency": current["revenueByCurrency"],
        "previousRevenueByCurrency": revenue_by_currency(engine, before),
        "mixedCurrency": current["mixedCurrency"],
        "trend": daily_activity(engine, scope),
    }


@router.get("/events/breakdown")
def events_breakdown(
    request: Request, store: ConfigStoreDep, principal: Analyst, days: Days = 30, site_id: SiteFilter = None
) -> dict[str, Any]:
    """Events by canonical name with their family, count and distinct people, most frequent first."""
    scope = _scope(store, principal, site_id, days)
    return {"scope": scope.describe(), "events": event_breakdown(request.app.state.engine, scope)}


@router.get("/activity-logs")
def activity_logs(
    store: ConfigStoreDep,
    principal: Analyst,
    site_id: SiteFilter = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> dict[str, Any]:
    """Configuration changes of the organisation (or one of its sites), newest first."""
    if site_id:
        load_owned_site(store, principal, site_id)
    with store.connect() as conn:
        rows = activity.list_recent(
            conn, organization_id=principal.organization_id, site_id=site_id, limit=limit
        )
    return {
        "logs": [
            {
                "id": r["id"],
                "action": r["action"],
                "siteId": r["site_id"],
                "userId": r["user_id"],
                "message": r["message"],
                "details": r["details"],
                "createdAt": r["created_at"].isoformat(),
            }
            for r in rows
        ]
    }
