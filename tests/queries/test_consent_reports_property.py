"""Properties: consent categories (changes of mind), trends (per day, ISO week and month of the site's
time zone, with DST changes inside the range) and impact (activity, conversions and revenue per
currency by consent group) equal a plain-Python reading of their documented rules (the route
descriptions in api/analytics/consent/, docs/decisions.md) on random consent records, events and
orders: people linked to a user before or after they consented, several changes of mind, ties at one
instant, observations, events and orders outside the range, and a second site holding the same ids
and visitors (links, sales and consent of another site never count).

The compare route is no query-layer function: it runs ``consent_stats`` once per site (in the site's
own time zone), which tests/queries/test_consent_property.py checks.

Observations reuse the records and events of tests/queries/test_consent_property.py (its `state`
strategy, `stored`, `write` and person rule, and `reference_stats` for the opt-in figures)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ingest.consent import CATEGORIES
from ingest.service import Ingest
from ingest.validation import Context
from queries.consent import ConsentRange, consent_categories, consent_impact, consent_trends
from tests.queries.test_consent_property import (
    BASE,
    END,
    START,
    VISITORS,
    observation,
    opt_in_figures,
    person_of,
    reference_stats,
    state,
    stored,
    user_of,
    write,
)

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

INTERVALS = ("day", "week", "month")
CURRENCY_UNITS = {"EUR": 2, "USD": 2, "JPY": 0}


# --- plain readings of the rules ------------------------------------------------------------------------


def in_days(moment: datetime, zone: ZoneInfo, start: date, end: date) -> bool:
    """Whether an instant falls on one of the inclusive local days start..end."""
    return start <= moment.astimezone(zone).date() <= end


def in_order(items: list[dict]) -> list[dict]:
    """Observations in time order; at one instant an event before a record, then by id."""
    return sorted(items, key=lambda o: (o["ts"], o["rank"], o["id"]))


def linked_visitors(*rows: list[dict]) -> set[str]:
    """Visitors identified on an event or an order of the site, at any time."""
    return {
        r["visitor"] for items in rows for r in items if r["kind"] in ("event", "order") and r["with_user"]
    }


def latest_values(seen: list[dict], linked: set[str]) -> dict[str, dict[str, bool]]:
    """Per person, each category's latest stated value among ``seen``."""
    latest: dict[str, dict[str, bool]] = {}
    for item in in_order(seen):
        person = latest.setdefault(person_of(item, linked), {})
        person.update({c: v for c, v in item["state"].items() if v is not None})
    return latest


def period_of(day: date, interval: str) -> date:
    if interval == "week":
        return day - timedelta(days=day.weekday())
    if interval == "month":
        return day.replace(day=1)
    return day


def shift(moment: datetime) -> int:
    """Whole minutes from BASE (observations are placed in minutes from it)."""
    return int((moment - BASE).total_seconds()) // 60


# --- categories -------------------------------------------------------------------------------------------


def reference_changes(kept: list[dict], timezone: str) -> dict[str, tuple[int, int, int]]:
    """Per category (grants, revocations, people changed): consecutive stated values of one person in
    the range (in observation order) that differ."""
    zone = ZoneInfo(timezone)
    linked = linked_visitors(kept)
    values: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for item in in_order([o for o in kept if o["stated"] and in_days(o["ts"], zone, START, END)]):
        for category, value in item["state"].items():
            if value is not None:
                values[(person_of(item, linked), category)].append(value)
    changes = {}
    for category in CATEGORIES:
        grants = revocations = 0
        changed = set()
        for (person, of), seq in values.items():
            if of != category:
                continue
            for before, after in zip(seq, seq[1:], strict=False):
                grants += not before and after
                revocations += before and not after
                if before != after:
                    changed.add(person)
        changes[category] = (grants, revocations, len(changed))
    return changes


def obs(kind: str, visitor: str, minute: int, with_user: bool = False, **stated: bool) -> dict:
    return {"kind": kind, "visitor": visitor, "minute": minute, "with_user": with_user,
            "state": {c: stated.get(c) for c in CATEGORIES}}  # fmt: skip


# u0 on two devices. p0 refuses analytics before the range, grants it, revokes it and grants it again; its
# event naming u0 comes after the range in UTC (a link after its consent) and inside it in New York
# (another revocation; there the first minutes are before the range). p1's record names u0 itself and
# grants the marketing p0 refused: a change across devices. p2: an event granting marketing and a record
# refusing it at one instant (the record after it), then a tie of two events (by id: granted, refused).
# p3: an event stating nothing (no observation) and a record after the range (UTC; New York: inside).
CATEGORIES_EXAMPLE = [
    obs("record", "p0", -600, analytics=False),
    obs("record", "p0", 0, analytics=True, necessary=True),
    obs("event", "p0", 5, analytics=False),
    obs("event", "p0", 300, analytics=True, marketing=False),
    obs("event", "p0", 3100, with_user=True, analytics=False),
    obs("record", "p1", 1500, with_user=True, marketing=True, preferences=True),
    obs("event", "p2", 2, marketing=True, analytics=True),
    obs("record", "p2", 2, marketing=False),
    obs("event", "p2", 2879, marketing=True),
    obs("event", "p2", 2879, marketing=False),
    obs("event", "p3", 1),
    obs("record", "p3", 2880, preferences=False),
]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obs=st.lists(observation, max_size=14), timezone=st.sampled_from(["UTC", "America/New_York"]))
@example(obs=CATEGORIES_EXAMPLE, timezone="UTC")
@example(obs=CATEGORIES_EXAMPLE, timezone="America/New_York")
def test_categories_match_the_reference(lake, obs, timezone):
    ingest, engine = lake
    site_id = str(uuid.uuid4())
    kept = stored(obs)
    write(ingest, str(uuid.uuid4()), other_site(kept, [])[0])
    write(ingest, site_id, kept)
    report = consent_categories(
        engine, ConsentRange(site_id=site_id, start_date=START, end_date=END, timezone=timezone)
    )
    expected = reference_stats(kept, timezone)
    changes = reference_changes(kept, timezone)
    assert report.people == expected["people"]
    assert [c.category for c in report.categories] == list(CATEGORIES)
    for detail in report.categories:
        granted, denied, opt_in = expected["rates"][detail.category]
        assert (detail.granted, detail.denied, detail.opt_in_rate) == (granted, denied, opt_in)
        assert (detail.decided, detail.unstated) == (granted + denied, expected["people"] - granted - denied)
        assert (detail.grants, detail.revocations, detail.people_changed) == changes[detail.category]
        assert detail.required == (detail.category == "necessary") and detail.description


# --- trends -----------------------------------------------------------------------------------------------

# (time zone, first day, last day): DST changes inside the range, calendar weeks and months that reach
# beyond it.
SCENARIOS = [
    ("America/New_York", date(2024, 3, 9), date(2024, 3, 12)),  # clocks go forward Sun 10 Mar 02:00
    ("Europe/London", date(2024, 3, 29), date(2024, 4, 2)),  # forward Sun 31 Mar 01:00; April; week of 1 Apr
    ("America/New_York", date(2024, 10, 30), date(2024, 11, 4)),  # back Sun 3 Nov 02:00; November; 4 Nov
    ("America/Santiago", date(2024, 9, 6), date(2024, 9, 9)),  # forward at midnight: 8 Sep starts at 01:00
    ("America/Havana", date(2024, 11, 1), date(2024, 11, 4)),  # back at 01:00 to 00:00: midnight twice
    ("Asia/Kolkata", date(2024, 2, 27), date(2024, 3, 1)),  # +05:30, a leap day, March
    ("UTC", date(2024, 3, 10), date(2024, 3, 11)),
]
LOCAL_TIMES = [time(0, 0), time(0, 30), time(1, 30), time(2, 30), time(12, 0), time(23, 59)]


def scenario_minutes(timezone: str, start: date, end: date) -> list[int]:
    """Instants around every local day of the range and the day either side: local midnights, the minute
    before them, and times a DST change skips or repeats (both occurrences of a repeated one)."""
    zone = ZoneInfo(timezone)
    days = [start + timedelta(days=n) for n in range(-1, (end - start).days + 2)]
    local = [
        datetime.combine(d, t, zone).replace(fold=fold) for d in days for t in LOCAL_TIMES for fold in (0, 1)
    ]
    return sorted({shift(moment.astimezone(UTC)) for moment in local})


def observation_at(minutes: list[int]):
    return st.fixed_dictionaries({
        "kind": st.sampled_from(["record", "event"]),
        "visitor": st.sampled_from(VISITORS),
        "minute": st.sampled_from(minutes),
        "state": state,
        "with_user": st.booleans(),
    })  # fmt: skip


scenario_observations = st.sampled_from(SCENARIOS).flatmap(
    lambda s: st.tuples(st.just(s), st.lists(observation_at(scenario_minutes(*s)), max_size=14))
)


def reference_trends(kept: list[dict], timezone: str, start: date, end: date, interval: str) -> list[tuple]:
    """Per calendar period touching the range, in order: (first day, people, records, {category: (granted,
    denied, opt-in rate)}) over the observations inside the range, each person with their latest value
    within the period."""
    zone = ZoneInfo(timezone)
    linked = linked_visitors(kept)
    firsts = sorted({period_of(start + timedelta(days=n), interval) for n in range((end - start).days + 1)})
    seen = [o for o in kept if o["stated"] and in_days(o["ts"], zone, start, end)]
    periods = []
    for first in firsts:
        inside = [o for o in seen if period_of(o["ts"].astimezone(zone).date(), interval) == first]
        latest = latest_values(inside, linked)
        figures = opt_in_figures(latest)
        records = sum(1 for o in inside if o["kind"] == "record")
        periods.append((first, len(latest), records, figures))
    return periods


def at(timezone: str, day: date, hour: int, minute: int = 0) -> int:
    return shift(datetime.combine(day, time(hour, minute), ZoneInfo(timezone)).astimezone(UTC))


NY = "America/New_York"
# New York, Sat 9 to Tue 12 March 2024 (clocks forward on Sunday 10th; ISO weeks from Mon 4 and Mon 11).
# p0 refuses analytics at 23:59 on the 8th (before the range), grants it at midnight on the 9th, refuses it
# on Sunday after the clocks changed and grants it again at 23:59 on Sunday (04:00Z is Monday); an event
# stating nothing at Monday's midnight names user u0 (a link after all of it). p1's Monday record names
# u0 itself, so u0 is one person on both devices. p2: an event granting marketing and a record refusing it
# at one instant (the record wins), then a record at the range's last minute. p3: a record after the
# range, in a week reaching beyond it.
TRENDS_EXAMPLE = (
    (NY, date(2024, 3, 9), date(2024, 3, 12)),
    [
        obs("record", "p0", at(NY, date(2024, 3, 8), 23, 59), analytics=False),
        obs("record", "p0", at(NY, date(2024, 3, 9), 0), analytics=True, necessary=True),
        obs("event", "p0", at(NY, date(2024, 3, 10), 3, 30), analytics=False),
        obs("event", "p0", at(NY, date(2024, 3, 10), 23, 59), analytics=True),
        obs("event", "p0", at(NY, date(2024, 3, 11), 0), with_user=True),
        obs("record", "p1", at(NY, date(2024, 3, 11), 12), with_user=True, marketing=True, preferences=False),
        obs("event", "p2", at(NY, date(2024, 3, 10), 1, 30), marketing=True),
        obs("record", "p2", at(NY, date(2024, 3, 10), 1, 30), marketing=False),
        obs("record", "p2", at(NY, date(2024, 3, 12), 23, 59), preferences=True),
        obs("record", "p3", at(NY, date(2024, 3, 13), 0), analytics=True),
    ],
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=scenario_observations)
@example(case=TRENDS_EXAMPLE)
def test_trends_match_the_reference_for_every_interval(lake, case):
    ingest, engine = lake
    (timezone, start, end), observations = case
    site_id = str(uuid.uuid4())
    kept = stored(observations)
    write(ingest, str(uuid.uuid4()), other_site(kept, [])[0])
    write(ingest, site_id, kept)
    query = ConsentRange(site_id=site_id, start_date=start, end_date=end, timezone=timezone)
    for interval in INTERVALS:
        report = consent_trends(engine, query, interval=interval)
        got = [
            (p.period_start, p.people, p.consent_records,
             {c.category: (c.granted, c.denied, c.opt_in_rate) for c in p.categories})
            for p in report.periods
        ]  # fmt: skip
        assert got == reference_trends(kept, timezone, start, end, interval), interval


# --- impact -----------------------------------------------------------------------------------------------

AMOUNTS = {"EUR": ["12.50", "0.99", "100"], "USD": ["10", "3.33"], "JPY": ["1200", "999"]}

activity_item = st.fixed_dictionaries({
    "kind": st.sampled_from(["event", "event", "order"]),
    "visitor": st.sampled_from(VISITORS),
    # Minutes from 2024-03-10T00:00Z, as the observations: before, at and after the range's edges.
    "minute": st.sampled_from([-600, -1, 0, 2, 5, 300, 1500, 2879, 2880, 3100]),
    "with_user": st.booleans(),
    "name": st.sampled_from(["page_view", "virtual_page_view", "purchase"]),
    # A purchase event's metadata.orderId: none, the order at that index of the activity (if one is
    # there: a sale, a refund, or no such order), or an order of the other site only.
    "order_ref": st.one_of(st.none(), st.integers(0, 6), st.just("elsewhere")),
    "sale": st.sampled_from(["EUR", "EUR", "USD", "JPY"]).flatmap(
        lambda c: st.tuples(st.just(c), st.sampled_from(AMOUNTS[c]))
    ),
    "refund": st.booleans(),
    # Orders carry consent fields too; they are no consent observation and must not count.
    "consent": state,
})  # fmt: skip


def stored_activity(items: list[dict]) -> list[dict]:
    kept = []
    for index, item in enumerate(items):
        ref = item["order_ref"]
        kept.append({
            **item, "ts": BASE + timedelta(minutes=item["minute"]),
            "id": f"o{index}" if item["kind"] == "order" else f"a{index:03d}",
            "order_id": None if ref is None else "o-elsewhere" if ref == "elsewhere" else f"o{ref}",
        })  # fmt: skip
    return kept


def send_activity(ingest: Ingest, site_id: str, items: list[dict]) -> None:
    """Events and orders into the ingest log; the next `write` flushes them with its observations (fewer
    flushes, fewer lake files for the queries to open)."""
    ctx = Context(site_id=site_id, site_currency="EUR", received_at=datetime.now(UTC), channel="server",
                  historical=True)  # fmt: skip
    events, orders = [], []
    for item in items:
        body = {"visitorId": item["visitor"], "sessionId": "s", "timestamp": item["ts"].isoformat(),
                **({"userId": user_of(item["visitor"])} if item["with_user"] else {})}  # fmt: skip
        if item["kind"] == "order":
            currency, amount = item["sale"]
            consent = {c: v for c, v in item["consent"].items() if v is not None}
            orders.append({**body, "orderId": item["id"], "currency": currency,
                           "total": f"-{amount}" if item["refund"] else amount,
                           "items": [{"productItemCode": "P", "quantity": 1, "price": amount}],
                           **({"isRefund": True} if item["refund"] else {}),
                           **({"consent": consent} if consent else {})})  # fmt: skip
        else:
            metadata = (
                {"orderId": item["order_id"]} if item["name"] == "purchase" and item["order_id"] else {}
            )
            events.append({**body, "name": item["name"], "eventId": item["id"], "metadata": metadata})
    if events:
        assert ingest.accept_events_sync(events, ctx).rejected == []
    if orders:
        assert ingest.accept_orders_sync(orders, ctx).rejected == []


def other_site(kept: list[dict], activity: list[dict]) -> tuple[list[dict], list[dict]]:
    """The same ids, visitors and instants on another site of the organisation, every visitor identified
    there, every consent value and refund flag the other way round, and the order `o-elsewhere`."""
    flipped = [{**o, "with_user": True, "state": {c: None if v is None else not v for c, v in o["state"].items()}}
               for o in kept]  # fmt: skip
    elsewhere = {"kind": "order", "visitor": "p4", "minute": 5, "ts": BASE + timedelta(minutes=5),
                 "with_user": True, "id": "o-elsewhere", "sale": ("EUR", "100"), "refund": False, "consent": {}}  # fmt: skip
    return flipped, [{**a, "with_user": True, "refund": not a["refund"]} for a in activity] + [elsewhere]


def money(amount: Decimal, currency: str) -> str:
    return f"{amount.quantize(Decimal(1).scaleb(-CURRENCY_UNITS[currency]), rounding=ROUND_HALF_EVEN):f}"


def reference_impact(kept: list[dict], activity: list[dict], timezone: str, category: str) -> dict[str, dict]:
    """Everyone active in the range (an event, a sale or a consent observation; a refund is no activity)
    by their latest stated value of ``category`` in the range; per group people, events, converters (a
    sale in the range, or a purchase event in it naming no sale of the site) and sales per currency."""
    zone = ZoneInfo(timezone)
    linked = linked_visitors(kept, activity)
    inside = [r for r in kept + activity if in_days(r["ts"], zone, START, END)]
    sales_of_site = {a["id"] for a in activity if a["kind"] == "order" and not a["refund"]}
    latest = latest_values([o for o in kept if o["stated"] and in_days(o["ts"], zone, START, END)], linked)
    events: dict[str, int] = defaultdict(int)
    converters, active = set(), set()
    sales: dict[str, list[dict]] = defaultdict(list)
    for row in inside:
        person = person_of(row, linked)
        if row["kind"] == "order":
            if row["refund"]:
                continue
            sales[person].append(row)
            converters.add(person)
        elif row["kind"] == "event":
            events[person] += 1
            if row.get("name") == "purchase" and row.get("order_id") not in sales_of_site:
                converters.add(person)
        active.add(person)
    groups = {g: {"people": 0, "events": 0, "conversions": 0, "orders": 0, "revenue": defaultdict(list)}
              for g in ("granted", "denied", "unstated")}  # fmt: skip
    for person in active:
        value = latest.get(person, {}).get(category)
        group = groups["unstated" if value is None else "granted" if value else "denied"]
        group["people"] += 1
        group["events"] += events[person]
        group["conversions"] += person in converters
        group["orders"] += len(sales[person])
        for sale in sales[person]:
            group["revenue"][sale["sale"][0]].append(Decimal(sale["sale"][1]))
    for group in groups.values():
        by_currency = sorted(group.pop("revenue").items())
        group["by_currency"] = [
            (
                currency,
                money(sum(amounts), currency),
                len(amounts),
                money(sum(amounts) / len(amounts), currency),
            )
            for currency, amounts in by_currency
        ]
        if not by_currency:
            group["total"] = ("0.00", "EUR", False)
        elif len(by_currency) == 1:
            group["total"] = (group["by_currency"][0][1], by_currency[0][0], False)
        else:
            group["total"] = (None, None, True)
    return groups


def act(kind: str, visitor: str, minute: int, with_user: bool = False, name: str = "page_view",
        order_ref=None, sale=("EUR", "12.50"), refund: bool = False, **consent: bool) -> dict:  # fmt: skip
    return {"kind": kind, "visitor": visitor, "minute": minute, "with_user": with_user, "name": name,
            "order_ref": order_ref, "sale": sale, "refund": refund,
            "consent": {c: consent.get(c) for c in CATEGORIES}}  # fmt: skip


# u0 on two devices: p1 refuses analytics on an event, p0 grants it in a record just after (u0's latest;
# in New York both are before the range, so u0 and p2 are unstated there); p1 is identified on its JPY
# order later in the range, p0 on an event after it (UTC; New York: inside).
# u0 buys in EUR and JPY (mixed). p2: a record refusing analytics after an event granting it at one
# instant (the record wins), then a USD order whose consent fields grant it (orders are no observation)
# and a purchase event naming that order. p3: a page view, and a purchase event naming u0's order (a
# forwarded thank-you page: that sale is u0's, p3 did not convert). p5: a purchase event naming an order
# of the other site only (a conversion here). p4: a record before the range, a refund in it (no activity)
# and a sale after it.
IMPACT_EXAMPLE = {
    "obs": [
        obs("event", "p1", 0, analytics=False),
        obs("record", "p0", 5, analytics=True, marketing=False),
        obs("record", "p2", 2, analytics=False),
        obs("event", "p2", 2, analytics=True),
        obs("event", "p3", 300),
        obs("record", "p4", -600, analytics=True),
    ],
    "activity": [
        act("order", "p0", 300, sale=("EUR", "12.50")),
        act("order", "p1", 1500, with_user=True, sale=("JPY", "1200")),
        act("event", "p0", 3100, with_user=True),
        act("order", "p2", 1500, sale=("USD", "10"), analytics=True),
        act("event", "p2", 1500, name="purchase", order_ref=3),
        act("event", "p3", 2879, name="purchase", order_ref=0),
        act("event", "p5", 2879, name="purchase", order_ref="elsewhere"),
        act("order", "p4", 1500, refund=True, sale=("EUR", "12.50")),
        act("order", "p4", 3200, sale=("EUR", "0.99")),
        act("order", "p0", 2880, with_user=True, sale=("EUR", "100")),
    ],
}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    obs=st.lists(observation, max_size=10),
    activity=st.lists(activity_item, max_size=10),
    timezone=st.sampled_from(["UTC", "America/New_York"]),
)
@example(obs=IMPACT_EXAMPLE["obs"], activity=IMPACT_EXAMPLE["activity"], timezone="UTC")
@example(obs=IMPACT_EXAMPLE["obs"], activity=IMPACT_EXAMPLE["activity"], timezone="America/New_York")
def test_impact_matches_the_reference_for_each_category(lake, obs, activity, timezone):
    ingest, engine = lake
    site_id, other_id = str(uuid.uuid4()), str(uuid.uuid4())
    kept, sold = stored(obs), stored_activity(activity)
    other_kept, other_sold = other_site(kept, sold)
    send_activity(ingest, site_id, sold)
    send_activity(ingest, other_id, other_sold)
    write(ingest, other_id, other_kept)
    write(ingest, site_id, kept)
    query = ConsentRange(site_id=site_id, start_date=START, end_date=END, timezone=timezone, currency="EUR")
    for category in CATEGORIES:
        report = consent_impact(engine, query, category=category)
        expected = reference_impact(kept, sold, timezone, category)
        assert [g.group for g in report.groups] == ["granted", "denied", "unstated"]
        for group in report.groups:
            want = expected[group.group]
            got = {
                "people": group.people, "events": group.events, "conversions": group.conversions,
                "orders": group.orders,
                "by_currency": [(r.currency, r.revenue, r.orders, r.avg_order_value) for r in group.revenue_by_currency],
                "total": (group.revenue.amount, group.revenue.currency, group.revenue.mixed),
            }  # fmt: skip
            assert got == want, (category, group.group)
            people = want["people"]
            assert group.events_per_person == (round(want["events"] / people, 6) if people else 0.0)
            assert group.conversion_rate == (round(want["conversions"] / people, 6) if people else 0.0)
