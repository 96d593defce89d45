"""Per-person funnel progress: the stream the report and the per-person export share."""

from __future__ import annotations

from datetime import UTC, date, datetime

import numpy as np

from queries.funnel import FunnelQuery, funnel, funnel_progress, people_at_step, summarise, walk_funnel
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


def test_the_walk_keeps_each_persons_rows_to_that_person():
    # rows grouped by person (any integer key), codes 1..3 for page_view, add_to_cart, checkout_begin
    person = np.array([7, 7, 9, 9, 9, 4])
    ts = np.array([1, 5, 2, 3, 4, 6])
    code = np.array([1, 2, 2, 1, 3, 3])
    progress = walk_funnel(
        person, ts, code, codes=[1, 2, 3], window_us=10, order="sequential", entry=(0, 100)
    )  # fmt: skip
    # person 7 stops at add_to_cart: person 9's checkout_begin is not theirs; person 9 has no
    # add_to_cart after its page view; person 4 never entered
    assert progress.person.tolist() == [7, 9]
    assert progress.level.tolist() == [2, 1]
    assert progress.times[0, :2].tolist() == [1, 5]
    assert progress.times[1, :1].tolist() == [3]
