"""Correlation route: which events go with purchase conversion on one site."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.routing import APIRoute

from api.analytics.correlations import service
from api.analytics.correlations.schemas import Correlations
from api.analytics.scope import AnalyticsSite
from api.deps import EngineDep
from api.descriptions import module_rules
from api.schemas import IsoDateTime
from queries import correlations as correlation_rules

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
    """For each event name, and each event name with its category path, how it relates to purchase
    conversion among the people active in [`startDate`, `endDate`) (default the 30 days up to now, or
    up to `endDate`; a bare date means midnight UTC). Per event: `successCount`, `failureCount`,
    `oddsRatio` and `correlationType`, as the rules below define them. `positive`: odds ratio above 1,
    highest first; `negative`: below 1, lowest first; ties by people who did the event, then by
    `event`. `totals`: people, converted, notConverted, conversionRate. `skewed`: see below."""
    return service.get_report(engine, site=site, start=start_date, end=end_date, limit=limit)


# The route states the rules of ``queries.correlations`` after its own.
for _route in router.routes:
    if isinstance(_route, APIRoute):
        _route.description = f"{_route.description}\n\n{module_rules(correlation_rules)}"
