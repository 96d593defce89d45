"""Funnels: exact counts and times on tiny hand-built journeys, and property tests of the vectorised
walk against a brute-force reference (levels) and a plain per-person walk (times)."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import date

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queries import funnel as funnel_module
from queries.funnel import FunnelQuery, _codes, funnel, walk_funnel
from tests.queries.funnel_walks import person_progress, summarise
from tests.queries.helpers import SITE, journeys_for

DAY = date(2024, 1, 10)


def run(engine, steps, **kwargs):
    query = FunnelQuery(site_id=SITE, steps=tuple(steps), start_date=kwargs.pop("start", DAY),
                        end_date=kwargs.pop("end", DAY), **kwargs)  # fmt: skip
    report = funnel(engine, query).model_dump(by_alias=True)
    return report


def counts(report):
    return [s["count"] for s in report["steps"]]


def at(hour: int, minute: int = 0, second: int = 0, day: int = 10) -> str:
    return f"2024-01-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


def test_counts_rates_drop_off_and_times(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10)}, {"event": "add_to_cart", "at": at(10, 1)},
                {"event": "checkout_begin", "at": at(10, 3)}],
        "bob": [{"event": "page_view", "at": at(11)}, {"event": "add_to_cart", "at": at(11, 3)}],
        "cat": [{"event": "page_view", "at": at(12)}],
        "dan": [{"event": "add_to_cart", "at": at(12)}],  # never entered
    })  # fmt: skip
    report = run(engine, ["page_view", "add_to_cart", "checkout_begin"])
    assert report == {
        "steps": [
            {"eventName": "page_view", "count": 3, "conversionRate": 1.0, "dropOff": 0,
             "avgTimeToConvertSeconds": None, "medianTimeToConvertSeconds": None},
            {"eventName": "add_to_cart", "count": 2, "conversionRate": 0.666667, "dropOff": 1,
             "avgTimeToConvertSeconds": 120.0, "medianTimeToConvertSeconds": 120.0},
            {"eventName": "checkout_begin", "count": 1, "conversionRate": 0.333333, "dropOff": 1,
             "avgTimeToConvertSeconds": 120.0, "medianTimeToConvertSeconds": 120.0},
        ],
        "totalEntered": 3,
        "overallConversionRate": 0.333333,
    }  # fmt: skip


def test_strict_order_refuses_other_events_between_steps(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10)}, {"event": "scroll", "at": at(10, 1)},
                {"event": "add_to_cart", "at": at(10, 2)}],
        "bob": [{"event": "page_view", "at": at(11)}, {"event": "add_to_cart", "at": at(11, 2)}],
    })  # fmt: skip
    assert counts(run(engine, ["page_view", "add_to_cart"], order="sequential")) == [2, 2]
    assert counts(run(engine, ["page_view", "add_to_cart"], order="strict")) == [2, 1]


def test_any_order_counts_steps_done_in_any_order_after_entry(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10)}, {"event": "checkout_begin", "at": at(10, 1)},
                {"event": "add_to_cart", "at": at(10, 2)}],
    })  # fmt: skip
    steps = ["page_view", "add_to_cart", "checkout_begin"]
    assert counts(run(engine, steps, order="sequential")) == [1, 1, 0]
    assert counts(run(engine, steps, order="any")) == [1, 1, 1]


def test_the_window_is_inclusive_at_its_limit(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10)}, {"event": "add_to_cart", "at": at(10, 1)}],
        "bob": [{"event": "page_view", "at": at(11)}, {"event": "add_to_cart", "at": at(11, 1, 1)}],
    })  # fmt: skip
    assert counts(run(engine, ["page_view", "add_to_cart"], window_seconds=60)) == [2, 1]


def test_every_step_one_event_is_a_possible_start(lake):
    ingest, engine = lake
    # The first page view is too early for the window; the second one converts.
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(8)}, {"event": "page_view", "at": at(10)},
                {"event": "add_to_cart", "at": at(10, 0, 30)}],
    })  # fmt: skip
    report = run(engine, ["page_view", "add_to_cart"], window_seconds=60)
    assert counts(report) == [1, 1]
    assert report["steps"][1]["avgTimeToConvertSeconds"] == 30.0


def test_a_repeated_step_must_happen_again(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "product_view", "at": at(10)}, {"event": "product_view", "at": at(10, 1)}],
        "bob": [{"event": "product_view", "at": at(11)}],
    })  # fmt: skip
    assert counts(run(engine, ["product_view", "product_view"])) == [2, 1]


def test_entry_is_by_step_one_inside_the_date_range(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "early": [{"event": "page_view", "at": at(23, day=9)}, {"event": "add_to_cart", "at": at(1)}],
        "late": [{"event": "page_view", "at": at(23, 59, 59)}, {"event": "add_to_cart", "at": at(0, 5, day=11)}],
    })  # fmt: skip
    assert counts(run(engine, ["page_view", "add_to_cart"])) == [1, 1]


def test_identity_merge_counts_one_person_across_devices(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "phone": [{"event": "page_view", "at": at(10)}, {"event": "identify", "at": at(10, 5), "userId": "ada"}],
        "laptop": [{"event": "add_to_cart", "at": at(10, 30), "userId": "ada"}],
    })  # fmt: skip
    assert counts(run(engine, ["page_view", "add_to_cart"])) == [1, 1]


def test_an_order_is_a_purchase_once_even_with_a_purchase_event_for_it(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "add_to_cart", "at": at(10)}, {"order": "o-1", "at": at(10, 2)},
                {"event": "purchase", "at": at(10, 2), "metadata": {"orderId": "o-1"}}],
        "bob": [{"event": "add_to_cart", "at": at(11)}, {"order": "o-2", "at": at(11, 2)}],
    })  # fmt: skip
    assert counts(run(engine, ["add_to_cart", "purchase"])) == [2, 2]
    assert counts(run(engine, ["add_to_cart", "purchase", "purchase"])) == [2, 2, 0]


def test_a_purchase_event_naming_an_earlier_sale_of_someone_else_is_no_purchase(lake):
    # Dan's thank-you page, forwarded to eve two days later, names dan's order: it is that sale, which
    # is before the range, not a purchase of eve's.
    ingest, engine = lake
    journeys_for(ingest, {
        "dan": [{"event": "add_to_cart", "at": at(9, day=8)}, {"order": "o-dan", "at": at(9, 5, day=8)}],
        "eve": [{"event": "page_view", "at": at(12)},
                {"event": "purchase", "at": at(12, 5), "metadata": {"orderId": "o-dan"}}],
    })  # fmt: skip
    assert counts(run(engine, ["page_view", "purchase"])) == [1, 0]
    assert counts(run(engine, ["page_view", "purchase"], start=date(2024, 1, 8))) == [1, 0]


def test_days_follow_the_site_time_zone(lake):
    ingest, engine = lake
    # 23:30 UTC on the 9th is already the 10th in Berlin.
    journeys_for(ingest, {"ann": [{"event": "page_view", "at": at(23, 30, day=9)}]})
    assert counts(run(engine, ["page_view", "add_to_cart"], timezone="UTC")) == [0, 0]
    assert counts(run(engine, ["page_view", "add_to_cart"], timezone="Europe/Berlin")) == [1, 0]


def test_events_at_the_same_instant_sort_in_step_order_other_events_first(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "add_to_cart", "at": at(10)}, {"event": "page_view", "at": at(10)}],
        "bob": [{"event": "page_view", "at": at(11)}, {"event": "add_to_cart", "at": at(11, 1)},
                {"event": "scroll", "at": at(11, 1)}],
    })  # fmt: skip
    assert counts(run(engine, ["page_view", "add_to_cart"])) == [2, 2]
    # strict: bob's scroll at the same instant as his add_to_cart comes between the steps
    assert counts(run(engine, ["page_view", "add_to_cart"], order="strict")) == [2, 1]


def test_an_empty_range_answers_zeros(lake):
    _, engine = lake
    report = run(engine, ["page_view", "add_to_cart"])
    assert report["totalEntered"] == 0
    assert report["overallConversionRate"] == 0.0
    assert counts(report) == [0, 0]


# --- property: the production algorithm against a brute force over every index combination -------


def reference_level(events, steps, window, order, entry):
    """The largest k such that some k-step match exists: indexes i1 < … < ik (strict: consecutive;
    any: steps 2..k matched as a multiset) with a step-1 event inside entry and all within the window."""
    best = 0
    n = len(events)
    for k in range(1, len(steps) + 1):
        found = False
        for combo in itertools.combinations(range(n), k):
            first = events[combo[0]]
            if first[1] != steps[0] or not entry[0] <= first[0] < entry[1]:
                continue
            if any(events[i][0] - first[0] > window for i in combo):
                continue
            names = [events[i][1] for i in combo]
            if order == "strict" and list(combo) != list(range(combo[0], combo[0] + k)):
                continue
            if order == "any":
                ok = sorted(names[1:]) == sorted(steps[1:k]) or _multiset_prefix(names[1:], steps[1:], k - 1)
            else:
                ok = names == list(steps[:k])
            if ok:
                found = True
                break
        if found:
            best = k
        else:
            break
    return best


def _multiset_prefix(names, rest, size):
    """In any order, k-1 matched steps may be any k-1 of the remaining steps."""
    from collections import Counter

    return any(Counter(names) == Counter(choice) for choice in itertools.combinations(rest, size))


def greedy_reference(events, steps, window, order, entry):
    """A plain per-person walk, step by step, from every step-1 start in the entry range: the step
    times of the first start reaching the furthest step."""
    best = []
    for index, (ts, name) in enumerate(events):
        if name != steps[0] or not entry[0] <= ts < entry[1]:
            continue
        times = [ts]
        if order == "any":
            wanted = Counter(steps[1:])
            for later, later_name in events[index + 1 :]:
                if later - ts > window:
                    break
                if wanted[later_name] > 0:
                    wanted[later_name] -= 1
                    times.append(later)
        else:
            position = index
            for step in steps[1:]:
                following = (
                    range(position + 1, min(position + 2, len(events)))
                    if order == "strict"
                    else range(position + 1, len(events))
                )
                position = next((i for i in following if events[i][1] == step), None)
                if position is None or events[position][0] - ts > window:
                    break
                times.append(events[position][0])
        if len(times) > len(best):
            best = times
    return best


events_strategy = st.lists(
    st.tuples(st.integers(0, 20), st.sampled_from(["a", "b", "c"])), min_size=0, max_size=7
).map(lambda evs: sorted(evs, key=lambda e: e[0]))
steps_strategy = st.lists(st.sampled_from(["a", "b", "c"]), min_size=2, max_size=3).map(tuple)
orders = st.sampled_from(["sequential", "strict", "any"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=events_strategy, steps=steps_strategy, window=st.integers(0, 10), order=orders)
def test_person_progress_matches_the_brute_force(events, steps, window, order):
    entry = (0, 15)
    times = person_progress(events, steps, window_us=window, order=order, entry=entry)
    assert len(times) == reference_level(events, steps, window, order, entry)
    assert times == greedy_reference(events, steps, window, order, entry)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    people=st.lists(events_strategy, min_size=0, max_size=6),
    steps=steps_strategy,
    window=st.integers(0, 10),
    order=orders,
)
def test_the_walk_over_many_people_matches_each_persons_reference(people, steps, window, order):
    """All people in one set of arrays, as the engine hands them over: no chain crosses into the next
    person's rows, and each person gets its own reference answer."""
    entry = (0, 15)
    names = list(dict.fromkeys(steps))
    rows = [(p, ts, name) for p, events in enumerate(people) for ts, name in events]
    person = np.array([r[0] for r in rows], dtype=np.int64)
    ts = np.array([r[1] for r in rows], dtype=np.int64)
    code = np.array([names.index(r[2]) + 1 if r[2] in names else 0 for r in rows], dtype=np.int64)
    progress = walk_funnel(person, ts, code, codes=_codes(steps), window_us=window, order=order, entry=entry)
    got = {int(p): progress.times[i, : progress.level[i]].tolist() for i, p in enumerate(progress.person)}
    expected = {}
    for p, events in enumerate(people):
        times = greedy_reference(events, steps, window, order, entry)
        assert len(times) == reference_level(events, steps, window, order, entry)
        if times:
            expected[p] = times
    assert got == expected


def test_summarise_counts_people_at_or_beyond_each_step():
    second = 1_000_000
    report = summarise([[0, 10 * second, 30 * second], [0, 20 * second], [5 * second], []], ("a", "b", "c"))
    assert [s.count for s in report.steps] == [3, 2, 1]
    assert report.steps[1].avg_time_to_convert_seconds == 15.0
    assert report.steps[2].median_time_to_convert_seconds == 20.0
    assert report.total_entered == 3


def test_the_report_is_the_same_when_people_are_walked_in_small_parts(lake, monkeypatch):
    ingest, engine = lake
    journeys_for(ingest, {
        "ann": [{"event": "page_view", "at": at(10)}, {"event": "add_to_cart", "at": at(10, 1)},
                {"event": "checkout_begin", "at": at(10, 3)}],
        "bob": [{"event": "page_view", "at": at(11)}, {"event": "add_to_cart", "at": at(11, 3)}],
        "cat": [{"event": "page_view", "at": at(12)}, {"event": "page_view", "at": at(12, 5)}],
        "dan": [{"event": "add_to_cart", "at": at(12)}, {"event": "page_view", "at": at(13)},
                {"event": "checkout_begin", "at": at(13, 1)}],
    })  # fmt: skip
    steps = ["page_view", "add_to_cart", "checkout_begin"]
    whole = run(engine, steps)
    monkeypatch.setattr(funnel_module, "PART_ROWS", 2)
    assert run(engine, steps) == whole
    assert counts(whole) == [4, 2, 1]


def test_the_per_person_progress_refuses_two_ids_behind_one_hash(lake, monkeypatch):
    ingest, engine = lake
    journeys_for(ingest, {"ann": [{"event": "page_view", "at": at(10)}]})
    query = FunnelQuery(site_id=SITE, steps=("page_view", "add_to_cart"), start_date=DAY, end_date=DAY)
    [(person, _)] = list(funnel_module.funnel_progress(engine, query))
    assert person == "ann"
    real_run = funnel_module.library.run

    def colliding(engine, name, params):
        table = real_run(engine, name, params)
        if name != "funnel_people":
            return table
        return pa.table({"person_key": table["person_key"].to_pylist() * 2, "person_id": ["ann", "bob"]})

    monkeypatch.setattr(funnel_module.library, "run", colliding)
    with pytest.raises(RuntimeError, match="share the hash"):
        list(funnel_module.funnel_progress(engine, query))
