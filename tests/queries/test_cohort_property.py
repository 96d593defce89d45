"""Property: the cohort grid equals a plain-Python reading of the definition on random event sets."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.cohort import CohortQuery, add_periods, bucket_start, cohort_report
from tests.queries.helpers import SITE, journeys_for
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

START, END, PERIODS = date(2024, 1, 1), date(2024, 1, 21), 3
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def reference(people: dict[str, list[date]], mode: str, periods: int = PERIODS) -> dict[str, list[int]]:
    """first_visit, weekly: cohort = Monday of the first event; active in N = an event in week N."""
    grid: dict[date, list[int]] = {}
    members = defaultdict(list)
    for days in people.values():
        first = min(days)
        if not START <= first <= END:
            continue
        cohort = bucket_start(first, "week")
        weeks = {(bucket_start(d, "week") - cohort).days // 7 for d in days}
        members[cohort].append(weeks)
    for cohort, all_weeks in members.items():
        row = []
        for n in range(periods + 1):
            if n == 0:
                row.append(len(all_weeks))
            elif mode == "on":
                row.append(sum(1 for weeks in all_weeks if n in weeks))
            else:
                row.append(sum(1 for weeks in all_weeks if max(weeks) >= n))
        grid[cohort] = row
    return {c.isoformat(): grid[c] for c in sorted(grid)}


people_strategy = st.dictionaries(
    keys=st.sampled_from([f"p{i}" for i in range(8)]),
    values=st.lists(st.integers(-10, 45).map(lambda d: START + timedelta(days=d)), min_size=1, max_size=5),
    max_size=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(people=people_strategy, mode=st.sampled_from(["on", "on_or_after"]))
def test_cohort_grid_matches_the_reference(tmp_path_factory, people, mode):
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("cohort") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    try:
        if people:
            journeys_for(ingest, {p: [{"event": "page_view", "at": f"{d.isoformat()}T12:00:00Z"} for d in days]
                                  for p, days in people.items()})  # fmt: skip
        query = CohortQuery(site_id=SITE, cohort_type="first_visit", interval="week", start_date=START,
                            end_date=END, period_count=PERIODS, retention_mode=mode)  # fmt: skip
        report = cohort_report(engine, query, now=NOW)
        got = {
            row["cohort"]: [c["retainedUsers"] for c in row["periods"]] for row in report["retention"]["rows"]
        }
        assert got == reference(people, mode)
        # The comparison snapshot is P0..P6 whatever periodCount is (NOW is long after every period).
        snapshot = {row["cohort"]: row["rates"] for row in report["comparison"]["rows"]}
        assert snapshot == {
            cohort: [round(n / row[0], 6) for n in row] for cohort, row in reference(people, mode, 6).items()
        }
        assert report["summary"]["totalUsers"] == sum(row[0] for row in got.values())
        assert add_periods(START, 1, "week") == START + timedelta(weeks=1)
    finally:
        engine.close()
        ingest.stop()


# --- any interval, in a time zone whose UTC offset changes inside the range --------------------------

ZONED_START, ZONED_END, ZONED_PERIODS = date(2024, 3, 20), date(2024, 4, 12), 3
ZONED_NOW = datetime(2024, 12, 1, tzinfo=UTC)


def zoned_reference(people: dict[str, list[datetime]], interval: str, zone: str, mode: str) -> dict:
    """Cohort = the local period of the first event; active in N = an event in local period N after
    it; the churn series over the periods of the range."""
    tz = ZoneInfo(zone)
    first_bucket = bucket_start(ZONED_START, interval)
    periods = 0
    while add_periods(first_bucket, periods, interval) <= ZONED_END:
        periods += 1

    def index(moment: datetime) -> int:
        local = bucket_start(moment.astimezone(tz).date(), interval)
        return next(i for i in range(-400, 400) if add_periods(first_bucket, i, interval) == local)

    members = {}
    for person, moments in people.items():
        first = min(moments).astimezone(tz).date()
        if ZONED_START <= first <= ZONED_END:
            cohort = index(min(moments))
            members[person] = (cohort, {index(m) for m in moments if index(m) >= cohort})
    grid = defaultdict(lambda: [0] * (ZONED_PERIODS + 1))
    for cohort, active in members.values():
        row = grid[add_periods(first_bucket, cohort, interval).isoformat()]
        for n in range(ZONED_PERIODS + 1):
            hit = (cohort + n in active) if mode == "on" or n == 0 else max(active) >= cohort + n
            row[n] += int(n == 0 or hit)
    churn = []
    for x in range(periods):
        active = [c for c, seen in members.values() if x in seen]
        before = [c for c, seen in members.values() if x - 1 in seen and x not in seen]
        churn.append({
            "newUsers": sum(1 for c, _ in members.values() if c == x), "activeUsers": len(active),
            "returningUsers": sum(1 for c in active if c < x), "churnedUsers": len(before) if x else 0,
        })  # fmt: skip
    return {"grid": dict(sorted(grid.items())), "churn": churn}


zoned_people = st.dictionaries(
    keys=st.sampled_from([f"p{i}" for i in range(8)]),
    values=st.lists(
        st.integers(-40 * 96, 80 * 96).map(
            lambda q: datetime.combine(ZONED_START, datetime.min.time(), UTC) + timedelta(minutes=15 * q)
        ),
        min_size=1,
        max_size=5,
    ),
    max_size=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    people=zoned_people,
    interval=st.sampled_from(["day", "week", "month"]),
    zone=st.sampled_from(["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"]),
    mode=st.sampled_from(["on", "on_or_after"]),
)
def test_zoned_grid_and_churn_match_the_reference(tmp_path_factory, people, interval, zone, mode):
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("cohort") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    try:
        if people:
            journeys_for(ingest, {p: [{"event": "page_view", "at": m.isoformat().replace("+00:00", "Z")} for m in ms]
                                  for p, ms in people.items()})  # fmt: skip
        query = CohortQuery(site_id=SITE, cohort_type="first_visit", interval=interval, start_date=ZONED_START,
                            end_date=ZONED_END, period_count=ZONED_PERIODS, timezone=zone,
                            retention_mode=mode)  # fmt: skip
        report = cohort_report(engine, query, now=ZONED_NOW)
        expected = zoned_reference(people, interval, zone, mode)
        got = {
            row["cohort"]: [c["retainedUsers"] for c in row["periods"]] for row in report["retention"]["rows"]
        }
        assert got == expected["grid"]
        keys = ("newUsers", "activeUsers", "returningUsers", "churnedUsers")
        assert [{k: p[k] for k in keys} for p in report["churn"]] == expected["churn"]
    finally:
        engine.close()
        ingest.stop()
