"""Correlation route: which events go with purchase conversion on one site."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.analytics.correlations import service
from api.analytics.correlations.schemas import Correlations
from api.analytics.scope import AnalyticsSite
from api.deps import EngineDep
from api.schemas import IsoDateTime

router = APIRouter(prefix="/analytics", tags=["analytics"])


@router.get("/correlations/{siteId}", response_model=Correlations, response_model_by_alias=True)
def get_correlations(
    engine: EngineDep,
    site: AnalyticsSite,
    limit: Annotated[int, Query(ge=1, le=100, description="Rows in each of `positive` and `negative`.")] = 10,
    start_date: Annotated[
        IsoDateTime | None,
        Query(
            alias="startDate",
            description="ISO timestamp, inclusive (UTC when it has no offset); before `endDate` (400 "
            "`DATE_RANGE_INVALID`).",
        ),
    ] = None,
    end_date: Annotated[
        IsoDateTime | None,
        Query(alias="endDate", description="ISO timestamp, exclusive (UTC when it has no offset)."),
    ] = None,
) -> Correlations:
    """For each event name, and each event name with its category path (`event` reads
    `add_to_cart::Home > Kitchen`), how it relates to purchase conversion among the people active in
    [`startDate`, `endDate`) (anyone with an event or a sale there; default the 30 days up to now, or
    up to `endDate`). A person converted when they have a sale (refunds apart) or a `purchase` event in
    the range; a converted person's events count up to their first purchase only, and `purchase` itself
    is no property. Per event: `successCount` (a: did it and converted), `failureCount` (b: did it and
    did not); with c the converted who did not do it and d the others, `oddsRatio` = (a+1)(d+1) /
    ((b+1)(c+1)) (+1 smoothing, so empty cells never divide by zero), `correlationType` success above
    1, failure below. `positive`: odds ratio above 1, highest first; `negative`: below 1, lowest first;
    ties by people who did the event, then by `event`. `totals`: people, converted, notConverted,
    conversionRate. `skewed` is true when under 10 % or over 90 % of the people converted (the odds
    ratios then rest on a small class and swing with a few people). People are the linked user when a
    visitor was ever identified, else the visitor. A bare date means midnight UTC."""
    return service.get_report(engine, site=site, start=start_date, end=end_date, limit=limit)
