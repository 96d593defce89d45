"""What every analytics route resolves first: the site it may read, and the days it covers."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

from fastapi import Depends, Query

from api.auth.permissions import ANALYTICS_VIEW
from api.deps import ConfigStoreDep, CurrentUser, Principal, load_owned_site, require
from api.errors import BadRequest, Forbidden
from api.schemas import EARLIEST_REPORT_DATE, LATEST_REPORT_DATE, SITE_ID_FORMAT
from ingest.schemas import SiteIdText
from warehouse.config_store.sites import Site


def analytics_site(store: ConfigStoreDep, principal: CurrentUser, siteId: SiteIdText) -> Site:
    """The site of the path (or of the query string, on routes without one in the path), for a caller
    with `analytics:view` in the organisation that owns it."""
    site = load_owned_site(store, principal, siteId)
    if not principal.can(ANALYTICS_VIEW):
        raise Forbidden("Your role lacks the permission 'analytics:view'", code="PERMISSION_DENIED")
    return site


AnalyticsSite = Annotated[Site, Depends(analytics_site)]


def check_report_dates(*days: date | None) -> None:
    for day in days:
        if day is not None and not EARLIEST_REPORT_DATE <= day <= LATEST_REPORT_DATE:
            raise BadRequest(
                f"dates must be between {EARLIEST_REPORT_DATE} and {LATEST_REPORT_DATE}; got {day}",
                code="DATE_OUT_OF_RANGE",
            )


# Ten years: the longest range a report walks day by day (a cohort per day, a product's daily series).
MAX_RANGE_DAYS = 3660


def check_range_length(start: date, end: date) -> None:
    if (end - start).days >= MAX_RANGE_DAYS:
        raise BadRequest(f"A range covers at most {MAX_RANGE_DAYS} days", code="DATE_RANGE_TOO_LONG")


def date_range(site: Site, start: date | None, end: date | None) -> tuple[date, date]:
    """Inclusive dates in the site's time zone; the last 30 days by default."""
    check_report_dates(start, end)
    today = datetime.now(ZoneInfo(site["timezone"])).date()
    end = end or today
    start = start or end - timedelta(days=29)
    if start > end:
        raise BadRequest("startDate must not be after endDate", code="DATE_RANGE_INVALID")
    return start, end


# Paging deeper than this is refused with a 400 rather than handed to the engine, whose OFFSET is a
# 64-bit integer: a larger number fails inside the query, as a 500.
MAX_OFFSET = 10_000_000
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description=f"Rows to skip (0 to {MAX_OFFSET:,}).")]
Limit = Annotated[int, Query(ge=1, le=500, description="Rows to return.")]
Days = Annotated[int, Query(ge=1, le=365, description="The last N UTC days, today included.")]

# The organisation-wide routes name no site in the path: the caller needs `analytics:view`, and an
# omitted siteId reads every site of their organisation.
Analyst = Annotated[Principal, require(ANALYTICS_VIEW)]
SiteFilter = Annotated[
    str | None,
    Query(
        alias="siteId",
        description="One site (uuid); omitted means every site of the organisation.",
        json_schema_extra=SITE_ID_FORMAT,
    ),
]
