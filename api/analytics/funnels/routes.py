"""Funnel analytics routes: the report and its two exports."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute

from api.analytics import exports
from api.analytics.funnels import service
from api.analytics.funnels.schemas import (
    MAX_STEPS,
    MAX_WINDOW_SECONDS,
    PERSON_COLUMNS,
    PERSON_ROW_SCHEMA,
    STEP_COLUMNS,
    STEP_ROW_SCHEMA,
    STEPS_PATTERN,
    FunnelReport,
)
from api.analytics.scope import AnalyticsSite
from api.deps import EngineDep
from api.descriptions import module_rules
from api.schemas import EVENT_NAME_ENUM, IsoDate
from queries import funnel as funnel_rules
from queries.funnel import DEFAULT_WINDOW_SECONDS, FunnelQuery, Order

router = APIRouter(prefix="/analytics", tags=["analytics"])


def funnel_filters(
    site: AnalyticsSite,
    steps: Annotated[
        str,
        Query(
            description=f"Comma-separated canonical event names, in order; repeats allowed; 2 to {MAX_STEPS} "
            "steps, none empty (`a,,b` answers 400 `FUNNEL_STEP_EMPTY`).",
            json_schema_extra={"pattern": STEPS_PATTERN},
        ),
    ],
    start_date: Annotated[
        IsoDate | None, Query(alias="startDate", description="First entry day (site time zone).")
    ] = None,
    end_date: Annotated[
        IsoDate | None, Query(alias="endDate", description="Last entry day, inclusive.")
    ] = None,
    window_seconds: Annotated[
        int,
        Query(
            alias="windowSeconds",
            ge=1,
            le=MAX_WINDOW_SECONDS,
            description="Conversion window from step 1, inclusive.",
        ),
    ] = DEFAULT_WINDOW_SECONDS,
    order: Annotated[
        Order,
        Query(
            description="sequential: each step after the previous, other events may come between; "
            "strict: no other event of the person between steps; any: the steps after step 1 in any "
            "order, so step n counts the people who did step 1 and any n - 1 of the others (a step's "
            "name is then a position: not all of them did that event)."
        ),
    ] = "sequential",
) -> FunnelQuery:
    """The funnel of the query string, for a site the caller may analyse."""
    return service.funnel_query(
        site,
        steps=steps,
        start_date=start_date,
        end_date=end_date,
        window_seconds=window_seconds,
        order=order,
    )


FunnelFilters = Annotated[FunnelQuery, Depends(funnel_filters)]


@router.get("/funnels/{siteId}", response_model=FunnelReport, response_model_by_alias=True)
def get_funnel(engine: EngineDep, query: FunnelFilters) -> FunnelReport:
    """`conversionRate` is relative to people entered; `dropOff` is the people lost since the previous
    step. The rules below say who counts at which step."""
    return service.get_report(engine, query)


@router.get(
    "/funnels/{siteId}/export",
    response_class=StreamingResponse,
    responses=exports.export_responses("The report's steps as rows.", STEP_ROW_SCHEMA),
)
def export_funnel(engine: EngineDep, query: FunnelFilters, format: exports.ExportFormat) -> StreamingResponse:
    """The steps of the funnel report, one row each in step order, with the report's numbers: columns
    `eventName, count, conversionRate, dropOff, avgTimeToConvertSeconds, medianTimeToConvertSeconds`
    (times empty in CSV and null in JSON where the report has none). Same parameters as the report."""
    rows = service.step_rows(engine, query)
    return exports.download_records(
        rows, columns=STEP_COLUMNS, format=format, name=service.export_name("funnel", query)
    )


@router.get(
    "/funnels/{siteId}/steps/{eventName}/export",
    response_class=StreamingResponse,
    responses=exports.export_responses("The people who reached the step.", PERSON_ROW_SCHEMA),
)
def export_funnel_step(
    engine: EngineDep,
    query: FunnelFilters,
    event_name: Annotated[
        str,
        Path(
            alias="eventName",
            description="One of the funnel's steps (another name: 400 `STEP_NOT_IN_FUNNEL`).",
            json_schema_extra=EVENT_NAME_ENUM,
        ),
    ],
    format: exports.ExportFormat,
    step_index: Annotated[
        int | None,
        Query(
            alias="stepIndex",
            ge=0,
            description="Which step, when `eventName` appears more than once in `steps`: its 0-based "
            "position in `steps` (the row of the report's `steps`), e.g. 2 for the second `page_view` of "
            "`page_view,product_view,page_view`. It must be a position of `eventName`, else 400 "
            "`STEP_INDEX_NOT_EVENT`. Omitted: the first `eventName` step.",
        ),
    ] = None,
) -> StreamingResponse:
    """The people who reached the step that `eventName` and `stepIndex` choose (the ones the report
    counts there), streamed in person-id order: columns `personId` (the linked user when the visitor
    was ever identified, else the visitor) and `reachedAt` (ISO 8601, UTC) from their first most
    complete conversion. In `any` order, where `order` says who step n's people are, `reachedAt` is
    when the last of their steps happened."""
    step = service.step_position(query.steps, event_name, step_index)
    rows = service.people_rows(engine, query, step=step)
    name = service.people_export_name(query, event_name=event_name, step=step)
    return exports.download_records(rows, columns=PERSON_COLUMNS, format=format, name=name)


# The report states the rules of ``queries.funnel`` (its first paragraph; the second is how it runs).
for _route in router.routes:
    if isinstance(_route, APIRoute) and _route.endpoint is get_funnel:
        _route.description = f"{_route.description}\n\n{module_rules(funnel_rules, paragraphs=slice(1))}"
