"""Properties: the attribution reports (revenue per campaign, widget or recommendation; touchpoint
counts; the recommendations breakdown) over random shops equal a plain-Python reading of the rules in
docs/decisions.md and the routes' descriptions.

The shops are those of test_revenue_property (its strategies, `build_shop` and the models'
reference), with more on top: touchpoints a second either side of whole days (so just outside the
lookback window, exactly on its edge and at the conversion instant all happen), visitors linked to a
user before, between or after their events (the first link wins), purchase events naming a sale of
another day, a refund or no order at all, one entity id under two entity types, an entity type in
another case, a blank entity id, data on both sides of the range, and a site time zone.

The rules, as read here:
- Touchpoints: impression and click events of a campaign, widget or recommendation (the type in any
  case) with an entity id, by the same person, strictly before the conversion, at most lookbackDays
  earlier; credit order is time, then event id.
- Conversions: sales (not refunds) timed in the range, and purchase events in it that name no sale
  of the site (of any date): one naming a sale is that sale (counted at the sale's time, once).
- An entity's figures: impressions, clicks and people (who saw or clicked it) in the range; CTR =
  clicks / impressions (null without impressions); assisted conversions = conversions with one of
  its touchpoints; per model the summed credit of its touchpoints, and per currency of the orders it
  assisted the revenue (each touchpoint's credit × total kept at 6 decimals, the sum rounded to the
  currency's minor units) and the credited orders.
- The breakdown: every recommendation seen or clicked in the range or assisting a conversion in it;
  most clicked first, then most seen, then by id; the top level sums every row.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from queries.attribution import entity_revenue, recommendations_breakdown, touchpoint_counts
from queries.money import format_amount
from queries.revenue import ReportRange
from tests.queries.helpers import SITE
from tests.queries.test_revenue_property import (
    CLICK_NAMES,
    END,
    IMPRESSION_NAMES,
    MODELS,
    NAMES,
    ORDER_DAYS,
    PEOPLE,
    START,
    build_shop,
    examples,
    open_lake,
    order_strategy,
    reference_credits,
    touchpoints_before,
)

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

DAY = 86_400
KINDS = ("campaign", "widget", "recommendation")
# X1 is both a campaign and a widget; R2 also comes as "Recommendation"; P9 is no entity type of
# attribution, and a blank entity id is no entity.
ENTITIES = [
    ("campaign", "C1"),
    ("campaign", "C2"),
    ("campaign", "X1"),
    ("widget", "X1"),
    ("widget", "W1"),
    ("recommendation", "R1"),
    ("recommendation", "R2"),
    ("Recommendation", "R2"),
    ("product", "P9"),
    ("campaign", ""),
]
IDS = ("C1", "C2", "X1", "W1", "R1", "R2", "nope")
ZONES = ("UTC", "Asia/Kolkata", "America/New_York")  # +05:30; New York changes to summer time 10 March

# Whole days from 6 February to 5 April, a second either side now and then (ORIGIN is 1 February).
touch_seconds = st.tuples(st.integers(5, 64), st.sampled_from([0, 0, 0, -1, 1])).map(
    lambda d: d[0] * DAY + d[1]
)
touch_strategy = st.tuples(
    st.sampled_from(PEOPLE), touch_seconds, st.sampled_from(NAMES), st.sampled_from(ENTITIES)
)
loose_strategy = st.tuples(
    st.sampled_from(PEOPLE), ORDER_DAYS, st.sampled_from([None, None, "o0", "o1", "o2", "o3", "nope"])
)
# Before everything (1 Feb), mid-range (12 Mar), after everything (11 Apr).
link_strategy = st.tuples(
    st.sampled_from(PEOPLE), st.sampled_from(["u0", "u1"]), st.sampled_from([0, 40 * DAY, 70 * DAY])
)


def day(n: int, second: int = 0) -> int:
    """Seconds after 1 February 2024 (day 29 is 1 March, day 60 is 1 April)."""
    return n * DAY + second


# A hand-made shop tried first, UTC, lookback 7 days:
# - v1 is u0 from the start (a later link to u1 does not count); v0 becomes u0 on 11 April, after all
#   its events; v2 stays itself.
# - o0 (u0, 12 Mar, EUR 100.00, also reported by a purchase event): C1 impression 7 days before (on
#   the window's edge: counts), C1 click a second earlier (outside), X1 widget impression and X1
#   campaign click at one instant (event id order), an R2 impression at o0's instant (not before it).
# - o1 (v2, 17 Mar, JPY 1001): W1 impression and R2 click (sent as "Recommendation") at one instant.
# - o2: a refund (u0, 22 Mar, EUR -20.00) after a C1 click: no conversion.
# - o3 (u0, 3 Apr, USD 50.00): after the range, like its C1 impression of 2 Apr.
# - o4 (v2, 2 Mar, KWD 1.500): an R1 impression on 28 Feb, before the range but in the window, then
#   an X1 widget impression on 1 Mar: R1 is in the breakdown with no count in the range and, by last
#   touch, no credit, but an assisted conversion.
# - purchases: v2's on 7 Mar names no order (W1 click the day before); u0's on 25 Mar names the refund
#   o2 (no sale: a conversion without money; C1 impression the day before); u0's on 13 Mar names o3,
#   a sale of April, so it is that sale and no conversion of the range (C2 impression before it).
# - C2 is also seen by v2 on 27 Mar and never converts; P9 and a blank campaign id are no entities.
RICH = {
    "touches": [
        ("v0", day(33), "impression", ("campaign", "C1")),
        ("v0", day(33, -1), "click", ("campaign", "C1")),
        ("v1", day(38), "widget_impression", ("widget", "X1")),
        ("v1", day(38), "click", ("campaign", "X1")),
        ("v1", day(40), "product_impression", ("recommendation", "R2")),
        ("v2", day(44), "widget_view", ("widget", "W1")),
        ("v2", day(44), "product_click", ("Recommendation", "R2")),
        ("v1", day(49), "click", ("campaign", "C1")),
        ("v0", day(61), "impression", ("campaign", "C1")),
        ("v2", day(27), "view", ("recommendation", "R1")),
        ("v2", day(29), "widget_impression", ("widget", "X1")),
        ("v2", day(34), "click", ("widget", "W1")),
        ("v0", day(52), "impression", ("campaign", "C1")),
        ("v0", day(41, -5), "impression", ("campaign", "C2")),
        ("v2", day(55), "impression", ("campaign", "C2")),
        ("v2", day(55), "product_click", ("product", "P9")),
        ("v2", day(44), "click", ("campaign", "")),
    ],
    "orders": [
        ("v1", day(40), ("EUR", Decimal("100.00")), False, True),
        ("v2", day(45), ("JPY", Decimal("1001")), False, False),
        ("v1", day(50), ("EUR", Decimal("20.00")), True, False),
        ("v0", day(62), ("USD", Decimal("50.00")), False, False),
        ("v2", day(30), ("KWD", Decimal("1.500")), False, False),
    ],
    "loose": [("v2", day(35), None), ("v0", day(53), "o2"), ("v0", day(41), "o3")],
    "links": [("v1", "u0", 0), ("v1", "u1", day(71)), ("v0", "u0", day(70))],
    "lookback_days": 7,
    "zone": "UTC",
}
SHOPS = {
    "touches": st.lists(touch_strategy, min_size=10, max_size=35),
    "orders": st.lists(order_strategy, min_size=2, max_size=8),
    "loose": st.lists(loose_strategy, max_size=4),
    "links": st.lists(link_strategy, max_size=3),
    "lookback_days": st.sampled_from([1, 2, 7, 30]),
    "zone": st.sampled_from(ZONES),
}


# --- the reference ---------------------------------------------------------------------------------


def range_of(zone: str) -> tuple[datetime, datetime]:
    """March 2024 in the site's time zone: [1 March 00:00, 1 April 00:00) local."""
    return datetime(2024, 3, 1, tzinfo=ZoneInfo(zone)), datetime(2024, 4, 1, tzinfo=ZoneInfo(zone))


def conversions(shop: dict, start: datetime, end: datetime) -> list[dict]:
    """Sales timed in the range, and the range's purchase events naming no sale (of any date)."""
    sales = {o["order_id"] for o in shop["orders"] if not o["refund"]}
    return [
        {"person": o["person"], "at": o["at"], "currency": o["currency"], "total": o["total"]}
        for o in shop["orders"] if not o["refund"] and start <= o["at"] < end
    ] + [
        {"person": p["person"], "at": p["at"], "currency": None, "total": None}
        for p in shop["purchases"] if start <= p["at"] < end and p["order_ref"] not in sales
    ]  # fmt: skip


def kept_share(credit: float, total: Decimal) -> Decimal:
    return (Decimal(repr(credit)) * total).quantize(Decimal("0.000001"))


def reference_entities(shop: dict, zone: str, lookback_days: int) -> dict[tuple[str, str], dict]:
    """Per (entity type, entity id): counts in the range, assisted conversions and, per model, the
    credited conversions and, per currency, [revenue, credited orders, shares summed]."""
    start, end = range_of(zone)
    out: dict[tuple[str, str], dict] = defaultdict(
        lambda: {"impressions": 0, "clicks": 0, "people": set(), "assisted": 0,
                 "models": {m: {"conversions": 0.0, "currencies": {}} for m in MODELS}}
    )  # fmt: skip
    for t in shop["touches"]:
        if t["touch"] and start <= t["at"] < end:
            entity = out[t["entity_type"], t["entity_id"]]
            entity["impressions"] += t["name"] in IMPRESSION_NAMES
            entity["clicks"] += t["name"] in CLICK_NAMES
            entity["people"].add(t["person"])
    for conversion in conversions(shop, start, end):
        touches = touchpoints_before(conversion, shop["touches"], lookback_days)
        if not touches:
            continue
        credits = reference_credits([(conversion["at"] - t["at"]).total_seconds() / DAY for t in touches])
        mine: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, t in enumerate(touches):
            mine[t["entity_type"], t["entity_id"]].append(i)
        for key, places in mine.items():
            entity = out[key]
            entity["assisted"] += 1
            for model in MODELS:
                credit = sum(credits[model][i] for i in places)
                entity["models"][model]["conversions"] += credit
                if conversion["currency"] is not None:
                    slot = entity["models"][model]["currencies"].setdefault(
                        conversion["currency"], [Decimal(0), 0.0, 0]
                    )
                    slot[0] += sum(kept_share(credits[model][i], conversion["total"]) for i in places)
                    slot[1] += credit
                    slot[2] += len(places)
    return out


def ctr(clicks: int, impressions: int) -> float | None:
    return float(round(Fraction(clicks, impressions), 6)) if impressions else None


def money_matches(got: str, exact: Decimal, currency: str, shares: int) -> bool:
    """`got` is `exact` in the currency's minor units, give or take what float credits move the
    6-decimal shares (a millionth each) across a rounding edge."""
    slack = Decimal("0.000001") * (shares + 1)
    return got in {format_amount(exact - slack, currency), format_amount(exact + slack, currency)}


def close(got: float, want: float) -> bool:
    """A summed credit rounded to 6 decimals against the unrounded reference."""
    return math.isclose(got, want, abs_tol=1.000001e-6)


def check_model(credited: float, by_currency, card, want: dict, site_currency: str) -> None:
    """One model's credited conversions, rows per currency and card against the reference's sums."""
    assert close(credited, want["conversions"]), (credited, want["conversions"])
    rows = sorted(want["currencies"].items())
    assert [r.currency for r in by_currency] == [c for c, _ in rows]
    for r, (currency, (revenue, orders, shares)) in zip(by_currency, rows, strict=True):
        assert money_matches(r.revenue, revenue, currency, shares), (currency, r.revenue, revenue)
        assert close(r.orders, orders), (currency, r.orders, orders)
    if not rows:
        assert (card.amount, card.currency, card.mixed) == (format_amount(0, site_currency), site_currency, False)  # fmt: skip
    elif len(rows) == 1:
        ((currency, (revenue, _, shares)),) = rows
        assert (card.currency, card.mixed) == (currency, False)
        assert money_matches(card.amount, revenue, currency, shares)
    else:
        assert (card.amount, card.currency, card.mixed) == (None, None, True)


def lake_of(tmp_path_factory, touches, orders, loose, links):
    shop = build_shop(touches, orders, loose, links=links)
    return shop, *open_lake(tmp_path_factory, shop)


# --- the properties --------------------------------------------------------------------------------

# Every entity route and filter, on the hand-made shop; a few on each random one (each report is a
# query or two: the file keeps under ~40 s).
TARGETS = [(kind, entity_id) for kind in KINDS for entity_id in IDS]
FILTERS = [(kind, entity_id) for kind in (None, *KINDS) for entity_id in (None, *IDS)]
PAGES = [(50, 0), (50, 0), (1, 1), (2, 0)]


@examples(20)
@example(**RICH, targets=TARGETS)
@given(**SHOPS, targets=st.lists(st.sampled_from(TARGETS), min_size=3, max_size=3, unique=True))
def test_entity_revenue_matches_the_reference(
    tmp_path_factory, touches, orders, loose, links, lookback_days, zone, targets
):
    shop, ingest, engine = lake_of(tmp_path_factory, touches, orders, loose, links)
    site_currency = "JPY" if zone == "Asia/Kolkata" else "EUR"
    try:
        report = ReportRange(SITE, START, END, zone)
        got = {
            (kind, entity_id): entity_revenue(engine, report, entity_type=kind, entity_id=entity_id,
                                              site_currency=site_currency, lookback_days=lookback_days)
            for kind, entity_id in targets
        }  # fmt: skip
    finally:
        engine.close()
        ingest.stop()
    expected = reference_entities(shop, zone, lookback_days)
    for (kind, entity_id), body in got.items():
        want = expected[kind, entity_id]  # an entity the shop never shows: zeros
        assert (body.entity_type, body.entity_id, body.start_date, body.end_date, body.timezone) == (
            kind, entity_id, START, END, zone
        )  # fmt: skip
        assert (body.lookback_days, body.half_life_days) == (lookback_days, 7.0)
        assert (body.impressions, body.clicks, body.people) == (
            want["impressions"], want["clicks"], len(want["people"])
        ), (kind, entity_id)  # fmt: skip
        assert body.ctr == ctr(want["clicks"], want["impressions"])
        assert body.assisted_conversions == want["assisted"], (kind, entity_id)
        assert [m.model for m in body.models] == list(MODELS)
        for m in body.models:
            check_model(m.conversions, m.revenue_by_currency, m.total_revenue, want["models"][m.model], site_currency)  # fmt: skip


@examples(20)
@example(**RICH, filters=FILTERS)
@given(**SHOPS, filters=st.lists(st.sampled_from(FILTERS), min_size=6, max_size=6, unique=True))
def test_touchpoint_counts_match_the_reference(
    tmp_path_factory, touches, orders, loose, links, lookback_days, zone, filters
):
    shop, ingest, engine = lake_of(tmp_path_factory, touches, orders, loose, links)
    try:
        report = ReportRange(SITE, START, END, zone)
        got = {(kind, entity_id): touchpoint_counts(engine, report, entity_type=kind, entity_id=entity_id)
               for kind, entity_id in {(None, None), *filters}}  # fmt: skip
    finally:
        engine.close()
        ingest.stop()
    counted = [
        {"entity_type": kind, "entity_id": entity_id, "impressions": e["impressions"], "clicks": e["clicks"],
         "people": len(e["people"])}
        for (kind, entity_id), e in sorted(reference_entities(shop, zone, lookback_days).items())
        if e["impressions"] or e["clicks"]
    ]  # fmt: skip
    for (kind, entity_id), rows in got.items():
        want = [
            r for r in counted if kind in (None, r["entity_type"]) and entity_id in (None, r["entity_id"])
        ]
        assert rows == want, (kind, entity_id)


@examples(20)
@example(**RICH, calls=[(model, page) for model in MODELS for page in PAGES[1:]])
@given(
    **SHOPS,
    calls=st.lists(st.tuples(st.sampled_from(MODELS), st.sampled_from(PAGES)), min_size=2, max_size=2),
)
def test_recommendations_breakdown_matches_the_reference(
    tmp_path_factory, touches, orders, loose, links, lookback_days, zone, calls
):
    shop, ingest, engine = lake_of(tmp_path_factory, touches, orders, loose, links)
    try:
        report = ReportRange(SITE, START, END, zone)
        got = [
            recommendations_breakdown(engine, report, site_currency="EUR", model=model,
                                      lookback_days=lookback_days, limit=limit, offset=offset)
            for model, (limit, offset) in calls
        ]  # fmt: skip
    finally:
        engine.close()
        ingest.stop()
    expected = {
        entity_id: e for (kind, entity_id), e in reference_entities(shop, zone, lookback_days).items()
        if kind == "recommendation" and (e["impressions"] or e["clicks"] or e["assisted"])
    }  # fmt: skip
    ranked = sorted(expected, key=lambda i: (-expected[i]["clicks"], -expected[i]["impressions"], i))
    impressions = sum(e["impressions"] for e in expected.values())
    clicks = sum(e["clicks"] for e in expected.values())
    for (model, (limit, offset)), body in zip(calls, got, strict=True):
        assert (body.model, body.lookback_days, body.limit, body.offset) == (
            model,
            lookback_days,
            limit,
            offset,
        )
        assert (body.total, body.impressions, body.clicks) == (len(expected), impressions, clicks)
        assert body.ctr == ctr(clicks, impressions)
        assert [r.recommendation_id for r in body.recommendations] == ranked[offset : offset + limit]
        for row in body.recommendations:
            want = expected[row.recommendation_id]
            assert (row.impressions, row.clicks, row.people, row.assisted_conversions) == (
                want["impressions"], want["clicks"], len(want["people"]), want["assisted"]
            )  # fmt: skip
            assert row.ctr == ctr(want["clicks"], want["impressions"])
            check_model(row.attributed_conversions, row.revenue_by_currency, row.total_revenue, want["models"][model], "EUR")  # fmt: skip
        # The top level: every row summed, per currency.
        overall = {"conversions": 0.0, "currencies": {}}
        for e in expected.values():
            overall["conversions"] += e["models"][model]["conversions"]
            for currency, parts in e["models"][model]["currencies"].items():
                slot = overall["currencies"].setdefault(currency, [Decimal(0), 0.0, 0])
                for i, part in enumerate(parts):
                    slot[i] += part
        check_model(body.attributed_conversions, body.revenue_by_currency, body.total_revenue, overall, "EUR")
