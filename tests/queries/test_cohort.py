"""Cohort retention on tiny hand-built journeys with exact numbers."""

from __future__ import annotations

from datetime import UTC, date, datetime

from queries.cohort import CohortQuery, cohort_report
from tests.queries.helpers import SITE, journeys_for

NOW = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def weekly(engine, *, start="2024-01-01", end="2024-01-14", periods=3, now=NOW, **kwargs):
    query = CohortQuery(site_id=SITE, cohort_type=kwargs.pop("cohort_type", "first_visit"), interval="week",
                        start_date=date.fromisoformat(start), end_date=date.fromisoformat(end),
                        period_count=periods, **kwargs)  # fmt: skip
    return cohort_report(engine, query, now=now)


def grid(report):
    return {
        row["cohort"]: [c["retainedUsers"] for c in row["periods"]] for row in report["retention"]["rows"]
    }


def visit(day: str, name: str = "page_view") -> dict:
    return {"event": name, "at": f"{day}T10:00:00Z"}


JOURNEYS = {
    # Monday 2024-01-01 week: ann returns in weeks 1 and 3, bob in week 2 only.
    "ann": [visit("2024-01-01"), visit("2024-01-09"), visit("2024-01-23")],
    "bob": [visit("2024-01-03"), visit("2024-01-17")],
    # Week of 2024-01-08: cat returns in week 1.
    "cat": [visit("2024-01-10"), visit("2024-01-15")],
    # First visit before the range: in no cohort.
    "old": [visit("2023-12-20"), visit("2024-01-02")],
}


def test_weekly_retention_on_exact_periods(lake):
    ingest, engine = lake
    journeys_for(ingest, JOURNEYS)
    report = weekly(engine)
    assert grid(report) == {"2024-01-01": [2, 1, 1, 1], "2024-01-08": [1, 1, 0, 0]}
    assert report["retention"]["columns"] == ["P0", "P1", "P2", "P3"]
    assert report["summary"] == {
        "totalUsers": 3, "cohortCount": 2, "activePeriodCount": 6,
        "overallRetentionRate": 0.444444, "overallChurnRate": 0.555556,
    }  # fmt: skip
    assert report["diagnostics"] is None


def test_on_or_after_counts_people_active_in_that_period_or_later(lake):
    ingest, engine = lake
    journeys_for(ingest, JOURNEYS)
    assert grid(weekly(engine, retention_mode="on_or_after")) == {
        # bob came back in week 2 only, so he counts in P1 and P2 as well.
        "2024-01-01": [2, 2, 2, 1],
        "2024-01-08": [1, 1, 0, 0],
    }


def test_periods_not_yet_started_are_empty_cells(lake):
    ingest, engine = lake
    journeys_for(ingest, JOURNEYS)
    report = weekly(engine, now=datetime(2024, 1, 16, tzinfo=UTC))
    assert grid(report) == {"2024-01-01": [2, 1, 1, None], "2024-01-08": [1, 1, None, None]}


def test_return_event_limits_what_counts_as_coming_back(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [visit("2024-01-01"), visit("2024-01-09", "search_query"), visit("2024-01-16", "scroll")],
    })  # fmt: skip
    assert grid(weekly(engine, return_event="scroll")) == {"2024-01-01": [1, 0, 1, 0]}


def test_first_purchase_cohorts_count_orders_and_exclude_earlier_buyers(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [visit("2023-12-01"), {"order": "o1", "at": "2024-01-02T10:00:00Z"}, visit("2024-01-10")],
        "bob": [{"order": "o0", "at": "2023-12-28T10:00:00Z"}, {"order": "o2", "at": "2024-01-03T10:00:00Z"}],
    })  # fmt: skip
    assert grid(weekly(engine, cohort_type="first_purchase")) == {"2024-01-01": [1, 1, 0, 0]}


def test_a_purchase_event_naming_a_sale_is_that_sale_not_its_senders_purchase(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"order": "o1", "at": "2024-01-02T10:00:00Z"}],
        # bob opened ann's thank-you page (the event names her order): he bought nothing
        "bob": [{"event": "purchase", "at": "2024-01-02T11:00:00Z", "metadata": {"orderId": "o1"}}],
        # cat's purchase event names no sale of the site: her purchase
        "cat": [{"event": "purchase", "at": "2024-01-10T11:00:00Z", "metadata": {"orderId": "elsewhere"}}],
    })  # fmt: skip
    assert grid(weekly(engine, cohort_type="first_purchase")) == {"2024-01-01": [1, 0, 0, 0],
                                                                 "2024-01-08": [1, 0, 0, 0]}  # fmt: skip
    # bob was still there: his visit is activity
    assert grid(weekly(engine)) == {"2024-01-01": [2, 0, 0, 0], "2024-01-08": [1, 0, 0, 0]}


def test_churn_series_per_calendar_period(lake):
    ingest, engine = lake
    journeys_for(ingest, JOURNEYS)
    churn = weekly(engine)["churn"]
    assert [
        (c["period"], c["newUsers"], c["returningUsers"], c["churnedUsers"], c["churnRate"]) for c in churn
    ] == [
        ("2024-01-01", 2, 0, 0, 0.0),
        ("2024-01-08", 1, 1, 1, 0.5),
    ]
    assert all(c["isActivePeriod"] for c in churn)


def test_diagnostics_for_an_empty_range_and_for_a_missing_cohort_event(lake):
    ingest, engine = lake
    assert weekly(engine)["diagnostics"]["code"] == "NO_EVENTS_IN_RANGE"
    journeys_for(ingest, {"ann": [visit("2024-01-02")]})
    report = weekly(engine, cohort_type="signup")
    assert report["diagnostics"]["code"] == "NO_COHORT_EVENTS_FOR_TYPE"
    assert report["summary"]["totalUsers"] == 0


def test_a_report_over_more_than_128_periods_reads_activity_in_slabs(lake):
    ingest, engine = lake
    # daily cohorts over 200 days: periods 0..127 come from the first scan, the rest from the second
    journeys_for(ingest, {
        "ann": [visit("2024-01-01"), visit("2024-01-02")],
        "bob": [visit("2024-06-01"), visit("2024-06-03")],
        "cat": [visit("2024-05-08"), visit("2024-05-09"), visit("2024-05-10")],  # period 128 is 2024-05-08
    })  # fmt: skip
    query = CohortQuery(site_id=SITE, cohort_type="first_visit", interval="day", start_date=date(2024, 1, 1),
                        end_date=date(2024, 7, 18), period_count=2)  # fmt: skip
    report = cohort_report(engine, query, now=datetime(2024, 12, 1, tzinfo=UTC))
    assert grid(report) == {"2024-01-01": [1, 1, 0], "2024-05-08": [1, 1, 1], "2024-06-01": [1, 0, 1]}
    churn = {p["period"]: (p["activeUsers"], p["churnedUsers"]) for p in report["churn"]}
    assert churn["2024-05-07"] == (0, 0)
    assert churn["2024-05-08"] == (1, 0)
    assert churn["2024-05-10"] == (1, 0)
    assert churn["2024-05-11"] == (0, 1)
    assert churn["2024-06-02"] == (0, 1)
    assert len(report["churn"]) == 200


def test_a_person_counts_once_across_devices(lake):
    ingest, engine = lake
    # ada's phone visits in week 0 and is identified in week 3; her laptop, logged in, comes back in
    # week 1: one person in the 2024-01-01 cohort, not a second cohort member in week 1
    journeys_for(ingest, {
        "phone": [visit("2024-01-02"), {"event": "identify", "at": "2024-01-23T10:00:00Z", "userId": "ada"}],
        "laptop": [{"event": "page_view", "at": "2024-01-09T10:00:00Z", "userId": "ada"}],
        "bob": [visit("2024-01-03")],
    })  # fmt: skip
    report = weekly(engine)
    assert grid(report) == {"2024-01-01": [2, 1, 0, 1]}
    assert report["summary"]["totalUsers"] == 2


def test_the_comparison_snapshot_is_p0_to_p6_whatever_the_period_count(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [visit("2024-01-01"), visit("2024-01-29"), visit("2024-02-12")],  # back in weeks 4 and 6
        "bob": [visit("2024-01-02"), visit("2024-01-08")],  # back in week 1
    })  # fmt: skip
    report = weekly(engine, end="2024-01-07", periods=1)
    assert report["retention"]["columns"] == ["P0", "P1"]
    assert grid(report) == {"2024-01-01": [2, 1]}
    assert report["comparison"] == {
        "columns": ["P0", "P1", "P2", "P3", "P4", "P5", "P6"],
        "rows": [{"cohort": "2024-01-01", "rates": [1.0, 0.5, 0.0, 0.0, 0.5, 0.0, 0.5]}],
    }
    assert report["summary"]["activePeriodCount"] == 1  # the report's own columns only
    early = weekly(engine, end="2024-01-07", periods=1, now=datetime(2024, 1, 20, tzinfo=UTC))
    assert early["comparison"]["rows"][0]["rates"] == [1.0, 0.5, 0.0, None, None, None, None]
