"""Properties: per-currency revenue and attribution over random shops equal a plain-Python reading of
their definitions, and every conversion's credits sum to 1 in every model."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.attribution import attributed_rows, event_attribution, model_credits
from queries.money import format_amount
from queries.revenue import ReportRange, revenue_overview
from tests.queries.helpers import SITE, journeys_for
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

START, END = date(2024, 3, 1), date(2024, 3, 31)
RANGE_START = datetime(2024, 3, 1, tzinfo=UTC)
RANGE_END = datetime(2024, 4, 1, tzinfo=UTC)
ORIGIN = datetime(2024, 2, 1, tzinfo=UTC)  # random instants are whole days after this, so ties happen
TOUCH_DAYS = st.integers(10, 60).map(lambda n: n * 86_400)  # 11 February to 1 April
ORDER_DAYS = st.integers(26, 63).map(lambda n: n * 86_400)  # 27 February to 4 April
MODELS = ("first_touch", "last_touch", "linear", "time_decay", "position_based")
HALF_LIFE_DAYS = 7


def at(seconds: int) -> datetime:
    return ORIGIN + timedelta(seconds=seconds)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# --- the reference ---------------------------------------------------------------------------------


def reference_credits(ages_days: list[float]) -> dict[str, list[float]]:
    """The models as the OpenAPI description states them, for touchpoints in credit order."""
    n = len(ages_days)
    weights = [2 ** (-age / HALF_LIFE_DAYS) for age in ages_days]
    if n == 1:
        position = [1.0]
    elif n == 2:
        position = [0.5, 0.5]
    else:
        position = [0.4 if i in (0, n - 1) else 0.2 / (n - 2) for i in range(n)]
    return {
        "first_touch": [1.0 if i == 0 else 0.0 for i in range(n)],
        "last_touch": [1.0 if i == n - 1 else 0.0 for i in range(n)],
        "linear": [1 / n] * n,
        "time_decay": [w / sum(weights) for w in weights],
        "position_based": position,
    }


def reference_revenue(orders: list[dict], start: datetime, end: datetime) -> dict[str, dict]:
    """Per currency, of the orders timed in [start, end): sales (revenue, orders) and refunds (count,
    absolute amount)."""
    expected: dict[str, dict] = {}
    for o in orders:
        if not start <= o["at"] < end:
            continue
        row = expected.setdefault(
            o["currency"], {"revenue": Decimal(0), "orders": 0, "refunds": 0, "refunded": Decimal(0)}
        )
        if o["refund"]:
            row["refunds"] += 1
            row["refunded"] += abs(o["total"])
        else:
            row["orders"] += 1
            row["revenue"] += o["total"]
    return expected


def touchpoints_before(conversion: dict, touches: list[dict], lookback_days: int) -> list[dict]:
    earliest = conversion["at"] - timedelta(days=lookback_days)
    found = [
        t for t in touches
        if t["person"] == conversion["person"] and earliest <= t["at"] < conversion["at"] and t["touch"]
    ]  # fmt: skip
    return sorted(found, key=lambda t: (t["at"], t["event_id"]))


def reference_attribution(shop: dict, lookback_days: int) -> dict[tuple, dict[str, float | Decimal]]:
    """Per (entity type, entity id, currency): credited conversions and revenue per model."""
    sales = {o["order_id"] for o in shop["orders"] if not o["refund"]}
    conversions = [
        {"person": o["person"], "at": o["at"], "currency": o["currency"], "total": o["total"]}
        for o in shop["orders"] if not o["refund"] and RANGE_START <= o["at"] < RANGE_END
    ] + [
        {"person": p["person"], "at": p["at"], "currency": None, "total": None}
        for p in shop["purchases"] if p["order_ref"] not in sales and RANGE_START <= p["at"] < RANGE_END
    ]  # fmt: skip
    out: dict[tuple, dict] = defaultdict(lambda: defaultdict(float))
    for conversion in conversions:
        touches = touchpoints_before(conversion, shop["touches"], lookback_days)
        if not touches:
            continue
        credits = reference_credits([(conversion["at"] - t["at"]) / timedelta(days=1) for t in touches])
        for model in MODELS:
            assert math.isclose(sum(credits[model]), 1.0, rel_tol=1e-12)
        for i, t in enumerate(touches):
            slot = out[t["entity_type"], t["entity_id"], conversion["currency"]]
            for model in MODELS:
                slot[f"{model}_conversions"] += credits[model][i]
                if conversion["total"] is not None:
                    share = Decimal(repr(credits[model][i])) * conversion["total"]
                    slot[f"{model}_revenue"] = slot.get(f"{model}_revenue", Decimal(0)) + share
    return out


# --- random shops ----------------------------------------------------------------------------------

PEOPLE = [f"v{i}" for i in range(3)]
ENTITIES = [
    ("campaign", "C1"),
    ("campaign", "C2"),
    ("widget", "W1"),
    ("recommendation", "R1"),
    ("product", "P9"),
]
NAMES = [
    "impression",
    "click",
    "view",
    "widget_impression",
    "widget_view",
    "product_impression",
    "product_click",
    "page_view",
    "hover",
]
# Touchpoints as docs/decisions.md names them: impressions and clicks of campaigns, widgets and
# recommendations (the entity type in any case) with an entity id.
IMPRESSION_NAMES = {"impression", "view", "widget_impression", "widget_view", "product_impression"}
CLICK_NAMES = {"click", "product_click"}
TOUCH_NAMES = IMPRESSION_NAMES | CLICK_NAMES
ENTITY_TYPES = ("campaign", "widget", "recommendation")

touch_strategy = st.tuples(
    st.sampled_from(PEOPLE), TOUCH_DAYS, st.sampled_from(NAMES), st.sampled_from(ENTITIES)
)
money_strategy = st.sampled_from(["EUR", "USD", "JPY", "KWD"]).flatmap(
    lambda c: st.tuples(
        st.just(c),
        st.integers(0, 10**7).map(lambda m: Decimal(m).scaleb(-{"JPY": 0, "KWD": 3}.get(c, 2))),
    )
)
order_strategy = st.tuples(st.sampled_from(PEOPLE), ORDER_DAYS, money_strategy, st.booleans(), st.booleans())


def build_shop(touches, orders, loose_purchases, *, linked: bool = False, links=()) -> dict:
    """The lake's steps per visitor and the same facts per person. ``linked``: v0 and v1 identify as
    user u0 (one person on two devices). ``links``: more ``(visitor, user, seconds)`` identify steps,
    at any time (after the visitor's events too); a visitor is the user of its earliest link, of two
    at one instant the smaller user id. ``loose_purchases``: ``(person, seconds)`` purchase events
    naming no order, or ``(person, seconds, order_ref)`` naming one (any order id, refunds and ids
    of no order included)."""
    shop = {"touches": [], "orders": [], "purchases": []}
    steps: dict[str, list[dict]] = defaultdict(list)
    links = [*(((v, "u0", 0) for v in ("v0", "v1")) if linked else ()), *links]
    for visitor, user, seconds in links:
        steps[visitor].append({"event": "identify", "at": iso(at(seconds)), "userId": user})
    for n, (person, seconds, name, (entity_type, entity_id)) in enumerate(touches):
        event_id = f"t{n}"
        extra = {"metadata": {"productItemCode": "P9"}} if name == "product_click" else {}
        steps[person].append({"event": name, "at": iso(at(seconds)), "eventId": event_id, "entityType": entity_type,
                              "entityId": entity_id, **extra})  # fmt: skip
        kind = entity_type.lower()
        shop["touches"].append({"person": person, "at": at(seconds), "event_id": event_id, "name": name,
                                "entity_type": kind, "entity_id": entity_id,
                                "touch": name in TOUCH_NAMES and kind in ENTITY_TYPES and entity_id != ""})  # fmt: skip
    for n, (person, seconds, (currency, total), refund, reported) in enumerate(orders):
        order_id = f"o{n}"
        amount = -total if refund else total
        steps[person].append({"order": order_id, "at": iso(at(seconds)), "currency": currency, "total": str(amount),
                              "isRefund": refund})  # fmt: skip
        shop["orders"].append({"order_id": order_id, "person": person, "at": at(seconds), "currency": currency,
                               "total": amount, "refund": refund})  # fmt: skip
        if reported and not refund:  # the storefront also sends a purchase event for it
            steps[person].append({"event": "purchase", "at": iso(at(seconds)), "eventId": f"p-{order_id}",
                                  "metadata": {"orderId": order_id}})  # fmt: skip
            shop["purchases"].append({"person": person, "at": at(seconds), "order_ref": order_id,
                                      "event_id": f"p-{order_id}"})  # fmt: skip
    for n, (person, seconds, *ref) in enumerate(loose_purchases):
        order_ref = ref[0] if ref else None
        metadata = {"metadata": {"orderId": order_ref}} if order_ref is not None else {}
        steps[person].append(
            {"event": "purchase", "at": iso(at(seconds)), "eventId": f"loose{n}", **metadata}
        )
        shop["purchases"].append(
            {"person": person, "at": at(seconds), "order_ref": order_ref, "event_id": f"loose{n}"}
        )
    shop["steps"] = dict(steps)
    first_link = {}
    for visitor, user, seconds in links:
        first_link[visitor] = min(first_link.get(visitor, (seconds, user)), (seconds, user))
    shop["person_of"] = {visitor: user for visitor, (_, user) in first_link.items()}
    for fact in shop["touches"] + shop["orders"] + shop["purchases"]:
        fact["person"] = shop["person_of"].get(fact["person"], fact["person"])
    return shop


def open_lake(tmp_path_factory, shop: dict) -> tuple[Ingest, Engine]:
    ingest = Ingest(data_dir=tmp_path_factory.mktemp("revenue") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    if shop["steps"]:
        journeys_for(ingest, shop["steps"])
    return ingest, engine


def examples(count: int):
    return settings(
        max_examples=count, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )


@examples(25)
@given(orders=st.lists(order_strategy, max_size=12))
def test_revenue_per_currency_matches_the_reference(tmp_path_factory, orders):
    shop = build_shop([], orders, [])
    ingest, engine = open_lake(tmp_path_factory, shop)
    try:
        body = revenue_overview(engine, ReportRange(SITE, START, END), site_currency="EUR")
    finally:
        engine.close()
        ingest.stop()
    expected = reference_revenue(shop["orders"], RANGE_START, RANGE_END)
    assert [r.model_dump(by_alias=True) for r in body.revenue_by_currency] == [
        {
            "currency": c, "revenue": format_amount(r["revenue"], c), "orders": r["orders"],
            "avgOrderValue": format_amount(r["revenue"] / r["orders"] if r["orders"] else 0, c),
            "refunds": r["refunds"], "refunded": format_amount(r["refunded"], c),
            "netRevenue": format_amount(r["revenue"] - r["refunded"], c),
        }
        for c, r in sorted(expected.items())
    ]  # fmt: skip
    assert body.total_revenue.mixed == (len(expected) > 1)
    if len(expected) == 1:
        ((currency, row),) = expected.items()
        assert body.total_revenue.amount == format_amount(row["revenue"], currency)
    daily_sum: dict[str, Decimal] = defaultdict(Decimal)
    for day in body.daily:
        for r in day.revenue_by_currency:
            daily_sum[r.currency] += Decimal(r.revenue)
    assert {c: format_amount(v, c) for c, v in daily_sum.items()} == {
        c: format_amount(r["revenue"], c) for c, r in expected.items() if r["orders"]
    }


@examples(15)
@given(
    touches=st.lists(touch_strategy, min_size=15, max_size=40),
    orders=st.lists(order_strategy, min_size=3, max_size=8),
    loose=st.lists(st.tuples(st.sampled_from(PEOPLE), ORDER_DAYS), max_size=3),
    lookback_days=st.sampled_from([2, 7, 30, 30]),
    linked=st.booleans(),
)
def test_attribution_matches_the_reference(tmp_path_factory, touches, orders, loose, lookback_days, linked):
    shop = build_shop(touches, orders, loose, linked=linked)
    ingest, engine = open_lake(tmp_path_factory, shop)
    try:
        rows = attributed_rows(engine, ReportRange(SITE, START, END), entity_type=None, entity_id=None,
                               lookback_days=lookback_days)  # fmt: skip
        single = {
            o["order_id"]: event_attribution(engine, site_ids=[SITE], event_id=o["order_id"], lookback_days=lookback_days)
            for o in shop["orders"] if not o["refund"]
        }  # fmt: skip
    finally:
        engine.close()
        ingest.stop()

    expected = reference_attribution(shop, lookback_days)
    assert {(r["entity_type"], r["entity_id"], r["currency"]) for r in rows} == set(expected)
    for r in rows:
        want = expected[r["entity_type"], r["entity_id"], r["currency"]]
        for model in MODELS:
            assert math.isclose(r[f"{model}_conversions"], want[f"{model}_conversions"], abs_tol=1e-9)
            if r["currency"] is not None:
                # Each touchpoint's share is kept at 6 decimals before it is summed.
                assert abs(r[f"{model}_revenue"] - want[f"{model}_revenue"]) <= Decimal("0.000001") * 30

    # One conversion at a time: the same touchpoints, credits that sum to 1, the reference's values.
    for o in shop["orders"]:
        if o["refund"]:
            continue
        found = single[o["order_id"]]
        touches_before = touchpoints_before(
            {"person": o["person"], "at": o["at"]}, shop["touches"], lookback_days
        )
        assert [t.event_id for t in found.touchpoints] == [t["event_id"] for t in touches_before]
        assert found.total_touchpoints == len(touches_before)
        if not touches_before:
            continue
        want = reference_credits([(o["at"] - t["at"]) / timedelta(days=1) for t in touches_before])
        exact = model_credits([t["at"] for t in touches_before], o["at"])
        for model in MODELS:
            assert math.isclose(sum(exact[model]), 1.0, rel_tol=1e-12)
            assert all(
                math.isclose(a, b, abs_tol=1e-12) for a, b in zip(exact[model], want[model], strict=True)
            )
            assert [t.credits[model] for t in found.touchpoints] == [round(c, 6) for c in want[model]]
