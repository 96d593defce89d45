"""What the consent routes read from a request: the range of days."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from api.analytics.scope import AnalyticsSite, date_range
from api.schemas import IsoDate
from queries.consent import ConsentRange


def consent_range(
    site: AnalyticsSite,
    start_date: Annotated[
        IsoDate | None, Query(alias="startDate", description="First day (site time zone).")
    ] = None,
    end_date: Annotated[IsoDate | None, Query(alias="endDate", description="Last day, inclusive.")] = None,
) -> ConsentRange:
    start, end = date_range(site, start_date, end_date)
    return ConsentRange.of_site(site, start, end)


Range = Annotated[ConsentRange, Depends(consent_range)]
