"""What every analytics route resolves first: the site it may read, and the days it covers."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import Depends

from api.auth.permissions import ANALYTICS_VIEW
from api.deps import CurrentUser, StoreDep, load_owned_site
from api.errors import BadRequest, Forbidden


def analytics_site(store: StoreDep, principal: CurrentUser, siteId: str) -> dict[str, Any]:
    """The site of the path, for a caller with `analytics:view` in the organisation that owns it."""
    site = load_owned_site(store, principal, siteId)
    if not principal.can(ANALYTICS_VIEW):
        raise Forbidden("Your role lacks the permission 'analytics:view'", code="PERMISSION_DENIED")
    return site


AnalyticsSite = Annotated[dict[str, Any], Depends(analytics_site)]


def date_range(site: dict[str, Any], start: date | None, end: date | None) -> tuple[date, date]:
    """Inclusive dates in the site's time zone; the last 30 days by default."""
    today = datetime.now(ZoneInfo(site["timezone"])).date()
    end = end or today
    start = start or end - timedelta(days=29)
    if start > end:
        raise BadRequest("startDate must not be after endDate", code="DATE_RANGE_INVALID")
    return start, end
