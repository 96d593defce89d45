"""Cohort reports: computed over the lake and cached in hot state per filter set while the site's data
is unchanged; the rows of their export."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import orjson

from api.analytics.cohorts.schemas import CohortCacheRebuild, CohortReport
from api.analytics.scope import check_range_length, check_report_dates
from api.errors import BadRequest
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.cohort import CohortQuery, CohortType, Interval, RetentionMode, cohort_report
from warehouse.config_store.sites import Site
from warehouse.engine import Engine
from warehouse.hotstate import HotState
from warehouse.lake import EVENTS, ORDERS, Lake

CACHE_TTL_SECONDS = 600
# Part of every cache key: bumped when what a report holds changes (2: the comparison snapshot always
# reaches P6), so reports cached by an older release miss instead of being served.
REPORT_VERSION = 2


def cache_prefix(site_id: str) -> str:
    return f"cohort:{site_id}:"


def cache_key(query: CohortQuery) -> str:
    filters = {**query.filters(), "reportVersion": REPORT_VERSION}
    digest = hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()[:24]
    return cache_prefix(query.site_id) + digest


def data_mark(lake: Lake, site_id: str) -> str:
    """Changes whenever the site's events or orders do (a flush, a late import, a compaction): the
    names of its current lake files, each written once."""
    names = sorted(f.name for table in (EVENTS, ORDERS) for f in lake.live_files(table, site_id=site_id))
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:24]


def cohort_query(
    site: Site,
    *,
    cohort_type: CohortType,
    interval: Interval,
    start_date: date,
    end_date: date,
    period_count: int,
    return_event: str | None,
    retention_mode: RetentionMode,
) -> CohortQuery:
    """The report's filters over inclusive days of the site's time zone, checked."""
    # A period ending past 9999-12-31 cannot be computed.
    check_report_dates(start_date, end_date)
    if start_date > end_date:
        raise BadRequest("startDate must not be after endDate", code="DATE_RANGE_INVALID")
    # A cohort per day over centuries runs for hours, with nothing to stop it.
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


def get_report(
    engine: Engine, hot: HotState, *, site: Site, query: CohortQuery, use_cache: bool = True
) -> CohortReport:
    """The report with its `meta`: from the cache when it holds one of the site's current data, else
    computed and cached."""
    key = cache_key(query)
    mark = data_mark(engine.lake, site["id"])
    cached = orjson.loads(hot.get_value(key) or b"null") if use_cache else None
    # A report of data that changed since is no answer: events accepted are counted within seconds.
    if cached is not None and cached.pop("dataMark", None) == mark:
        report, status = cached, "hit"
    else:
        report = cohort_report(engine, query)
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
    return CohortReport.model_validate({"meta": meta, **report})


def rebuild_cache(engine: Engine, hot: HotState, *, site: Site, query: CohortQuery) -> CohortCacheRebuild:
    """Drop every cached report of the site, then compute and cache the given filter set."""
    cleared = hot.delete_prefix(cache_prefix(site["id"]))
    report = get_report(engine, hot, site=site, query=query, use_cache=False)
    return CohortCacheRebuild(cleared=cleared, warmed=report.meta.cache_key, meta=report.meta)


def export_name(query: CohortQuery) -> str:
    return f"cohort-{query.site_id}-{query.start_date}-{query.end_date}"


def csv_header(report: CohortReport) -> list[str]:
    columns = report.retention.columns
    return ["cohort", "size", *[f"{c}_users" for c in columns], *[f"{c}_rate" for c in columns]]


def csv_values(report: CohortReport) -> Iterator[list[Any]]:
    """A retention row each: the cohort, its size, the users then the rates of every period."""
    for row in report.retention.rows:
        yield [
            row.cohort.isoformat(),
            row.size,
            *[cell.retained_users for cell in row.periods],
            *[cell.retention_rate for cell in row.periods],
        ]


def json_rows(report: CohortReport) -> Iterator[dict[str, Any]]:
    return (row.model_dump(by_alias=True, mode="json") for row in report.retention.rows)
