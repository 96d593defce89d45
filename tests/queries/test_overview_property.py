"""Property: the overview (totals, buyers' share, revenue per currency, events by name, the daily trend)
over random small shops equals a plain-Python reading of its documented definitions: UTC days of the
range, people and sessions per site, people across devices, everyone active counted (an order
included), a purchase event naming a sale counted as that sale, money per currency never merged."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.event_names import EVENT_FAMILIES
from queries.overview import Scope, daily_activity, event_breakdown, overview, revenue_by_currency
from tests.queries.random_shops import (
    Shop,
    examples,
    in_days,
    new_site,
    open_lake,
    reference_revenue,
    reference_totals,
)

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

START, END = date(2024, 3, 2), date(2024, 3, 4)
GRID_START = datetime(2024, 2, 29, tzinfo=UTC)  # a slot every 6 hours, to 7 March: midnights and ties
SLOTS = st.integers(0, 7 * 4)
VISITORS = ("v0", "v1", "v2", "v3", "u1")  # "u1" is also a user id: one namespace of person ids
USERS = ("u0", "u1", "u2")
NAMES = ("page_view", "page_view", "virtual_page_view", "scroll", "product_view", "add_to_cart", "purchase",
         "search_query", "checkout_begin")  # fmt: skip
ORDER_REFS = (None, "o0", "o1", "o2", "o3", "nope")
CURRENCIES = ("EUR", "JPY", "KWD")
FAMILY = {name: family for family, names in EVENT_FAMILIES.items() for name in names}


def slot_time(slot: int, *, seconds: int = 0) -> datetime:
    return GRID_START + timedelta(hours=6 * slot, seconds=seconds)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    ingest, engine = open_lake(tmp_path_factory, "overview")
    yield ingest, engine
    engine.close()
    ingest.stop()


# --- random shops ----------------------------------------------------------------------------------

site_index = st.integers(0, 1)
event_strategy = st.tuples(site_index, st.sampled_from(VISITORS), st.integers(0, 3), SLOTS, st.sampled_from(NAMES),
                           st.sampled_from(ORDER_REFS))  # fmt: skip
link_strategy = st.tuples(site_index, st.sampled_from(VISITORS), st.sampled_from(USERS), SLOTS, st.booleans())
money_strategy = st.tuples(
    st.sampled_from(CURRENCIES), st.integers(0, 10**6).map(lambda m: Decimal(m).scaleb(-3))
)
order_strategy = st.tuples(site_index, st.sampled_from(VISITORS), SLOTS, money_strategy, st.booleans(), st.booleans(),
                           st.booleans())  # fmt: skip


def build_shop(sites, events, links, orders) -> Shop:
    """Events on a 6-hour grid; links as identify events (or a login carrying the user), each a few
    seconds apart so a visitor's first link is never a tie; orders (refunds of either sign) that may
    name a user; purchase events that name an order of their site, of the other site, or none."""
    shop = Shop()
    for n, (site, visitor, user, slot, login) in enumerate(links):
        shop.event(site=sites[site], name="user_login" if login else "identify", at=slot_time(slot, seconds=n + 1),
                   visitor=visitor, session="s0", user=user)  # fmt: skip
    for site, visitor, session, slot, name, order_ref in events:
        metadata = {}
        if name in ("product_view", "add_to_cart"):
            metadata = {"productItemCode": "P1"}
        if name == "purchase" and order_ref:
            metadata = {"orderId": order_ref}
        shop.event(site=sites[site], name=name, at=slot_time(slot), visitor=visitor, session=f"s{session}",
                   metadata=metadata)  # fmt: skip
    for n, (site, visitor, slot, (currency, amount), refund, negative, named) in enumerate(orders):
        total = -amount if refund and negative else amount
        user = USERS[n % len(USERS)] if named else None
        shop.order(site=sites[site], order_id=f"o{n}", at=slot_time(slot, seconds=50 + n), visitor=visitor,
                   currency=currency, total=total, refund=refund, user=user)  # fmt: skip
    return shop


# --- the reference ---------------------------------------------------------------------------------


def in_range(row: dict, site_ids: tuple[str, ...]) -> bool:
    return in_days(row, site_ids, START, END)


def reference_breakdown(shop: Shop, site_ids: tuple[str, ...]) -> list[dict]:
    """Events by name, most first (then by name): count and distinct people (per site)."""
    counts: dict[str, int] = defaultdict(int)
    people: dict[str, set] = defaultdict(set)
    for e in shop.events:
        if in_range(e, site_ids):
            counts[e["name"]] += 1
            people[e["name"]].add((e["site"], shop.person(e["site"], e["visitor"])))
    return [{"name": n, "family": FAMILY[n], "count": counts[n], "people": len(people[n])}
            for n in sorted(counts, key=lambda n: (-counts[n], n))]  # fmt: skip


def reference_daily(shop: Shop, site_ids: tuple[str, ...]) -> list[dict]:
    """Every UTC day of the range: its events and their distinct people (per site)."""
    out = []
    day = START
    while day <= END:
        events = [e for e in shop.events if e["site"] in site_ids and e["at"].astimezone(UTC).date() == day]
        people = {(e["site"], shop.person(e["site"], e["visitor"])) for e in events}
        out.append({"date": day.isoformat(), "events": len(events), "people": len(people)})
        day += timedelta(days=1)
    return out


# --- the property ----------------------------------------------------------------------------------


@examples(30)
@given(
    events=st.lists(event_strategy, max_size=25),
    links=st.lists(link_strategy, max_size=5),
    orders=st.lists(order_strategy, max_size=6),
    both_sites=st.booleans(),
)
def test_overview_matches_the_reference(lake, events, links, orders, both_sites):
    ingest, engine = lake
    sites = (new_site(), new_site())
    shop = build_shop(sites, events, links, orders)
    shop.write(ingest)
    site_ids = sites if both_sites else sites[:1]
    scope = Scope(site_ids, START, END)

    body = overview(engine, scope)
    revenue = reference_revenue(shop, site_ids, START, END)
    breakdown = reference_breakdown(shop, site_ids)
    assert body == {
        "scope": {"siteIds": list(site_ids), "startDate": START.isoformat(), "endDate": END.isoformat()},
        **reference_totals(shop, site_ids, START, END),
        "revenueByCurrency": revenue,
        "mixedCurrency": len(revenue) > 1,
        "topEvents": breakdown[:10],
    }
    assert revenue_by_currency(engine, scope) == revenue
    assert event_breakdown(engine, scope) == breakdown
    assert daily_activity(engine, scope) == reference_daily(shop, site_ids)
