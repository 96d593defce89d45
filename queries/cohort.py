"""Cohort retention: people grouped by the period of their first qualifying event, and how many of
them come back in each later period.

P0 is the cohort's size (rate 1). With ``retention_mode="on"`` a person counts in period N when
active in exactly that period; with ``"on_or_after"`` when active in N or any later period. Periods
that have not started yet are empty cells (None).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from queries import library
from warehouse.engine import Engine

CohortType = Literal["signup", "first_purchase", "first_visit"]
Interval = Literal["day", "week", "month"]
RetentionMode = Literal["on", "on_or_after"]
COMPARISON_PERIODS = 7  # P0..P6


@dataclass(frozen=True)
class CohortQuery:
    site_id: str
    cohort_type: CohortType
    interval: Interval
    start_date: date
    end_date: date
    period_count: int
    timezone: str = "UTC"
    return_event: str | None = None
    retention_mode: RetentionMode = "on"

    def filters(self) -> dict[str, Any]:
        return {
            "cohortType": self.cohort_type, "intervalType": self.interval, "startDate": self.start_date.isoformat(),
            "endDate": self.end_date.isoformat(), "periodCount": self.period_count, "returnEvent": self.return_event,
            "retentionMode": self.retention_mode,
        }  # fmt: skip


def bucket_start(moment: date, interval: Interval) -> date:
    if interval == "week":
        return moment - timedelta(days=moment.weekday())
    if interval == "month":
        return moment.replace(day=1)
    return moment


def add_periods(start: date, periods: int, interval: Interval) -> date:
    if interval == "day":
        return start + timedelta(days=periods)
    if interval == "week":
        return start + timedelta(weeks=periods)
    month = start.month - 1 + periods
    return date(start.year + month // 12, month % 12 + 1, 1)


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def _counts(table) -> dict[str, dict[tuple[date | None, int | None], int]]:
    out: dict[str, dict] = defaultdict(dict)
    for kind, cohort_start, period, people in zip(
        table["kind"].to_pylist(), table["cohort_start"].to_pylist(), table["period"].to_pylist(),
        table["people"].to_pylist(), strict=True,
    ):  # fmt: skip
        key_date = cohort_start.date() if isinstance(cohort_start, datetime) else cohort_start
        out[kind][(key_date, period)] = people
    return out


def _diagnostics(
    engine: Engine, query: CohortQuery, range_start, range_end, cohort_count: int
) -> dict | None:
    if cohort_count:
        return None
    any_events = library.run(
        engine,
        "events_in_range",
        {"site_id": query.site_id, "range_start": range_start, "range_end": range_end},
    )["events"][0].as_py()
    if not any_events:
        return {
            "code": "NO_EVENTS_IN_RANGE",
            "message": "The site has no events between startDate and endDate.",
            "recommendedActions": [
                "Widen the date range",
                "Check that the tracker sends events for this site",
            ],
        }
    return {
        "code": "NO_COHORT_EVENTS_FOR_TYPE",
        "message": f"No person had a first qualifying event for cohortType '{query.cohort_type}' in the range.",
        "recommendedActions": [
            "Track the event that defines the cohort (user_signup for signup, purchase or orders for first_purchase)",
            "Try cohortType=first_visit",
        ],
    }


def cohort_report(engine: Engine, query: CohortQuery, *, now: datetime | None = None) -> dict[str, Any]:
    """The spec's cohort report blocks (without `meta`, which the caller adds with its cache status)."""
    zone = ZoneInfo(query.timezone)
    now = now or datetime.now(zone)
    today = now.astimezone(zone).date()
    range_start = datetime.combine(query.start_date, time.min, zone)
    range_end = datetime.combine(query.end_date + timedelta(days=1), time.min, zone)
    first_bucket = bucket_start(query.start_date, query.interval)
    last_needed = add_periods(
        bucket_start(query.end_date, query.interval), query.period_count + 1, query.interval
    )
    if query.retention_mode == "on_or_after":
        # "In N or later" looks past the last column too: any later activity counts.
        last_needed = max(last_needed, today)
    table = library.run(
        engine,
        "cohort_activity",
        {
            "site_id": query.site_id, "scan_end": last_needed + timedelta(days=1), "cohort_type": query.cohort_type,
            "interval": query.interval, "timezone": query.timezone, "range_start": range_start,
            "range_end": range_end, "return_event": query.return_event,
            "first_bucket": datetime.combine(first_bucket, time.min),
        },
    )  # fmt: skip
    counts = _counts(table)
    sizes = {cohort: people for (cohort, _), people in counts["size"].items()}
    by_max: dict[date, dict[int, int]] = defaultdict(dict)
    for (cohort, period), people in counts["max"].items():
        by_max[cohort][period] = people

    rows, retained_total, eligible_total, active_cells = [], 0, 0, 0
    for cohort in sorted(sizes):
        size = sizes[cohort]
        cells = []
        for n in range(query.period_count + 1):
            if add_periods(cohort, n, query.interval) > today:
                cells.append({"period": f"P{n}", "retainedUsers": None, "retentionRate": None})
                continue
            if n == 0:
                retained = size
            elif query.retention_mode == "on":
                retained = counts["on"].get((cohort, n), 0)
            else:
                retained = sum(people for period, people in by_max[cohort].items() if period >= n)
            cells.append(
                {"period": f"P{n}", "retainedUsers": retained, "retentionRate": _rate(retained, size)}
            )
            if n:
                retained_total += retained
                eligible_total += size
                active_cells += 1
        rows.append({"cohort": cohort.isoformat(), "size": size, "periods": cells})

    churn = []
    for index in range(
        _periods_between(first_bucket, bucket_start(query.end_date, query.interval), query.interval) + 1
    ):
        start = add_periods(first_bucket, index, query.interval)
        active = counts["active"].get((None, index), 0)
        previous_active = counts["active"].get((None, index - 1), 0)
        churned = counts["churned"].get((None, index), 0) if index else 0
        churn.append({
            "period": start.isoformat(), "newUsers": sizes.get(start, 0),
            "returningUsers": counts["returning"].get((None, index), 0), "churnedUsers": churned,
            "churnRate": _rate(churned, previous_active) if index else 0.0, "activeUsers": active,
            "isActivePeriod": start <= today,
        })  # fmt: skip

    overall = _rate(retained_total, eligible_total)
    return {
        "summary": {
            "totalUsers": sum(sizes.values()),
            "cohortCount": len(sizes),
            "activePeriodCount": active_cells,
            "overallRetentionRate": overall,
            "overallChurnRate": round(1 - overall, 6) if eligible_total else 0.0,
        },
        "retention": {"columns": [f"P{n}" for n in range(query.period_count + 1)], "rows": rows},
        "churn": churn,
        "comparison": {
            "columns": [f"P{n}" for n in range(COMPARISON_PERIODS)],
            "rows": [
                {
                    "cohort": row["cohort"],
                    "rates": [
                        row["periods"][n]["retentionRate"] if n < len(row["periods"]) else None
                        for n in range(COMPARISON_PERIODS)
                    ],
                }
                for row in rows
            ],
        },  # fmt: skip
        "diagnostics": _diagnostics(engine, query, range_start, range_end, len(sizes)),
    }


def _periods_between(first: date, last: date, interval: Interval) -> int:
    if interval == "day":
        return (last - first).days
    if interval == "week":
        return (last - first).days // 7
    return (last.year - first.year) * 12 + last.month - first.month
