"""Per-person funnel progress: the stream the report and the per-person export share."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as pa

from queries.funnel import FunnelQuery, _people, funnel, funnel_progress, people_at_step, summarise
from tests.queries.helpers import SITE, journeys_for

DAY = date(2024, 1, 10)
STEPS = ("page_view", "add_to_cart", "checkout_begin")


def at(hour: int, minute: int = 0, second: int = 0) -> str:
    return f"2024-01-10T{hour:02d}:{minute:02d}:{second:02d}Z"


def us(hour: int, minute: int = 0, second: int = 0) -> int:
    return int(datetime(2024, 1, 10, hour, minute, second, tzinfo=UTC).timestamp()) * 1_000_000


def query(**kwargs) -> FunnelQuery:
    return FunnelQuery(**{"site_id": SITE, "steps": STEPS, "start_date": DAY, "end_date": DAY, **kwargs})


def journeys(ingest) -> None:
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10)}, {"event": "add_to_cart", "at": at(10, 1)},
                {"event": "checkout_begin", "at": at(10, 3)}],
        "bob": [{"event": "page_view", "at": at(11)}, {"event": "add_to_cart", "at": at(11, 3)}],
        "cat": [{"event": "page_view", "at": at(12)}],
        "dan": [{"event": "add_to_cart", "at": at(12)}],  # never entered
    })  # fmt: skip


def test_progress_per_person_in_person_order(lake):
    ingest, engine = lake
    journeys(ingest)
    assert list(funnel_progress(engine, query())) == [
        ("ann", [us(10), us(10, 1), us(10, 3)]),
        ("bob", [us(11), us(11, 3)]),
        ("cat", [us(12)]),
    ]
    assert list(funnel_progress(engine, query(window_seconds=60))) == [
        ("ann", [us(10), us(10, 1)]),
        ("bob", [us(11)]),
        ("cat", [us(12)]),
    ]


def test_the_report_is_the_summary_of_the_progress(lake):
    ingest, engine = lake
    journeys(ingest)
    progress = [times for _, times in funnel_progress(engine, query())]
    assert funnel(engine, query()) == summarise(progress, STEPS)


def test_people_at_a_step_are_the_people_the_report_counts_there(lake):
    ingest, engine = lake
    journeys(ingest)
    report = funnel(engine, query())
    expected = {
        0: [("ann", at(10)), ("bob", at(11)), ("cat", at(12))],
        1: [("ann", at(10, 1)), ("bob", at(11, 3))],
        2: [("ann", at(10, 3))],
    }
    for step, people in expected.items():
        got = [
            (person, when.isoformat().replace("+00:00", "Z"))
            for person, when in people_at_step(engine, query(), step=step)
        ]
        assert got == people
        assert len(got) == report.steps[step].count
    assert (
        list(people_at_step(engine, query(start_date=date(2024, 1, 11), end_date=date(2024, 1, 11)), step=0))
        == []
    )


def test_a_persons_events_are_grouped_across_batches():
    def batch(rows):
        people, times, names = zip(*rows, strict=True)
        return pa.record_batch({"person_id": list(people), "ts_us": list(times), "name": list(names)})

    batches = [
        batch([("a", 1, "page_view"), ("b", 2, "page_view")]),
        batch([("b", 3, "add_to_cart")]),
        batch([("b", 4, "checkout_begin"), ("c", 5, "page_view")]),
    ]
    assert list(_people(batches)) == [
        ("a", [(1, "page_view")]),
        ("b", [(2, "page_view"), (3, "add_to_cart"), (4, "checkout_begin")]),
        ("c", [(5, "page_view")]),
    ]
    assert list(_people([])) == []
