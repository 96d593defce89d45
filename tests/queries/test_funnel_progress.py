"""Per-person funnel progress: the stream the report and the per-person export share."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.funnel import FunnelQuery, funnel, funnel_progress, people_at_step, walk_funnel
from tests.queries.funnel_walks import summarise
from tests.queries.helpers import SITE, journeys_for
from tests.queries.test_funnel import greedy_reference
from warehouse.engine import Engine

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


def test_in_any_order_a_step_lists_the_people_who_did_that_many_steps(lake):
    # In any order, step k is reached by doing step 1 and k of the others, whichever they are: dan
    # never adds to cart yet counts at add_to_cart, when he begins checkout, and not at
    # checkout_begin, which would need a third step.
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10)}, {"event": "checkout_begin", "at": at(10, 1)},
                {"event": "add_to_cart", "at": at(10, 2)}],
        "bob": [{"event": "page_view", "at": at(11)}, {"event": "add_to_cart", "at": at(11, 3)}],
        "dan": [{"event": "page_view", "at": at(12)}, {"event": "checkout_begin", "at": at(12, 4)}],
    })  # fmt: skip
    expected = {
        0: [("ann", at(10)), ("bob", at(11)), ("dan", at(12))],
        1: [("ann", at(10, 1)), ("bob", at(11, 3)), ("dan", at(12, 4))],
        2: [("ann", at(10, 2))],
    }
    report = funnel(engine, query(order="any"))
    assert [step.count for step in report.steps] == [3, 3, 1]
    for step, people in expected.items():
        got = [
            (person, when.isoformat().replace("+00:00", "Z"))
            for person, when in people_at_step(engine, query(order="any"), step=step)
        ]
        assert got == people


# --- property: the per-step people are the people the report counts there, in every order ----------


@pytest.fixture(scope="module")
def shared_lake(tmp_path_factory):
    """One lake for every example, a new site each: a lake per example would be most of the run."""
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("funnel") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    yield ingest, engine
    engine.close()
    ingest.stop()


MIDNIGHT = datetime(2024, 1, 10, tzinfo=UTC)
NAMES = ("page_view", "product_view", "add_to_cart", "scroll")
# Minutes from midnight of DAY: two before the entry range, several at the same instant.
events_of_people = st.lists(
    st.tuples(st.sampled_from(["p0", "p1", "p2"]), st.sampled_from([-2, -1, 0, 0, 1, 2, 3, 5]),
              st.sampled_from(NAMES)),
    max_size=9,
)  # fmt: skip


def reference_people(events, steps, *, window_seconds, order):
    """Per person, the step times (seconds from midnight) of the first most complete conversion, from
    the plain per-person walk; same-instant events in step order, other events first."""
    codes = {name: k + 1 for k, name in enumerate(dict.fromkeys(steps))}
    progress = {}
    for person in sorted({p for p, _, _ in events}):
        own = sorted((60 * minute, codes.get(name, 0), name) for p, minute, name in events if p == person)
        times = greedy_reference(
            [(ts, name) for ts, _, name in own], steps, window_seconds, order, (0, 24 * 3600)
        )
        if times:
            progress[person] = times
    return progress


@pytest.mark.slow
@seed(20240110)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=events_of_people,
    steps=st.lists(st.sampled_from(NAMES[:3]), min_size=2, max_size=3).map(tuple),
    window_seconds=st.sampled_from([1, 60, 120, 300]),
    order=st.sampled_from(["sequential", "strict", "any"]),
)
def test_each_steps_people_are_the_reports_count_there(shared_lake, events, steps, window_seconds, order):
    ingest, engine = shared_lake
    site_id = str(uuid.uuid4())
    people: dict[str, list[dict]] = {}
    for person, minute, name in events:
        moment = MIDNIGHT + timedelta(minutes=minute)
        people.setdefault(person, []).append({"event": name, "at": moment.isoformat().replace("+00:00", "Z")})
    if people:
        journeys_for(ingest, people, site_id=site_id)
    q = FunnelQuery(site_id=site_id, steps=steps, start_date=DAY, end_date=DAY,
                    window_seconds=window_seconds, order=order)  # fmt: skip
    report = funnel(engine, q)
    reference = reference_people(events, steps, window_seconds=window_seconds, order=order)
    for k in range(len(steps)):
        got = [
            (person, (when - MIDNIGHT).total_seconds()) for person, when in people_at_step(engine, q, step=k)
        ]
        assert len(got) == report.steps[k].count
        assert got == [(person, times[k]) for person, times in reference.items() if len(times) > k]
