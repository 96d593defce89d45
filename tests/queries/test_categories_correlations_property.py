"""Properties: category conversion revenue per currency and correlation odds ratios equal plain-Python
readings of their definitions on random orders and events."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_EVEN, Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.categories import CategoryQuery, category_conversion
from queries.correlations import CorrelationRange, correlations
from tests.queries.helpers import SITE, journeys_for
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

CURRENCIES = {"EUR": 2, "USD": 2, "JPY": 0, "KWD": 3}
PATHS = [None, "Home", "Home > Kitchen", "Home > Kitchen > Mugs", "Garden", "Homeware"]
SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def fresh_lake(tmp_path_factory, name: str) -> tuple[Ingest, Engine]:
    ingest = Ingest(data_dir=tmp_path_factory.mktemp(name) / "data", flush_interval_seconds=3600)
    return ingest, Engine(ingest.lake)


# --- category conversion revenue ------------------------------------------------------------------------

line = st.tuples(
    st.sampled_from(PATHS),
    st.integers(0, 3),  # a line of quantity 0 bought nothing
    st.integers(1, 500_000),  # price in thousandths
)
order = st.tuples(st.sampled_from(sorted(CURRENCIES)), st.lists(line, min_size=1, max_size=3), st.booleans())


def in_subtree(path: str | None, selected: str | None) -> bool:
    path = path or "unknown"
    return selected is None or path == selected or path.startswith(selected + " > ")


def price_of(thousandths: int, currency: str) -> Decimal:
    """A price the currency can hold: thousandths cut to its minor units."""
    exponent = CURRENCIES[currency]
    return (Decimal(thousandths) / 1000).quantize(Decimal(1).scaleb(-exponent), rounding="ROUND_DOWN")


def shown(amount: Decimal, currency: str) -> str:
    return str(amount.quantize(Decimal(1).scaleb(-CURRENCIES[currency]), rounding=ROUND_HALF_EVEN))


def revenue_reference(orders: list, selected: str | None) -> list[dict]:
    revenue: dict[str, Decimal] = defaultdict(Decimal)
    counted: dict[str, set[int]] = defaultdict(set)
    for index, (currency, lines, refund) in enumerate(orders):
        if refund:
            continue
        for path, quantity, thousandths in lines:
            if quantity > 0 and in_subtree(path, selected):
                revenue[currency] += price_of(thousandths, currency) * quantity
                counted[currency].add(index)
    return [
        {"currency": c, "revenue": shown(revenue[c], c), "orders": len(counted[c]),
         "avgOrderValue": shown(revenue[c] / len(counted[c]), c)}
        for c in sorted(revenue)
    ]  # fmt: skip


@SETTINGS
@given(
    orders=st.lists(order, max_size=8), selected=st.sampled_from([None, "Home", "Home > Kitchen", "unknown"])
)
def test_category_revenue_per_currency_matches_the_reference(tmp_path_factory, orders, selected):
    ingest, engine = fresh_lake(tmp_path_factory, "categories")
    try:
        steps = []
        for index, (currency, lines, refund) in enumerate(orders):
            items = [{"productItemCode": f"P{i}", "quantity": -q if refund else q,
                      "price": str(price_of(t, currency)), **({"categoryPath": p} if p else {})}
                     for i, (p, q, t) in enumerate(lines)]  # fmt: skip
            steps.append({"order": f"o{index}", "at": f"2024-03-01T10:{index:02d}:00Z", "currency": currency,
                          "total": "-1" if refund else "1", "items": items, "isRefund": refund})  # fmt: skip
        if steps:
            journeys_for(ingest, {"buyer": steps})
        query = CategoryQuery(site_id=SITE, start_date=date(2024, 3, 1), end_date=date(2024, 3, 1),
                              category_path=selected)  # fmt: skip
        metrics = category_conversion(engine, query).model_dump(by_alias=True, mode="json")["metrics"]
        expected = revenue_reference(orders, selected)
        assert metrics["revenueByCurrency"] == expected
        if len(expected) == 1:
            assert metrics["revenue"] == {"amount": expected[0]["revenue"], "currency": expected[0]["currency"],
                                          "mixed": False}  # fmt: skip
        else:
            assert metrics["revenue"] == {"amount": None, "currency": None, "mixed": len(expected) > 1}
    finally:
        engine.close()
        ingest.stop()


# --- correlation odds ratios ----------------------------------------------------------------------------

NAMES = ["page_view", "category_view", "add_to_cart", "search_query"]
action = st.tuples(st.integers(0, 59), st.sampled_from(NAMES), st.sampled_from(["Home", "Garden", None]))
person = st.tuples(
    st.lists(action, max_size=5),
    st.one_of(st.none(), st.tuples(st.integers(0, 59), st.sampled_from(["order", "purchase", "refund"]))),
)


def correlation_reference(people: dict[str, tuple]) -> tuple[int, int, dict[str, tuple[int, int, float]]]:
    converted_at: dict[str, int | None] = {}
    for name, (actions, conversion) in people.items():
        if not actions and (conversion is None or conversion[1] == "refund"):
            continue  # no event and no sale (a refund is none): not active in the range
        converted_at[name] = conversion[0] if conversion and conversion[1] != "refund" else None
    done: dict[str, set[str]] = defaultdict(set)
    for name, (actions, _) in people.items():
        for minute, event, category in actions:
            at = converted_at.get(name)
            if name not in converted_at or (at is not None and minute > at):
                continue
            path = category or ("unknown" if event == "category_view" else None)
            done[event].add(name)
            if path:
                done[f"{event}::{path}"].add(name)
    success_total = sum(1 for at in converted_at.values() if at is not None)
    failure_total = len(converted_at) - success_total
    out = {}
    for key, names in done.items():
        a = sum(1 for n in names if converted_at[n] is not None)
        b = len(names) - a
        c, d = success_total - a, failure_total - b
        out[key] = (a, b, round((a + 1) * (d + 1) / ((b + 1) * (c + 1)), 6))
    return success_total, failure_total, out


@SETTINGS
@given(people=st.dictionaries(st.sampled_from([f"v{i}" for i in range(6)]), person, max_size=6))
def test_correlations_match_the_reference(tmp_path_factory, people):
    ingest, engine = fresh_lake(tmp_path_factory, "correlations")
    try:
        journeys: dict[str, list[dict]] = {}
        for name, (actions, conversion) in people.items():
            steps = journeys.setdefault(name, [])
            for minute, event, category in actions:
                meta = {"categoryPath": category} if category else {}
                steps.append({"event": event, "at": f"2024-03-01T10:{minute:02d}:00Z", "metadata": meta})
            if conversion is not None:
                minute, kind = conversion
                moment = f"2024-03-01T10:{minute:02d}:30Z"
                if kind == "purchase":
                    steps.append({"event": "purchase", "at": moment})
                else:
                    steps.append({"order": f"o-{name}", "at": moment, "isRefund": kind == "refund",
                                  "total": "-10" if kind == "refund" else "10"})  # fmt: skip
        if any(journeys.values()):
            journeys_for(ingest, {k: v for k, v in journeys.items() if v})
        query = CorrelationRange(SITE, datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 3, 2, tzinfo=UTC))
        got = correlations(engine, query, limit=100)
        success_total, failure_total, expected = correlation_reference(people)
        assert (got.totals.converted, got.totals.not_converted) == (success_total, failure_total)
        rows = got.positive + got.negative
        assert {r.event: (r.success_count, r.failure_count, r.odds_ratio) for r in rows} == {
            k: v for k, v in expected.items() if v[2] != 1.0
        }
        assert [r.odds_ratio for r in got.positive] == sorted(
            (r.odds_ratio for r in got.positive), reverse=True
        )
        assert [r.odds_ratio for r in got.negative] == sorted(r.odds_ratio for r in got.negative)
    finally:
        engine.close()
        ingest.stop()
