"""What the revenue and attribution routes read from a request: the report's range and the lookback."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from api.analytics.scope import AnalyticsSite, date_range
from api.errors import BadRequest
from api.schemas import IsoDate
from queries.revenue import ReportRange


def report_range(
    site: AnalyticsSite,
    start_date: Annotated[
        IsoDate | None, Query(alias="startDate", description="First day (site time zone).")
    ] = None,
    end_date: Annotated[IsoDate | None, Query(alias="endDate", description="Last day, inclusive.")] = None,
    days: Annotated[
        int | None,
        Query(
            ge=1,
            le=365,
            description="The last N days, today included; not with `startDate`/`endDate` (400 "
            "`RANGE_PARAMETERS_CONFLICT`).",
        ),
    ] = None,
) -> ReportRange:
    if days is not None:
        if start_date or end_date:
            raise BadRequest(
                "Send either days or startDate/endDate, not both", code="RANGE_PARAMETERS_CONFLICT"
            )
        return ReportRange.last_days(site_id=site["id"], days=days, timezone=site["timezone"])
    start, end = date_range(site, start_date, end_date)
    return ReportRange(site["id"], start, end, site["timezone"])


Range = Annotated[ReportRange, Depends(report_range)]
LookbackDays = Annotated[
    int,
    Query(
        alias="lookbackDays",
        ge=1,
        le=365,
        description="How many days before a conversion a touchpoint still counts (default 30).",
    ),
]
