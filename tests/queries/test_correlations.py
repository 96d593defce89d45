"""Correlations: odds ratios computed by hand on six people, and the skew flag."""

from __future__ import annotations

from datetime import UTC, datetime

from queries.correlations import CorrelationRange, correlations, is_skewed, odds_ratio
from tests.queries.helpers import SITE, journeys_for

DAY = CorrelationRange(SITE, datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 3, 2, tzinfo=UTC))


def at(clock: str) -> str:
    return f"2024-03-01T{clock}Z"


def ev(event: str, clock: str, category: str | None = None) -> dict:
    step = {"event": event, "at": at(clock)}
    if category:
        step["metadata"] = {"categoryPath": category}
    return step


def people(ingest) -> None:
    """p1 views and adds in Home and orders (her later search counts for nothing); p2 does the same and
    reports a purchase event; p6 only orders. p3 views a Garden product; p4 and p5 search. Three of six
    converted."""
    journeys_for(ingest, {
        "p1": [ev("page_view", "10:00:00"), ev("product_view", "10:01:00", "Home"),
               ev("add_to_cart", "10:02:00", "Home"), {"order": "o1", "at": at("10:05:00")},
               ev("search_query", "10:06:00")],
        "p2": [ev("page_view", "11:00:00"), ev("product_view", "11:01:00", "Home"),
               ev("add_to_cart", "11:02:00", "Home"), ev("purchase", "11:03:00")],
        "p3": [ev("page_view", "12:00:00"), ev("product_view", "12:01:00", "Garden")],
        "p4": [ev("page_view", "13:00:00"), ev("search_query", "13:01:00")],
        "p5": [ev("page_view", "14:00:00"), ev("search_query", "14:01:00")],
        "p6": [{"order": "o6", "at": at("15:00:00")}],
    })  # fmt: skip


def test_odds_ratio_with_plus_one_smoothing():
    # a=2 did and converted, b=1 did and did not, c=1 converted without, d=2 neither.
    assert odds_ratio(success=2, failure=1, total_success=3, total_failure=3) == 9 / 4
    assert odds_ratio(success=0, failure=0, total_success=0, total_failure=0) == 1.0


def test_skew_threshold():
    assert not is_skewed(1, 10) and not is_skewed(9, 10) and not is_skewed(0, 0)
    assert is_skewed(0, 10) and is_skewed(1, 11) and is_skewed(10, 11)


def test_correlations_by_hand(lake):
    ingest, engine = lake
    people(ingest)
    body = correlations(engine, DAY, limit=10).model_dump(by_alias=True, mode="json")
    assert body["totals"] == {"people": 6, "converted": 3, "notConverted": 3, "conversionRate": 0.5}
    assert body["skewed"] is False
    rows = [(r["event"], r["successCount"], r["failureCount"], r["oddsRatio"]) for r in body["positive"]]
    assert rows == [
        ("add_to_cart", 2, 0, 6.0),  # (2+1)(3+1) / ((0+1)(1+1))
        ("add_to_cart::Home", 2, 0, 6.0),
        ("product_view::Home", 2, 0, 6.0),
        ("product_view", 2, 1, 2.25),  # (2+1)(2+1) / ((1+1)(1+1))
    ]
    rows = [(r["event"], r["successCount"], r["failureCount"], r["oddsRatio"]) for r in body["negative"]]
    assert rows == [
        ("search_query", 0, 2, 0.166667),  # (0+1)(1+1) / ((2+1)(3+1)); p1 searched only after buying
        ("page_view", 2, 3, 0.375),  # (2+1)(0+1) / ((3+1)(1+1))
        ("product_view::Garden", 0, 1, 0.375),  # (0+1)(2+1) / ((1+1)(3+1))
    ]
    first = body["positive"][1]
    assert first == {
        "event": "add_to_cart::Home", "eventName": "add_to_cart", "categoryPath": "Home", "successCount": 2,
        "failureCount": 0, "oddsRatio": 6.0, "correlationType": "success",
    }  # fmt: skip
    assert body["negative"][0]["correlationType"] == "failure"
    limited = correlations(engine, DAY, limit=1)
    assert [r.event for r in limited.positive] == ["add_to_cart"]
    assert [r.event for r in limited.negative] == ["search_query"]


def test_an_empty_range(lake):
    ingest, engine = lake
    people(ingest)
    later = CorrelationRange(SITE, datetime(2024, 3, 5, tzinfo=UTC), datetime(2024, 3, 6, tzinfo=UTC))
    body = correlations(engine, later, limit=10).model_dump(by_alias=True, mode="json")
    assert body["totals"] == {"people": 0, "converted": 0, "notConverted": 0, "conversionRate": 0.0}
    assert (body["skewed"], body["positive"], body["negative"]) == (False, [], [])


def test_skewed_when_almost_everyone_converts(lake):
    ingest, engine = lake
    journeys_for(ingest, {
        **{f"b{i}": [ev("page_view", "10:00:00"), {"order": f"o{i}", "at": at("10:01:00")}] for i in range(10)},
        "n": [ev("page_view", "10:00:00")],
    })  # fmt: skip
    body = correlations(engine, DAY, limit=10)
    assert (body.totals.converted, body.totals.people, body.skewed) == (10, 11, True)
