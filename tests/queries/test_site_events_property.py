"""Properties: a site's key metrics, its events pages and its time series over random small shops equal a
plain-Python reading of their documented definitions: the overview of the site plus the session shape
(UTC days), pages newest first with every match counted, and buckets of the site's time zone (hours
named by their local start with its UTC offset; days and weeks by their local date) on days when the
offset changes, in zones with half-hour and 45-minute offsets, and with a midnight that does not exist."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queries.overview import Scope
from queries.site_events import events_page, site_metrics, timeseries
from tests.queries.random_shops import (
    Shop,
    examples,
    in_days,
    new_site,
    open_lake,
    rate,
    reference_revenue,
    reference_totals,
)

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

VISITORS = ("v0", "v1", "v2", "v3")
USERS = ("u0", "u1")
NAMES = ("page_view", "page_view", "scroll", "product_view", "add_to_cart", "purchase", "search_query")
SOURCES = (None, None, "dataLayer", "gtm")
# (zone, a day whose UTC offset changes or that is otherwise awkward): the range falls near it.
SCENARIOS = (
    ("Europe/London", date(2024, 10, 27)),  # 25 hours
    ("America/New_York", date(2024, 3, 10)),  # 23 hours
    ("Australia/Lord_Howe", date(2024, 4, 7)),  # summer time ends half an hour back
    ("Australia/Lord_Howe", date(2024, 10, 6)),  # and starts half an hour ahead
    ("America/Santiago", date(2024, 9, 8)),  # the day starts at 01:00: midnight does not exist
    ("Asia/Kathmandu", date(2024, 1, 1)),  # +05:45
    ("Asia/Kolkata", date(2024, 2, 29)),  # +05:30
    ("UTC", date(2024, 3, 31)),
)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    ingest, engine = open_lake(tmp_path_factory, "site-events")
    yield ingest, engine
    engine.close()
    ingest.stop()


# --- random shops ----------------------------------------------------------------------------------

# Quarter hours from four days before the awkward day to four after it: the range lies inside.
QUARTERS = st.integers(-4 * 96, 5 * 96)
event_strategy = st.tuples(st.sampled_from(VISITORS), st.integers(0, 2), QUARTERS, st.sampled_from(NAMES),
                           st.sampled_from(SOURCES))  # fmt: skip
link_strategy = st.tuples(st.sampled_from(VISITORS), st.sampled_from(USERS), QUARTERS)
order_strategy = st.tuples(st.sampled_from(VISITORS), QUARTERS, st.sampled_from(["EUR", "JPY"]),
                           st.integers(0, 10**5).map(lambda m: Decimal(m).scaleb(-2)), st.booleans())  # fmt: skip


def quarter(anchor: date, n: int, *, seconds: int = 0) -> datetime:
    return datetime.combine(anchor, time.min, UTC) + timedelta(minutes=15 * n, seconds=seconds)


def build_shop(site: str, anchor: date, events, links, orders) -> Shop:
    shop = Shop()
    for n, (visitor, q, currency, total, refund) in enumerate(orders):
        shop.order(site=site, order_id=f"o{n}", at=quarter(anchor, q), visitor=visitor, currency=currency,
                   total=total, refund=refund)  # fmt: skip
    for n, (visitor, user, q) in enumerate(links):  # a second apart: a visitor's first link is no tie
        shop.event(site=site, name="identify", at=quarter(anchor, q, seconds=n + 1), visitor=visitor,
                   session=f"{visitor}-0", user=user)  # fmt: skip
    for visitor, session, q, name, source in events:
        metadata: dict = {"productItemCode": "P1"} if name in ("product_view", "add_to_cart") else {}
        if source:
            metadata["source"] = source
        shop.event(site=site, name=name, at=quarter(anchor, q), visitor=visitor, session=f"{visitor}-{session}",
                   metadata=metadata)  # fmt: skip
    return shop


# --- the reference ---------------------------------------------------------------------------------


def reference_session_shape(shop: Shop, site: str, start: date, end: date) -> dict:
    """Over the sessions of the range's events: the share with one event, the mean of last minus first
    event time, the mean number of events."""
    sessions: dict[str, list[datetime]] = defaultdict(list)
    for e in shop.events:
        if in_days(e, (site,), start, end):
            sessions[e["session"]].append(e["at"])
    count = len(sessions)
    seconds = sum((max(times) - min(times)).total_seconds() for times in sessions.values())
    events = sum(len(times) for times in sessions.values())
    return {
        "bounceRate": rate(sum(1 for times in sessions.values() if len(times) == 1), count),
        "avgSessionDurationSeconds": round(seconds / count, 3) if count else 0.0,
        "avgEventsPerSession": round(events / count, 3) if count else 0.0,
    }


def reference_page(shop: Shop, site: str, start: date, end: date, *, name, source, limit, offset) -> dict:
    """The range's events (UTC days) of the name and `metadata.source`, newest first (then by id)."""
    found = [
        e for e in shop.events
        if in_days(e, (site,), start, end) and name in (None, e["name"])
        and source in (None, e["metadata"].get("source"))
    ]  # fmt: skip
    found.sort(key=lambda e: e["event_id"])
    found.sort(key=lambda e: e["at"], reverse=True)
    return {
        "total": len(found),
        "limit": limit,
        "offset": offset,
        "events": [
            {"eventId": e["event_id"], "name": e["name"], "timestamp": e["at"].isoformat(), "visitorId": e["visitor"],
             "sessionId": e["session"], "journeyId": None, "userId": e["user"], "url": None, "entityType": None,
             "entityId": None, "productItemCode": e["metadata"].get("productItemCode"), "categoryPath": None,
             "metadata": e["metadata"], "channel": "server"}
            for e in found[offset : offset + limit]
        ],
    }  # fmt: skip


def bucket_key(moment: datetime, zone: ZoneInfo, interval: str) -> tuple:
    """An hour bucket: the instant's local date and wall-clock hour with the UTC offset in force; a day
    or week bucket: its local date, or the Monday of it."""
    local = moment.astimezone(zone)
    if interval == "hour":
        return local.date(), local.hour, local.utcoffset()
    day = local.date()
    return (day - timedelta(days=day.weekday()),) if interval == "week" else (day,)


def reference_series(
    shop: Shop, tz: str, start: date, end: date, interval: str, name: str | None
) -> list[dict]:
    """Every bucket holding an instant whose local date is in the range, in time order (each minute of
    the days around the range is looked at), named by its first instant: in local time with its offset
    for hours, as a local date for days and weeks. An event counts in its bucket when its local date is
    in the range; people are distinct per bucket."""
    zone = ZoneInfo(tz)
    names: dict[tuple, str] = {}
    moment = datetime.combine(start - timedelta(days=1), time.min, UTC)
    while moment < datetime.combine(end + timedelta(days=2), time.min, UTC):
        key = bucket_key(moment, zone, interval)
        if start <= moment.astimezone(zone).date() <= end and key not in names:
            local = moment.astimezone(zone)
            names[key] = (
                local.isoformat() if interval == "hour" else datetime.combine(key[0], time.min).isoformat()
            )
        moment += timedelta(minutes=1)
    events: dict[tuple, int] = defaultdict(int)
    people: dict[tuple, set] = defaultdict(set)
    for e in shop.events:
        if start <= e["at"].astimezone(zone).date() <= end and name in (None, e["name"]):
            key = bucket_key(e["at"], zone, interval)
            events[key] += 1
            people[key].add(shop.person(e["site"], e["visitor"]))
    return [
        {"bucket": label, "events": events[key], "people": len(people[key])} for key, label in names.items()
    ]


# --- the properties --------------------------------------------------------------------------------


@examples(25)
@given(
    scenario=st.sampled_from(SCENARIOS),
    events=st.lists(event_strategy, max_size=30),
    links=st.lists(link_strategy, max_size=4),
    orders=st.lists(order_strategy, max_size=4),
    first_day=st.integers(-2, 1),
    length=st.integers(0, 2),
    interval=st.sampled_from(["hour", "day", "week"]),
    name=st.sampled_from([None, None, "page_view", "scroll"]),
    source=st.sampled_from([None, None, "dataLayer"]),
    limit=st.integers(1, 8),
    offset=st.sampled_from([0, 0, 1, 3, 8, 40]),
)
def test_site_analytics_match_the_reference(
    lake, scenario, events, links, orders, first_day, length, interval, name, source, limit, offset
):
    ingest, engine = lake
    tz, anchor = scenario
    site = new_site()
    shop = build_shop(site, anchor, events, links, orders)
    shop.write(ingest)
    start = anchor + timedelta(days=first_day)
    end = start + timedelta(days=length)
    scope = Scope((site,), start, end)

    totals = reference_totals(shop, (site,), start, end)
    revenue = reference_revenue(shop, (site,), start, end)
    assert site_metrics(engine, site, scope) == {
        **totals["totals"],
        **reference_session_shape(shop, site, start, end),
        "purchaseConversionRate": totals["purchaseConversionRate"],
        "revenueByCurrency": revenue,
        "mixedCurrency": len(revenue) > 1,
    }
    page = events_page(engine, site, scope, limit=limit, offset=offset, name=name, source=source)
    assert page == reference_page(
        shop, site, start, end, name=name, source=source, limit=limit, offset=offset
    )
    series = timeseries(engine, site, start=start, end=end, timezone=tz, interval=interval, name=name)
    assert series == reference_series(shop, tz, start, end, interval, name)
