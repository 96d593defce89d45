"""The cohort report (`queries.cohort.cohort_report`'s blocks with the route's `meta`), the answer of a
cache rebuild, and the rows of the export."""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import Field

from aisle.wire import CamelModel
from queries.cohort import CohortType, Interval, RetentionMode


class CohortSite(CamelModel):
    id: str
    name: str
    timezone: str


class CohortFilters(CamelModel):
    cohort_type: CohortType
    interval_type: Interval
    start_date: date
    end_date: date
    period_count: int
    return_event: str | None
    retention_mode: RetentionMode


class CohortMeta(CamelModel):
    site: CohortSite
    filters: CohortFilters
    generated_at: str = Field(
        description="When the report was computed (ISO 8601, UTC), earlier than now on a cache hit.",
        json_schema_extra={"format": "date-time"},
    )
    cache_key: str
    cache_status: str = Field(description="hit or miss.", json_schema_extra={"enum": ["hit", "miss"]})


class CohortSummary(CamelModel):
    total_users: int
    cohort_count: int
    active_period_count: int = Field(description="Cells P1..P{periodCount} of started periods.")
    overall_retention_rate: float
    overall_churn_rate: float


class RetentionCell(CamelModel):
    period: str = Field(description="P0, P1, ...")
    retained_users: int | None = Field(description="Null when the period has not started yet.")
    retention_rate: float | None


class RetentionRow(CamelModel):
    cohort: date = Field(description="The first day of the cohort's period.")
    size: int
    periods: list[RetentionCell]


class Retention(CamelModel):
    columns: list[str]
    rows: list[RetentionRow]


class ChurnPeriod(CamelModel):
    period: date
    new_users: int
    returning_users: int
    churned_users: int
    churn_rate: float
    active_users: int
    is_active_period: bool


class ComparisonRow(CamelModel):
    cohort: date
    rates: list[float | None] = Field(description="P0..P6; null for periods not yet started.")


class Comparison(CamelModel):
    columns: list[str]
    rows: list[ComparisonRow]


class Diagnostics(CamelModel):
    code: str = Field(json_schema_extra={"enum": ["NO_EVENTS_IN_RANGE", "NO_COHORT_EVENTS_FOR_TYPE"]})
    message: str
    recommended_actions: list[str]


class CohortReport(CamelModel):
    meta: CohortMeta
    summary: CohortSummary
    retention: Retention
    churn: list[ChurnPeriod]
    comparison: Comparison
    diagnostics: Diagnostics | None


class CohortCacheRebuild(CamelModel):
    cleared: int = Field(description="Cached reports of the site dropped.")
    warmed: str = Field(description="The cache key of the report computed and cached again.")
    meta: CohortMeta


# The export's JSON rows are the report's retention rows.
RETENTION_ROW_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/RetentionRow"}
