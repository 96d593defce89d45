"""Cohort retention: people grouped by the period of their first qualifying event, and how many of
them come back in each later period.

People are counted once across devices; a person whose first qualifying event is before the range is
in no cohort. P0 is the cohort's size (rate 1). In retention mode ``on`` a person counts in period N
when active in exactly that period; in ``on_or_after`` when active in N or any later period. Periods
that have not started yet are empty cells (null).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, TypedDict
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from queries import library
from queries.rates import rate
from warehouse import visitor_activity
from warehouse.engine import Engine

CohortType = Literal["signup", "first_purchase", "first_visit"]
Interval = Literal["day", "week", "month"]
RetentionMode = Literal["on", "on_or_after"]
COMPARISON_PERIODS = 7  # P0..P6
# A period's nominal length in µs (a month: 365.2425 / 12 days); local periods stay within one
# period of it, which the SQL corrects against the real boundaries.
NOMINAL_US = {"day": 86_400_000_000, "week": 7 * 86_400_000_000, "month": 2_629_746_000_000}


class RetentionCell(TypedDict):
    """One period of a cohort's retention row (None for a period that has not begun yet)."""

    period: str
    retainedUsers: int | None
    retentionRate: float | None


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
            "cohortType": self.cohort_type,
            "intervalType": self.interval,
            "startDate": self.start_date.isoformat(),
            "endDate": self.end_date.isoformat(),
            "periodCount": self.period_count,
            "returnEvent": self.return_event,
            "retentionMode": self.retention_mode,
        }


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


def period_bounds(first: date, until: datetime, interval: Interval, zone: ZoneInfo) -> list[int]:
    """The UTC instants (epoch µs) where the local periods from ``first`` start, up to the first one
    after ``until``."""
    bounds: list[int] = []
    index = 0
    while not bounds or bounds[-1] <= until.timestamp() * 1_000_000:
        start = datetime.combine(add_periods(first, index, interval), time.min, zone)
        bounds.append(int(start.timestamp()) * 1_000_000)
        index += 1
    return bounds


@dataclass(frozen=True)
class CohortCounts:
    """People per cohort and period, cohorts and calendar periods numbered from the first bucket."""

    size: np.ndarray  # [cohort]
    on: np.ndarray  # [cohort, n]: did the return event in period n after the cohort's
    on_or_after: np.ndarray  # [cohort, n]: in period n or any later one
    active: np.ndarray  # [period]: cohort members active then (at or after their cohort)
    returning: np.ndarray  # [period]: of them, members of an earlier cohort
    churned: np.ndarray  # [period]: active the period before, not in this one


SLAB = 128  # periods whose activity one scan collects (two 64-bit masks per person)


def _masks(table: pa.Table) -> np.ndarray:
    """The ``early`` and ``late`` masks of ``cohort_activity`` as a boolean matrix: column i is
    period ``slab + i``."""
    words = np.stack([table[name].to_numpy().astype("<u8") for name in ("early", "late")], axis=1)
    return np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").view(bool)


NEVER_US = np.iinfo(np.int64).max  # "no qualifying event" while merging


def _longest_run(rollups: list[visitor_activity.Rollup]) -> list[visitor_activity.Rollup]:
    """The longest run of consecutive months among ``rollups`` (oldest first; the latest wins ties):
    one contiguous stretch of time the events scan can leave out."""
    best: list[visitor_activity.Rollup] = []
    run: list[visitor_activity.Rollup] = []
    for rollup in rollups:
        run = (
            run + [rollup] if run and visitor_activity.next_month(run[-1].month) == rollup.month else [rollup]
        )
        if len(run) >= len(best):
            best = run
    return best


def _day_periods(month: date, first_bucket: date, interval: Interval, width: int) -> np.ndarray:
    """The report period of each local day of ``month`` (index d: day d + 1): -1 before the first
    bucket, periods from ``width`` on counted as ``width``, as the events scan counts them."""
    days = (visitor_activity.next_month(month) - month).days
    periods = []
    for offset in range(days):
        day = month + timedelta(days=offset)
        periods.append(
            -1
            if day < first_bucket
            else min(_periods_between(first_bucket, bucket_start(day, interval), interval), width)
        )
    return np.array(periods)


def _rollup_words(
    rows: pa.Table, *, slab: int, first_bucket: date, interval: Interval, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """``cohort_rollup_rows``' day masks as the events scan's ``early`` and ``late`` period masks."""
    months = rows["month"].to_numpy()
    masks = rows["day_mask"].to_numpy().astype(np.uint32)
    words = np.zeros((2, len(masks)), dtype=np.uint64)
    for month in pc.unique(rows["month"]).to_pylist():
        mine = np.flatnonzero(months == np.datetime64(month, "D"))
        own, own_words = masks[mine], np.zeros((2, len(mine)), dtype=np.uint64)
        periods = _day_periods(month, first_bucket, interval, width)
        for period in np.unique(periods):
            bit = int(period) - slab
            if period < 0 or not 0 <= bit < SLAB:
                continue
            days = np.uint32(sum(1 << int(d) for d in np.flatnonzero(periods == period)))
            own_words[bit // 64] |= ((own & days) != 0).astype(np.uint64) << np.uint64(bit % 64)
        words[:, mine] = own_words
    return words[0], words[1]


def _merged(
    raw: pa.Table, rollup: pa.Table, early: np.ndarray, late: np.ndarray, *, start_us: int, end_us: int
) -> pa.Table:
    """Everyone of the events scan and of the rollups, one row per person (first qualifying time the
    earlier, period masks together), kept when that first time is in [start_us, end_us)."""
    keys = np.concatenate([raw["person_key"].to_numpy(), rollup["person_key"].to_numpy()])
    if not len(keys):
        return raw.slice(0, 0)
    firsts = np.concatenate(
        [
            pc.fill_null(raw["first_us"], NEVER_US).to_numpy(),
            pc.fill_null(rollup["first_us"], NEVER_US).to_numpy(),
        ]
    )
    earlies = np.concatenate([raw["early"].to_numpy().astype(np.uint64), early])
    lates = np.concatenate([raw["late"].to_numpy().astype(np.uint64), late])
    order = np.argsort(keys)
    keys = keys[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    first = np.minimum.reduceat(firsts[order], starts)
    keep = (first >= start_us) & (first < end_us)
    return pa.table(
        {
            "person_key": keys[starts][keep],
            "first_us": first[keep],
            "early": np.bitwise_or.reduceat(earlies[order], starts)[keep],
            "late": np.bitwise_or.reduceat(lates[order], starts)[keep],
        }
    )


def cohort_counts(
    slabs: list[pa.Table], *, bounds: list[int], periods: int, period_count: int
) -> CohortCounts:
    """The counts of the report from ``cohort_activity`` run once per slab of 128 periods (the same
    people in each, in any order): cohorts and calendar periods ``0..periods - 1``, columns
    ``0..period_count``."""
    slabs = [slab.sort_by("person_key") for slab in slabs] if len(slabs) > 1 else slabs
    cohort = np.searchsorted(bounds, slabs[0]["first_us"].to_numpy(), side="right") - 1
    width = periods + period_count  # bit `width`: active in that period or any later one
    # per cohort: members active in each calendar period, members active in a period but not the
    # next (for churn), and members active in a period or any later one; people taken a slice at a
    # time to bound memory
    seen = np.zeros((periods, width), dtype=np.int64)
    left = np.zeros((periods, width - 1), dtype=np.int64)
    onwards = np.zeros((periods, width + 1), dtype=np.int64)
    step = max(1, 50_000_000 // (SLAB * len(slabs)))
    for first in range(0, len(cohort), step):
        own = cohort[first : first + step]
        order = np.argsort(own, kind="stable")
        bits = np.concatenate([_masks(slab.slice(first, step)) for slab in slabs], axis=1)[order, : width + 1]
        edges = np.searchsorted(own[order], np.arange(periods + 1))
        for index in range(periods):
            members = bits[edges[index] : edges[index + 1]]
            seen[index] += np.count_nonzero(members[:, :width], axis=0)
            left[index] += np.count_nonzero(members[:, : width - 1] & ~members[:, 1:width], axis=0)
            later = np.logical_or.accumulate(members[:, ::-1], axis=1)[:, ::-1]
            onwards[index] += np.count_nonzero(later, axis=0)
    calendar = np.arange(periods)
    on = np.stack([seen[index, index : index + period_count + 1] for index in range(periods)])
    on_or_after = np.stack([onwards[index, index : index + period_count + 1] for index in range(periods)])
    after = calendar[None, :] >= calendar[:, None]  # [cohort, period]: the cohort's period or a later one
    later = calendar[None, :] > calendar[:, None]
    active = (seen[:, :periods] * after).sum(axis=0)
    returning = (seen[:, :periods] * later).sum(axis=0)
    churned = np.zeros(periods, dtype=np.int64)
    churned[1:] = (left[:, : periods - 1] * after[:, : periods - 1]).sum(axis=0)
    return CohortCounts(
        np.bincount(cohort, minlength=periods)[:periods], on, on_or_after, active, returning, churned
    )


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
    # Columns counted: the report's, and at least the comparison snapshot's P0..P6.
    horizon = max(query.period_count, COMPARISON_PERIODS - 1)
    last_needed = add_periods(bucket_start(query.end_date, query.interval), horizon + 1, query.interval)
    if query.retention_mode == "on_or_after":
        # "In N or later" looks past the last column too: any later activity counts.
        last_needed = max(last_needed, today)
    scan_end = last_needed + timedelta(days=1)
    bounds = period_bounds(
        first_bucket, datetime.combine(scan_end + timedelta(days=1), time.min, UTC), query.interval, zone
    )
    periods = _periods_between(first_bucket, bucket_start(query.end_date, query.interval), query.interval) + 1
    range_start_us = int(range_start.timestamp()) * 1_000_000
    range_end_us = int(range_end.timestamp()) * 1_000_000
    params: dict[str, Any] = {
        "site_id": query.site_id,
        "scan_end": scan_end,
        "cohort_type": query.cohort_type,
        "range_start_us": range_start_us,
        "range_end_us": range_end_us,
        "return_event": query.return_event,
        "bounds": bounds,
        "nominal_us": NOMINAL_US[query.interval],
        "even": all(b - a == NOMINAL_US[query.interval] for a, b in zip(bounds, bounds[1:], strict=False)),
    }
    # Whole local months rolled up beforehand (by the compaction job) stand for their events, when
    # the rollups are current and end by the scan's end: the scan leaves those months out.
    rolled = _longest_run(
        visitor_activity.current(
            engine.lake,
            query.site_id,
            query.timezone,
            until=datetime.combine(scan_end + timedelta(days=1), time.min, UTC),
        )
    )
    params.update(_rolled_params(rolled, query.timezone))
    # one scan per 128 periods of activity (one scan unless the report spans more periods)
    width = periods + horizon
    slabs = [
        library.run(engine, "cohort_activity", {**params, "width": width, "slab": slab})
        for slab in range(0, width + 1, SLAB)
    ]
    if rolled:
        rows = library.run(
            engine,
            "cohort_rollup_rows",
            {
                "files": [str(r.file) for r in rolled],
                "site_id": query.site_id,
                "cohort_type": query.cohort_type,
                "return_event": query.return_event,
            },
        )
        slabs = [
            _merged(
                raw,
                rows,
                *_rollup_words(
                    rows, slab=slab, first_bucket=first_bucket, interval=query.interval, width=width
                ),
                start_us=range_start_us,
                end_us=range_end_us,
            )
            for slab, raw in zip(range(0, width + 1, SLAB), slabs, strict=True)
        ]
    counts = cohort_counts(slabs, bounds=bounds, periods=periods, period_count=horizon)
    starts = [add_periods(first_bucket, index, query.interval) for index in range(periods)]

    rows, snapshot, retained_total, eligible_total, active_cells = [], [], 0, 0, 0
    for index, cohort in enumerate(starts):
        size = int(counts.size[index])
        if not size:
            continue
        cells: list[RetentionCell] = []
        for n in range(horizon + 1):
            if add_periods(cohort, n, query.interval) > today:
                cells.append({"period": f"P{n}", "retainedUsers": None, "retentionRate": None})
                continue
            if n == 0:
                retained = size
            elif query.retention_mode == "on":
                retained = int(counts.on[index, n])
            else:
                retained = int(counts.on_or_after[index, n])
            cells.append(
                {"period": f"P{n}", "retainedUsers": retained, "retentionRate": rate(retained, size)}
            )
            if 0 < n <= query.period_count:
                retained_total += retained
                eligible_total += size
                active_cells += 1
        rows.append({"cohort": cohort.isoformat(), "size": size, "periods": cells[: query.period_count + 1]})
        snapshot.append(
            {
                "cohort": cohort.isoformat(),
                "rates": [cell["retentionRate"] for cell in cells[:COMPARISON_PERIODS]],
            }
        )

    churn = []
    for index, start in enumerate(starts):
        active = int(counts.active[index])
        churned = int(counts.churned[index])
        churn.append(
            {
                "period": start.isoformat(),
                "newUsers": int(counts.size[index]),
                "returningUsers": int(counts.returning[index]),
                "churnedUsers": churned,
                "churnRate": rate(churned, int(counts.active[index - 1])) if index else 0.0,
                "activeUsers": active,
                "isActivePeriod": start <= today,
            }
        )

    overall = rate(retained_total, eligible_total)
    return {
        "summary": {
            "totalUsers": int(counts.size.sum()),
            "cohortCount": len(rows),
            "activePeriodCount": active_cells,
            "overallRetentionRate": overall,
            "overallChurnRate": round(1 - overall, 6) if eligible_total else 0.0,
        },
        "retention": {"columns": [f"P{n}" for n in range(query.period_count + 1)], "rows": rows},
        "churn": churn,
        "comparison": {"columns": [f"P{n}" for n in range(COMPARISON_PERIODS)], "rows": snapshot},
        "diagnostics": _diagnostics(engine, query, range_start, range_end, len(rows)),
    }


def _rolled_params(rolled: list[visitor_activity.Rollup], timezone: str) -> dict[str, Any]:
    """What the events scan leaves out: the instants the rollups cover, and the UTC days wholly
    inside them (nothing when there are no rollups)."""
    if not rolled:
        nothing = datetime.fromtimestamp(0, UTC)
        return {
            "all_people": False,
            "rolled_start": nothing,
            "rolled_end": nothing,
            "rolled_first_date": date.max,
            "rolled_last_date": date.min,
        }
    start = visitor_activity.month_bounds(rolled[0].month, timezone)[0]
    end = visitor_activity.month_bounds(rolled[-1].month, timezone)[1]
    first_date = start.date() if start.time() == time.min else start.date() + timedelta(days=1)
    return {
        "all_people": True,
        "rolled_start": start,
        "rolled_end": end,
        "rolled_first_date": first_date,
        "rolled_last_date": end.date() - timedelta(days=1),
    }


def _periods_between(first: date, last: date, interval: Interval) -> int:
    if interval == "day":
        return (last - first).days
    if interval == "week":
        return (last - first).days // 7
    return (last.year - first.year) * 12 + last.month - first.month
