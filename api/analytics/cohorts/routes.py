"""Cohort analytics routes: the single report, its export, and cache rebuild."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute

from api.analytics import exports
from api.analytics.cohorts import service
from api.analytics.cohorts.schemas import RETENTION_ROW_SCHEMA, CohortCacheRebuild, CohortReport
from api.analytics.scope import MAX_RANGE_DAYS, AnalyticsSite
from api.deps import EngineDep, HotStateDep
from api.descriptions import module_rules
from api.schemas import EVENT_NAME_ENUM, IsoDate
from queries import cohort as cohort_rules
from queries.cohort import CohortQuery, CohortType, Interval, RetentionMode

router = APIRouter(prefix="/analytics/cohort", tags=["analytics"])


def cohort_filters(
    site: AnalyticsSite,
    cohort_type: Annotated[
        CohortType, Query(alias="cohortType", description="signup, first_purchase or first_visit.")
    ],
    interval: Annotated[Interval, Query(alias="intervalType", description="day, week (Monday) or month.")],
    start_date: Annotated[
        IsoDate,
        Query(
            alias="startDate",
            description=f"ISO date, inclusive, site time zone; not after `endDate` (400 `DATE_RANGE_INVALID`) "
            f"and at most {MAX_RANGE_DAYS} days before it (400 `DATE_RANGE_TOO_LONG`).",
        ),
    ],
    end_date: Annotated[IsoDate, Query(alias="endDate", description="ISO date, inclusive.")],
    period_count: Annotated[
        int, Query(alias="periodCount", ge=1, le=24, description="Columns P0..P{periodCount}.")
    ],
    return_event: Annotated[
        str | None,
        Query(
            alias="returnEvent",
            description="What counts as coming back (default: any event): a canonical event name.",
            json_schema_extra=EVENT_NAME_ENUM,
        ),
    ] = None,
    retention_mode: Annotated[
        RetentionMode,
        Query(
            alias="retentionMode", description="on: active in exactly period N; on_or_after: in N or later."
        ),
    ] = "on",
) -> CohortQuery:
    return service.cohort_query(
        site,
        cohort_type=cohort_type,
        interval=interval,
        start_date=start_date,
        end_date=end_date,
        period_count=period_count,
        return_event=return_event,
        retention_mode=retention_mode,
    )


Filters = Annotated[CohortQuery, Depends(cohort_filters)]


@router.get("/{siteId}", response_model=CohortReport)
def get_cohort_report(
    engine: EngineDep, hot: HotStateDep, site: AnalyticsSite, query: Filters
) -> CohortReport:
    """Blocks: `meta` (site, filters, generatedAt, cache key and hit/miss), `summary`, `retention`
    (columns P0..Pn), `churn` (per calendar period), `comparison` (P0..P6 rates of each cohort whatever
    `periodCount` is) and `diagnostics` (`NO_EVENTS_IN_RANGE`, `NO_COHORT_EVENTS_FOR_TYPE`, else null).
    The range is `startDate`..`endDate`. Cached per filter set while the site's events and orders are
    unchanged (any flush, import or compaction since makes a miss)."""
    return service.get_report(engine, hot, site=site, query=query)


@router.get(
    "/{siteId}/export",
    response_class=StreamingResponse,
    responses=exports.export_responses(
        "The report's retention rows: CSV columns `cohort, size, P0_users.., P0_rate..`.",
        RETENTION_ROW_SCHEMA,
    ),
)
def export_cohort_report(
    engine: EngineDep, hot: HotStateDep, site: AnalyticsSite, query: Filters, format: exports.ExportFormat
) -> StreamingResponse:
    """The retention rows of the report, streamed row by row: the same numbers as the report."""
    report = service.get_report(engine, hot, site=site, query=query)
    chunks: exports.Chunks
    if format == "csv":
        chunks = exports.csv_rows(service.csv_header(report), service.csv_values(report))
    else:
        chunks = exports.json_array(service.json_rows(report))
    return exports.download(chunks, format=format, filename=f"{service.export_name(query)}.{format}")


@router.post("/{siteId}/cache/rebuild", response_model=CohortCacheRebuild)
def rebuild_cohort_cache(
    engine: EngineDep, hot: HotStateDep, site: AnalyticsSite, query: Filters
) -> CohortCacheRebuild:
    """Clear every cached cohort report of the site, then compute and cache the given filter set."""
    return service.rebuild_cache(engine, hot, site=site, query=query)


# The report states the rules of ``queries.cohort`` after its own.
for _route in router.routes:
    if isinstance(_route, APIRoute) and _route.endpoint is get_cohort_report:
        _route.description = f"{_route.description}\n\n{module_rules(cohort_rules)}"
