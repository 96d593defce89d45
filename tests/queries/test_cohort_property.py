"""Property: the cohort grid equals a plain-Python reading of the definition on random event sets."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.cohort import CohortQuery, add_periods, bucket_start, cohort_report
from tests.queries.helpers import SITE, journeys_for
from warehouse.engine import Engine

START, END, PERIODS = date(2024, 1, 1), date(2024, 1, 21), 3
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def reference(people: dict[str, list[date]], mode: str) -> dict[str, list[int]]:
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
        for n in range(PERIODS + 1):
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
        assert report["summary"]["totalUsers"] == sum(row[0] for row in got.values())
        assert add_periods(START, 1, "week") == START + timedelta(weeks=1)
    finally:
        engine.close()
        ingest.stop()
