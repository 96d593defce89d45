"""The cohort report over visitor-activity rollups of whole months equals the report over the events
themselves, and a rollup stands for its month only while it is current."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.cohort import CohortQuery, cohort_report
from tests.queries.helpers import SITE, journeys_for
from warehouse import visitor_activity
from warehouse.engine import Engine

NOW = datetime(2024, 12, 1, tzinfo=UTC)


def report_grid(engine: Engine, query: CohortQuery) -> dict:
    report = cohort_report(engine, query, now=NOW)
    return {
        "grid": {
            r["cohort"]: [c["retainedUsers"] for c in r["periods"]] for r in report["retention"]["rows"]
        },
        "churn": report["churn"],
        "summary": report["summary"],
    }


def test_a_month_rollup_holds_first_times_and_local_days_per_visitor_name_and_user(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        # 23:30 UTC on Jan 2 is Jan 3 in Berlin; Jan 31 23:30 UTC is already February there.
        "v1": [{"event": "page_view", "at": "2024-01-02T23:30:00Z"},
               {"event": "purchase", "at": "2024-01-20T10:00:00Z"},
               {"event": "purchase", "at": "2024-01-21T10:00:00Z", "metadata": {"orderId": "o7"}},
               {"event": "page_view", "at": "2024-01-31T23:30:00Z"}],
        "v2": [{"event": "page_view", "at": "2024-01-05T10:00:00Z", "userId": "ada"}],
    })  # fmt: skip
    assert visitor_activity.build(engine, SITE, date(2024, 1, 1), "Europe/Berlin")
    [rollup] = visitor_activity.current(ingest.lake, SITE, "Europe/Berlin", until=NOW)
    rows = {
        (r["visitor_id"], r["user_id"], r["name"], r["order_id"]): (r["first_us"], r["day_mask"])
        for r in pq.read_table(rollup.file).to_pylist()
    }
    us = lambda text: int(datetime.fromisoformat(text).timestamp()) * 1_000_000  # noqa: E731
    assert rows == {
        ("v1", None, "*", None): (us("2024-01-02T23:30:00+00:00"), (1 << 2) | (1 << 19) | (1 << 20)),
        ("v1", None, "page_view", None): (us("2024-01-02T23:30:00+00:00"), 1 << 2),
        # purchase events apart by the order they name: only a report knows whether it is a sale
        ("v1", None, "purchase", None): (us("2024-01-20T10:00:00+00:00"), 1 << 19),
        ("v1", None, "purchase", "o7"): (us("2024-01-21T10:00:00+00:00"), 1 << 20),
        ("v2", "ada", "*", None): (us("2024-01-05T10:00:00+00:00"), 1 << 4),
        ("v2", "ada", "page_view", None): (us("2024-01-05T10:00:00+00:00"), 1 << 4),
    }


def test_a_rollup_of_another_layout_stands_for_nothing_until_rebuilt(lake):
    ingest, engine = lake
    journeys_for(ingest, {"v1": [{"event": "page_view", "at": "2024-01-10T10:00:00Z"}]})
    assert visitor_activity.refresh(engine, {SITE: "UTC"}, now=NOW) == 1
    [rollup] = visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW)
    manifest_file = rollup.file.parent / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest_file.write_text(json.dumps({k: v for k, v in manifest.items() if k != "layout"}))  # layout 1
    assert visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW) == []
    assert visitor_activity.refresh(engine, {SITE: "UTC"}, now=NOW) == 1
    assert visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW)


def test_a_rollup_is_current_only_for_its_time_zone_and_the_files_it_was_built_from(lake):
    ingest, engine = lake
    journeys_for(ingest, {"v1": [{"event": "page_view", "at": "2024-01-10T10:00:00Z"}]})
    assert visitor_activity.refresh(engine, {SITE: "UTC"}, now=NOW) == 1
    assert [r.month for r in visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW)] == [
        date(2024, 1, 1)
    ]
    assert visitor_activity.current(ingest.lake, SITE, "Asia/Tokyo", until=NOW) == []
    # A month that ends after `until` is not used even when current.
    assert visitor_activity.current(ingest.lake, SITE, "UTC", until=datetime(2024, 1, 31, tzinfo=UTC)) == []

    # A late event flushed into January: the rollup no longer stands for the month...
    journeys_for(ingest, {"v2": [{"event": "page_view", "at": "2024-01-12T10:00:00Z"}]})
    assert visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW) == []
    # ...until the job rebuilds it; nothing to do on the next run.
    assert visitor_activity.refresh(engine, {SITE: "UTC"}, now=NOW) == 1
    assert visitor_activity.refresh(engine, {SITE: "UTC"}, now=NOW) == 0
    [rollup] = visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW)
    assert {r["visitor_id"] for r in pq.read_table(rollup.file).to_pylist()} == {"v1", "v2"}


def test_the_job_rolls_up_only_months_that_have_ended(lake):
    ingest, engine = lake
    journeys_for(ingest, {"v1": [{"event": "page_view", "at": "2024-01-10T10:00:00Z"},
                                 {"event": "page_view", "at": "2024-02-10T10:00:00Z"}]})  # fmt: skip
    assert visitor_activity.refresh(engine, {}, now=datetime(2024, 2, 15, tzinfo=UTC)) == 1
    months = visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW)
    assert [r.month for r in months] == [date(2024, 1, 1)]


def test_a_late_event_in_a_rolled_up_month_still_counts(lake):
    ingest, engine = lake
    query = CohortQuery(site_id=SITE, cohort_type="first_visit", interval="week", start_date=date(2024, 1, 1),
                        end_date=date(2024, 1, 31), period_count=3)  # fmt: skip
    journeys_for(ingest, {"v1": [{"event": "page_view", "at": "2024-01-02T10:00:00Z"}]})
    visitor_activity.refresh(engine, {}, now=NOW)
    journeys_for(ingest, {"v1": [{"event": "page_view", "at": "2024-01-10T10:00:00Z"}]})
    assert report_grid(engine, query)["grid"] == {"2024-01-01": [1, 1, 0, 0]}
    visitor_activity.refresh(engine, {}, now=NOW)
    assert visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW)
    assert report_grid(engine, query)["grid"] == {"2024-01-01": [1, 1, 0, 0]}


# --- property: with rollups of any months, the same report as from the events ------------------------

FIRST = datetime(2024, 1, 1, tzinfo=UTC)
NAMES = ["page_view", "product_view", "user_signup", "purchase"]

step = st.one_of(
    st.builds(lambda q, name, user: {"event": name, "at": FIRST + timedelta(hours=7 * q), "userId": user},
              st.integers(-200, 600), st.sampled_from(NAMES), st.sampled_from([None, None, "u1", "u2"])),
    st.builds(lambda q: {"order": True, "at": FIRST + timedelta(hours=7 * q)}, st.integers(-200, 600)),
    # a purchase event naming the n-th order (one of anyone's, or none when there are fewer)
    st.builds(lambda q, n: {"event": "purchase", "at": FIRST + timedelta(hours=7 * q), "names": n, "userId": None},
              st.integers(-200, 600), st.integers(0, 4)),
)  # fmt: skip
people = st.dictionaries(st.sampled_from([f"v{i}" for i in range(6)]), st.lists(step, min_size=1, max_size=6),
                         max_size=5)  # fmt: skip


def wire(journeys: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Each visitor's steps in wire form; orders numbered o0, o1... across visitors."""
    out, orders = {}, 0
    for visitor, steps in journeys.items():
        out[visitor] = []
        for s in steps:
            at = s["at"].isoformat().replace("+00:00", "Z")
            if "order" in s:
                out[visitor].append({"order": f"o{orders}", "at": at})
                orders += 1
            else:
                named = {"metadata": {"orderId": f"o{s['names']}"}} if "names" in s else {}
                user = {"userId": s["userId"]} if s["userId"] else {}
                out[visitor].append({"event": s["event"], "at": at, **user, **named})
    return out


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    journeys=people,
    interval=st.sampled_from(["day", "week", "month"]),
    zone=st.sampled_from(["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"]),
    cohort_type=st.sampled_from(["first_visit", "signup", "first_purchase"]),
    return_event=st.sampled_from([None, "page_view", "purchase"]),
    mode=st.sampled_from(["on", "on_or_after"]),
    rolled_until=st.sampled_from([datetime(2024, 2, 10, tzinfo=UTC), datetime(2024, 4, 5, tzinfo=UTC), NOW]),
)
def test_the_report_over_rollups_equals_the_report_over_events(
    tmp_path_factory, journeys, interval, zone, cohort_type, return_event, mode, rolled_until
):
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("rollup") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    try:
        if journeys:
            journeys_for(ingest, wire(journeys))
        query = CohortQuery(site_id=SITE, cohort_type=cohort_type, interval=interval, start_date=date(2024, 1, 3),
                            end_date=date(2024, 3, 20), period_count=4, timezone=zone, return_event=return_event,
                            retention_mode=mode)  # fmt: skip
        from_events = report_grid(engine, query)
        visitor_activity.refresh(engine, {SITE: zone}, now=rolled_until)
        if rolled_until == NOW and any("event" in s for steps in journeys.values() for s in steps):
            assert visitor_activity.current(ingest.lake, SITE, zone, until=NOW)
        assert report_grid(engine, query) == from_events
    finally:
        engine.close()
        ingest.stop()


def test_one_sites_failure_does_not_stop_the_others_rollups(lake):
    ingest, engine = lake
    journeys_for(ingest, {"v1": [{"event": "page_view", "at": "2024-01-10T10:00:00Z"}]}, site_id="broken")
    journeys_for(ingest, {"v1": [{"event": "page_view", "at": "2024-01-10T10:00:00Z"}]})
    assert visitor_activity.refresh(engine, {"broken": "Mars/Olympus_Mons", SITE: "UTC"}, now=NOW) == 1
    assert visitor_activity.current(ingest.lake, SITE, "UTC", until=NOW)
