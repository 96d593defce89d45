"""Properties: identified versus anonymous conversion, and the overview's daily series in a site time
zone, over random shops equal a plain-Python reading of the documented rules (docs/decisions.md:
"Identified people", "The overview's people", "Revenue overview"; the route descriptions)."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from fractions import Fraction
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from queries.money import format_amount
from queries.revenue import ReportRange, identity_conversion_metrics, revenue_overview
from tests.queries.helpers import SITE
from tests.queries.test_revenue_property import (
    PEOPLE,
    at,
    build_shop,
    examples,
    iso,
    money_strategy,
    open_lake,
    reference_revenue,
)

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

START, END = date(2024, 3, 1), date(2024, 3, 31)
DAY = 86_400
HOUR = 3_600
# Instants: whole days after 1 February (26 = 27 February .. 63 = 4 April) at a few times of day that
# are local midnights somewhere (UTC; Berlin 23:00/22:00; New York 05:00/04:00; Kolkata 18:30;
# Auckland 11:00), so sales and events land on the range's edges and on each other.
TIMES_OF_DAY = [0, 4 * HOUR, 5 * HOUR, 11 * HOUR, 18 * HOUR + 1_800, 22 * HOUR, 23 * HOUR]
INSTANTS = st.tuples(st.integers(26, 63), st.sampled_from(TIMES_OF_DAY)).map(lambda t: t[0] * DAY + t[1])


def local_bounds(first: date, last: date, zone: str) -> tuple[datetime, datetime]:
    """[first local midnight, the local midnight after the last day)."""
    tz = ZoneInfo(zone)
    return datetime.combine(first, time.min, tz), datetime.combine(last + timedelta(days=1), time.min, tz)


def card(by_currency: dict[str, Decimal], site_currency: str) -> dict:
    """A money card: one currency's amount, zero in the site's currency when empty, else mixed."""
    if not by_currency:
        return {"amount": format_amount(0, site_currency), "currency": site_currency, "mixed": False}
    if len(by_currency) == 1:
        ((currency, amount),) = by_currency.items()
        return {"amount": format_amount(amount, currency), "currency": currency, "mixed": False}
    return {"amount": None, "currency": None, "mixed": True}


# --- identified versus anonymous: the reference ----------------------------------------------------

VISITORS = ["v0", "v1", "v2", "v3"]
USERS = ["u0", "u1"]  # apart from visitor ids: a person is a user or a visitor, never both
OWN_USERS = [None, None, None, "u0", "u1", " "]  # " " is blank: no user


def identity_shop(events, links, orders) -> dict:
    """The lake's steps per visitor and every row as a plain fact. ``links``: identify events
    ``(visitor, user, seconds)`` at any time (before or after the visitor's other rows, outside the
    range too). ``events``: ``(visitor, seconds, name, user id or None, orderId a purchase names or
    None)``. ``orders``: ``(visitor, seconds, (currency, amount), refund, user id or None)``, ids o0, o1…"""
    steps: dict[str, list[dict]] = defaultdict(list)
    rows: list[dict] = []
    for visitor, user, seconds in links:
        steps[visitor].append({"event": "identify", "at": iso(at(seconds)), "userId": user})
        rows.append({"kind": "event", "visitor": visitor, "at": at(seconds), "user": user, "name": "identify",
                     "order_ref": None})  # fmt: skip
    for visitor, seconds, name, user, order_ref in events:
        order_ref = order_ref if name == "purchase" else None
        step = {"event": name, "at": iso(at(seconds))}
        if user is not None:
            step["userId"] = user
        if order_ref is not None:
            step["metadata"] = {"orderId": order_ref}
        steps[visitor].append(step)
        rows.append({"kind": "event", "visitor": visitor, "at": at(seconds), "user": user, "name": name,
                     "order_ref": order_ref})  # fmt: skip
    for n, (visitor, seconds, (currency, total), refund, user) in enumerate(orders):
        amount = -total if refund else total
        step = {"order": f"o{n}", "at": iso(at(seconds)), "currency": currency, "total": str(amount),
                "isRefund": refund}  # fmt: skip
        if user is not None:
            step["userId"] = user
        steps[visitor].append(step)
        rows.append({"kind": "order", "visitor": visitor, "at": at(seconds), "user": user, "order_id": f"o{n}",
                     "currency": currency, "total": amount, "refund": refund})  # fmt: skip
    return {"steps": dict(steps), "rows": rows}


def reference_identity(shop: dict, zone: str, site_currency: str) -> dict:
    """The route's body as docs/decisions.md and the route description state it."""
    start, end = local_bounds(START, END, zone)
    # A visitor is the user first seen with it (on any event or order, any time; of two at one instant
    # the smaller id); a blank user id is none. Never linked: the visitor itself, anonymous.
    first_seen: dict[str, tuple[datetime, str]] = {}
    for r in shop["rows"]:
        if r["user"] is not None and r["user"].strip():
            first_seen[r["visitor"]] = min(
                first_seen.get(r["visitor"], (r["at"], r["user"])), (r["at"], r["user"])
            )
    person_of = {visitor: user for visitor, (_, user) in first_seen.items()}
    identified_people = set(person_of.values())
    sales = {r["order_id"] for r in shop["rows"] if r["kind"] == "order" and not r["refund"]}

    # Active in the range: any event, or a sale (a refund is the shop's doing). A converter has a sale
    # in the range or a purchase event naming no sale (one naming a sale is that sale, the order's
    # person's: its sender is active, not a buyer).
    converted: dict[str, bool] = {}
    revenue = {True: defaultdict(lambda: {"revenue": Decimal(0), "orders": 0, "buyers": set()}),
               False: defaultdict(lambda: {"revenue": Decimal(0), "orders": 0, "buyers": set()})}  # fmt: skip
    for r in shop["rows"]:
        if not start <= r["at"] < end or (r["kind"] == "order" and r["refund"]):
            continue
        person = person_of.get(r["visitor"], r["visitor"])
        if r["kind"] == "order":
            buys = True
            row = revenue[person in identified_people][r["currency"]]
            row["revenue"] += r["total"]
            row["orders"] += 1
            row["buyers"].add(person)
        else:
            buys = r["name"] == "purchase" and r["order_ref"] not in sales
        converted[person] = converted.get(person, False) or buys

    def group(identified: bool) -> dict:
        people = [p for p in converted if (p in identified_people) == identified]
        converters = sum(converted[p] for p in people)
        rows = revenue[identified]
        return {
            "people": len(people),
            "converters": converters,
            "conversionRate": round(converters / len(people), 6) if people else 0.0,
            "orders": sum(r["orders"] for r in rows.values()),
            "revenueByCurrency": [
                {
                    "currency": c,
                    "revenue": format_amount(r["revenue"], c),
                    "orders": r["orders"],
                    "buyers": len(r["buyers"]),
                    "avgOrderValue": format_amount(r["revenue"] / r["orders"], c),
                    "revenuePerPerson": format_amount(r["revenue"] / len(people), c),
                }
                for c, r in sorted(rows.items())
            ],  # fmt: skip
            "totalRevenue": card({c: r["revenue"] for c, r in rows.items()}, site_currency),
        }

    identified, anonymous = group(True), group(False)
    total = identified["people"] + anonymous["people"]
    # identified rate / anonymous rate; null when the anonymous group has no converter, or when there
    # is no identified person (no rate to compare).
    ratio = None
    if identified["people"] and anonymous["converters"]:
        rates = Fraction(identified["converters"], identified["people"]) / Fraction(
            anonymous["converters"], anonymous["people"]
        )
        ratio = round(float(rates), 6)
    return {
        "siteId": SITE,
        "startDate": START.isoformat(),
        "endDate": END.isoformat(),
        "timezone": zone,
        "totalPeople": total,
        "identifiedShare": round(identified["people"] / total, 6) if total else 0.0,
        "identified": identified,
        "anonymous": anonymous,
        "conversionRateRatio": ratio,
        "mixedCurrency": len(set(revenue[True]) | set(revenue[False])) > 1,
    }


def d(day: int, hour: float = 0) -> int:
    """Seconds after 1 February of ``day`` March (0 = 29 February) at ``hour`` UTC."""
    return (28 + day) * DAY + int(hour * HOUR)


@examples(18)
@given(
    events=st.lists(
        st.tuples(
            st.sampled_from(VISITORS),
            INSTANTS,
            st.sampled_from(["page_view", "add_to_cart", "purchase"]),
            st.sampled_from(OWN_USERS),
            st.sampled_from([None, "o0", "o1", "o2", "o9"]),
        ),
        max_size=10,
    ),  # fmt: skip
    links=st.lists(
        st.tuples(
            st.sampled_from(VISITORS),
            st.sampled_from(USERS),
            st.tuples(st.integers(0, 75), st.sampled_from(TIMES_OF_DAY)).map(lambda t: t[0] * DAY + t[1]),
        ),
        max_size=4,
    ),  # fmt: skip
    orders=st.lists(
        st.tuples(
            st.sampled_from(VISITORS), INSTANTS, money_strategy, st.booleans(), st.sampled_from(OWN_USERS)
        ),
        max_size=6,
    ),  # fmt: skip
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]),
)
@example(
    # Berlin: March is 29 Feb 23:00 UTC .. 31 Mar 22:00 UTC (summer time from the 31st).
    events=[
        ("v0", d(2, 11), "page_view", None, None),
        ("v2", d(0, 23), "add_to_cart", None, None),  # 1 March 00:00 in Berlin: in the range
        ("v3", d(3), "page_view", " ", None),  # a blank user id: v3 stays anonymous
        ("v3", d(10, 22), "purchase", None, "o9"),  # names no order: a conversion without money
        ("v1", d(5, 4), "purchase", None, "o0"),  # a forwarded thank-you page: o0 is v3's sale
        ("v1", d(6, 5), "purchase", None, "o2"),  # names a refund, no sale: v1 converts (as u0)
        ("v3", d(32), "page_view", None, None),  # 1 April 02:00 in Berlin: outside
    ],
    links=[
        ("v0", "u0", d(-18)),  # linked before its events (11 February)
        ("v0", "u1", d(20)),  # a later link changes nothing: the first user counts
        ("v1", "u0", d(45)),  # linked after its events (15 April): two visitors of one user
        ("v2", "u1", d(12)),
        ("v2", "u0", d(12)),  # two users at one instant: the smaller id
    ],
    orders=[
        ("v3", d(5, 4), ("EUR", Decimal("10.00")), False, None),  # o0: v3's sale
        ("v0", d(20, 11), ("JPY", Decimal(1200)), False, None),  # o1
        ("v0", d(25, 5), ("EUR", Decimal(5)), True, None),  # o2: a refund
        ("v2", d(31, 22), ("USD", Decimal("7.50")), False, "u1"),  # 1 April 00:00 in Berlin: outside
        ("v2", d(15), ("EUR", Decimal("2.25")), False, " "),  # o4: a blank user id on u0's order
    ],
    zone="Europe/Berlin",
)
def test_identity_conversion_matches_the_reference(tmp_path_factory, events, links, orders, zone):
    shop = identity_shop(events, links, orders)
    ingest, engine = open_lake(tmp_path_factory, shop)
    try:
        body = identity_conversion_metrics(engine, ReportRange(SITE, START, END, zone), site_currency="EUR")
    finally:
        engine.close()
        ingest.stop()
    assert body.model_dump(by_alias=True, mode="json") == reference_identity(shop, zone, "EUR")


# --- the overview's days in the site's time zone ---------------------------------------------------


@examples(16)
@given(
    orders=st.lists(
        st.tuples(st.sampled_from(PEOPLE), INSTANTS, money_strategy, st.booleans(), st.just(False)),
        max_size=10,
    ),
    zone=st.sampled_from(["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Auckland"]),
)
@example(
    # New York: EST (UTC-5) until 10 March 02:00, then EDT (UTC-4).
    orders=[
        ("v0", d(1, 4), ("EUR", Decimal("1.00")), False, False),  # 29 February 23:00: outside
        ("v0", d(1, 5), ("EUR", Decimal("2.00")), False, False),  # 1 March 00:00
        ("v1", d(1, 5), ("JPY", Decimal(300)), False, False),  # 1 March too, another currency
        ("v1", d(10, 5), ("EUR", Decimal("4.00")), False, False),  # 10 March 01:00 EST
        ("v2", d(11, 4), ("EUR", Decimal("8.00")), False, False),  # 11 March 00:00 EDT
        ("v2", d(11, 4), ("EUR", Decimal("3.00")), True, False),  # a refund that day: not a sale
        ("v0", d(32), ("EUR", Decimal("16.00")), False, False),  # 31 March 20:00
        ("v0", d(32, 4), ("EUR", Decimal("32.00")), False, False),  # 1 April 00:00: outside
    ],
    zone="America/New_York",
)
def test_daily_revenue_follows_the_site_time_zone(tmp_path_factory, orders, zone):
    shop = build_shop([], orders, [])
    ingest, engine = open_lake(tmp_path_factory, shop)
    try:
        body = revenue_overview(engine, ReportRange(SITE, START, END, zone), site_currency="EUR")
    finally:
        engine.close()
        ingest.stop()
    start, end = local_bounds(START, END, zone)
    whole = reference_revenue(shop["orders"], start, end)
    assert {r.currency: (r.revenue, r.orders, r.refunds) for r in body.revenue_by_currency} == {
        c: (format_amount(r["revenue"], c), r["orders"], r["refunds"]) for c, r in whole.items()
    }
    currencies = sorted(c for c, r in whole.items() if r["orders"])
    expected = []
    for n in range((END - START).days + 1):
        day = START + timedelta(days=n)
        sales = reference_revenue(shop["orders"], *local_bounds(day, day, zone))
        expected.append({
            "date": day.isoformat(),
            "revenueByCurrency": [
                {"currency": c, "revenue": format_amount(sales[c]["revenue"] if c in sales else 0, c),
                 "orders": sales[c]["orders"] if c in sales else 0}
                for c in currencies
            ],
        })  # fmt: skip
    assert [day.model_dump(by_alias=True, mode="json") for day in body.daily] == expected
