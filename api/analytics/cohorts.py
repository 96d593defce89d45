"""Cohort analytics routes: the single report, its export, and cache rebuild."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from api.analytics.scope import MAX_RANGE_DAYS, AnalyticsSite, check_range_length, check_report_dates
from api.errors import BadRequest
from api.schemas import EVENT_NAME_ENUM, IsoDate
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.cohort import CohortQuery, CohortType, Interval, RetentionMode, cohort_report
from warehouse.lake import EVENTS, ORDERS, Lake

router = APIRouter(prefix="/analytics/cohort", tags=["analytics"])

CACHE_TTL_SECONDS = 600


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
    check_report_dates(start_date, end_date)  # 9999-12-31 overflowed the last period's end: a 500
    if start_date > end_date:
        raise BadRequest("startDate must not be after endDate", code="DATE_RANGE_INVALID")
    # A cohort per day from year 1 ran for hours and could not be stopped.
    check_range_length(start_date, end_date)
    if return_event is not None and return_event not in CANONICAL_EVENT_NAMES:
        raise BadRequest(f"'{return_event}' is not a canonical event name", code="UNKNOWN_EVENT_NAME")
    return CohortQuery(
        site_id=site["id"],
        cohort_type=cohort_type,
        interval=interval,
        start_date=start_date,
        end_date=end_date,
        period_count=period_count,
        timezone=site["timezone"],
        return_event=return_event,
        retention_mode=retention_mode,
    )


Filters = Annotated[CohortQuery, Depends(cohort_filters)]


def cache_prefix(site_id: str) -> str:
    return f"cohort:{site_id}:"


# Part of every cache key: bumped when what a report holds changes (2: the comparison snapshot always
# reaches P6), so reports cached by an older release miss instead of being served.
REPORT_VERSION = 2


def cache_key(query: CohortQuery) -> str:
    filters = {**query.filters(), "reportVersion": REPORT_VERSION}
    digest = hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()[:24]
    return cache_prefix(query.site_id) + digest


def data_mark(lake: Lake, site_id: str) -> str:
    """Changes whenever the site's events or orders do (a flush, a late import, a compaction): the
    names of its current lake files, each written once."""
    names = sorted(f.name for table in (EVENTS, ORDERS) for f in lake.live_files(table, site_id=site_id))
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:24]


def _report(
    request: Request, site: dict[str, Any], query: CohortQuery, *, use_cache: bool = True
) -> dict[str, Any]:
    hot = request.app.state.hot
    key = cache_key(query)
    mark = data_mark(request.app.state.engine.lake, site["id"])
    cached = orjson.loads(hot.get_value(key) or b"null") if use_cache else None
    # A report of data that changed since is no answer: events accepted are counted within seconds.
    if cached is not None and cached.pop("dataMark", None) == mark:
        report, status = cached, "hit"
    else:
        report = cohort_report(request.app.state.engine, query)
        report["generatedAt"] = datetime.now(UTC).isoformat()
        hot.set_value(key, orjson.dumps({**report, "dataMark": mark}), ttl_seconds=CACHE_TTL_SECONDS)
        status = "miss"
    meta = {
        "site": {"id": site["id"], "name": site["name"], "timezone": site["timezone"]},
        "filters": query.filters(),
        "generatedAt": report.pop("generatedAt"),
        "cacheKey": key,
        "cacheStatus": status,
    }
    return {"meta": meta, **report}


@router.get("/{siteId}")
def get_cohort_report(request: Request, site: AnalyticsSite, query: Filters) -> dict[str, Any]:
    """Blocks: `meta` (site, filters, generatedAt, cache key and hit/miss), `summary`, `retention`
    (columns P0..Pn; P0 is the cohort size with rate 1; periods not yet started are null), `churn`
    (per calendar period), `comparison` (P0..P6 rates of each cohort whatever `periodCount` is; periods
    not yet started are null) and `diagnostics` (`NO_EVENTS_IN_RANGE`,
    `NO_COHORT_EVENTS_FOR_TYPE`, else null). People are counted once across devices; a person whose
    first qualifying event is before startDate is in no cohort. Cached per filter set while the
    site's events and orders are unchanged (any flush, import or compaction since makes a miss)."""
    return _report(request, site, query)


def _csv_line(values: list[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(values)
    return buffer.getvalue()


def _csv_rows(report: dict[str, Any]) -> Iterator[str]:
    columns = report["retention"]["columns"]
    yield _csv_line(["cohort", "size", *[f"{c}_users" for c in columns], *[f"{c}_rate" for c in columns]])
    for row in report["retention"]["rows"]:
        cells = row["periods"]
        yield _csv_line(
            [
                row["cohort"],
                row["size"],
                *["" if c["retainedUsers"] is None else c["retainedUsers"] for c in cells],
                *["" if c["retentionRate"] is None else c["retentionRate"] for c in cells],
            ]
        )


def _json_rows(report: dict[str, Any]) -> Iterator[bytes]:
    yield b"["
    for index, row in enumerate(report["retention"]["rows"]):
        yield (b"," if index else b"") + orjson.dumps(row)
    yield b"]"


@router.get("/{siteId}/export")
def export_cohort_report(
    request: Request,
    site: AnalyticsSite,
    query: Filters,
    format: Annotated[
        Literal["csv", "json"], Query(description="csv (RFC 4180, header row) or json (array).")
    ],
) -> StreamingResponse:
    """The retention rows of the report, streamed row by row: the same numbers as the report."""
    report = _report(request, site, query)
    name = f"cohort-{site['id']}-{query.start_date}-{query.end_date}.{format}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if format == "csv":
        return StreamingResponse(_csv_rows(report), media_type="text/csv", headers=headers)
    return StreamingResponse(_json_rows(report), media_type="application/json", headers=headers)


@router.post("/{siteId}/cache/rebuild")
def rebuild_cohort_cache(request: Request, site: AnalyticsSite, query: Filters) -> dict[str, Any]:
    """Clear every cached cohort report of the site, then compute and cache the given filter set."""
    cleared = request.app.state.hot.delete_prefix(cache_prefix(site["id"]))
    report = _report(request, site, query, use_cache=False)
    return {"cleared": cleared, "warmed": report["meta"]["cacheKey"], "meta": report["meta"]}
