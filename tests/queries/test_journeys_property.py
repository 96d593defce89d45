"""Property: every journeys report over random shops equals a plain-Python reading of the documented
definition (``queries/journeys.py``'s docstring, the routes' descriptions): the list and its totals,
the export rows, stats, the storefront funnel, one journey's timeline, and event-name sequences."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ingest.service import Ingest
from queries.journeys import (
    STOREFRONT_PATH,
    JourneyRange,
    get_journey,
    iter_journeys,
    journey_funnel,
    journey_sequences,
    journey_stats,
    list_journeys,
    sequence_insights,
)
from queries.money import format_amount
from tests.queries.helpers import PRODUCT_EVENTS, SITE, journeys_for
from warehouse.engine import Engine

# Hundreds of generated shops against a reference: seconds to tens of seconds a test.
pytestmark = pytest.mark.slow

ORIGIN = datetime(2024, 1, 9, tzinfo=UTC)  # instants are whole 6-hour slots after this, so ties happen
SLOTS = 12  # 9 January 00:00 to 11 January 18:00 UTC
RANGES = [(date(2024, 1, 10), date(2024, 1, 10)), (date(2024, 1, 9), date(2024, 1, 10)),
          (date(2024, 1, 10), date(2024, 1, 11))]  # fmt: skip
ZONES = ["UTC", "Europe/Berlin", "America/New_York"]

VISITORS = ["v0", "v1", "u1"]  # "u1" is also a user id: unlinked, that visitor is the user u1
USERS = ["u0", "u1"]
SESSIONS = ["s0", "s1"]  # shared by visitors: a session is a visitor's, a journey key is anyone's
JOURNEY_IDS = [None, None, "", "j0", "j1", "j2"]  # "" is no journey id
URLS = [None, "/", "/p/1", "/cart", "/thanks"]
NAMES = [*STOREFRONT_PATH, "purchase", "search_query", "identify"]
ORDER_REFS = [None, "o0", "o1", "o2", "o9"]  # o9 is never sent; some others are refunds
CURRENCIES = ["EUR", "JPY", "KWD"]  # 2, 0 and 3 minor units
PROBES = ["j0", "j1", "j2", "s0", "s1", "nowhere"]  # every key a shop can have, and one it cannot


@dataclass(frozen=True)
class Event:
    event_id: str
    visitor: str
    session: str
    journey: str | None
    at: datetime
    name: str
    url: str | None
    order_ref: str | None
    user: str | None


@dataclass(frozen=True)
class Order:
    order_id: str
    visitor: str
    session: str
    journey: str | None
    at: datetime
    currency: str
    total: Decimal
    refund: bool
    user: str | None
    quantity: int


@dataclass(frozen=True)
class Entry:
    """One entry of a journey's stream: an event, or a sale as a `purchase` (kind 1)."""

    key: str
    kind: int
    id: str
    person: str
    visitor: str
    at: datetime
    name: str
    url: str | None
    currency: str | None = None
    amount: Decimal | None = None


def at(slot: int) -> datetime:
    return ORIGIN + timedelta(hours=6 * slot)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# --- the reference ---------------------------------------------------------------------------------


def key_of(row: Event | Order) -> str:
    """A journey key: the journey id, else (none, or blank) the session id."""
    return row.journey or row.session


class Reference:
    """Journeys as the module docstring and the routes' descriptions define them, one rule a step."""

    def __init__(self, events: list[Event], orders: list[Order]) -> None:
        self.events = events
        self.sales = [o for o in orders if not o.refund]  # refunds are not purchases
        # A person is the user a visitor was (first) linked to, on any event or order, else the visitor.
        links: dict[str, tuple[datetime, str]] = {}
        for row in [*events, *orders]:
            if row.user and (row.visitor not in links or row.at < links[row.visitor][0]):
                links[row.visitor] = (row.at, row.user)
        self.links = {visitor: user for visitor, (_, user) in links.items()}
        self.stream = self._stream()

    def person(self, visitor: str) -> str:
        return self.links.get(visitor, visitor)

    def own_purchase_events(self, sale: Order) -> list[Event]:
        """The sale's own person's purchase events naming it, in time order (ties by event id)."""
        found = [
            e for e in self.events
            if e.name == "purchase" and e.order_ref == sale.order_id and self.person(e.visitor) == self.person(sale.visitor)
        ]  # fmt: skip
        return sorted(found, key=lambda e: (e.at, e.event_id))

    def placed(self, sale: Order) -> str:
        """The journey a sale joins: its journeyId's (when an event is in it), else the one of its own
        person's purchase event naming it, else the journey its visitor's session was in at the order's
        time (latest event at or before it, else the session's first), else a journey of its own."""
        if sale.journey and any(key_of(e) == sale.journey for e in self.events):
            return sale.journey
        if naming := self.own_purchase_events(sale):
            return key_of(naming[0])
        session = sorted(
            (e for e in self.events if (e.visitor, e.session) == (sale.visitor, sale.session)),
            key=lambda e: (e.at, e.event_id),
        )
        if session:
            before = [e for e in session if e.at <= sale.at]
            return key_of(before[-1] if before else session[0])
        return sale.journey or sale.session

    def _stream(self) -> dict[str, list[Entry]]:
        """Each journey's entries in time order (at one instant events before sales, then by id): its
        events, less purchase events naming a sale, and each sale placed in it as a `purchase`, with the
        page of its own person's purchase event naming it."""
        sale_ids = {s.order_id for s in self.sales}
        entries = [
            Entry(key_of(e), 0, e.event_id, self.person(e.visitor), e.visitor, e.at, e.name, e.url)
            for e in self.events
            if not (e.name == "purchase" and e.order_ref in sale_ids)
        ]
        for s in self.sales:
            naming = self.own_purchase_events(s)
            entries.append(Entry(self.placed(s), 1, s.order_id, self.person(s.visitor), s.visitor, s.at, "purchase",
                                 naming[0].url if naming else None, s.currency, s.total))  # fmt: skip
        stream: dict[str, list[Entry]] = defaultdict(list)
        for entry in sorted(entries, key=lambda x: (x.at, x.kind, x.id)):
            stream[entry.key].append(entry)
        return dict(stream)

    def journey(self, key: str) -> dict:
        entries = self.stream[key]
        pages = [x.url for x in entries if x.url]
        revenue: dict[str, Decimal] = defaultdict(Decimal)
        for x in entries:
            if x.kind == 1:
                revenue[x.currency] += x.amount
        return {
            "journey_id": key,
            "person_id": entries[0].person,
            "visitor_id": entries[0].visitor,
            "started_at": entries[0].at,
            "ended_at": entries[-1].at,
            "duration_seconds": (entries[-1].at - entries[0].at).total_seconds(),
            "event_count": len(entries),
            "converted": any(x.name == "purchase" for x in entries),
            "entry_url": pages[0] if pages else None,
            "exit_url": pages[-1] if pages else None,
            "revenue": [{"currency": c, "amount": format_amount(a, c)} for c, a in sorted(revenue.items())],
        }

    def started_in(self, query: JourneyRange) -> list[str]:
        """Keys of the journeys whose first entry falls in the range, newest first (ties by key)."""
        keys = [
            k for k, entries in self.stream.items() if query.range_start <= entries[0].at < query.range_end
        ]
        return sorted(keys, key=lambda k: (-self.stream[k][0].at.timestamp(), k))

    def names(self, key: str) -> list[str]:
        return [x.name for x in self.stream[key]]


def reference_stats(ref: Reference, keys: list[str]) -> dict:
    journeys = [ref.journey(k) for k in keys]
    total = len(journeys)
    converted = sum(j["converted"] for j in journeys)
    durations = [j["duration_seconds"] for j in journeys]
    revenue: dict[str, Decimal] = defaultdict(Decimal)
    orders: Counter[str] = Counter()
    for k in keys:
        for x in ref.stream[k]:
            if x.kind == 1:
                revenue[x.currency] += x.amount
                orders[x.currency] += 1
    return {
        "total_journeys": total,
        "converted_journeys": converted,
        "conversion_rate": round(converted / total, 6) if total else 0.0,
        "avg_events_per_journey": round(sum(j["event_count"] for j in journeys) / total, 3) if total else 0.0,
        "avg_duration_seconds": round(sum(durations) / total, 3) if total else 0.0,
        "median_duration_seconds": round(statistics.median(durations), 3) if total else 0.0,
        "unique_people": len({j["person_id"] for j in journeys}),
        "revenue_by_currency": [
            {"currency": c, "revenue": format_amount(revenue[c], c), "orders": orders[c]}
            for c in sorted(orders)
        ],
        "mixed_currency": len(orders) > 1,
    }


def reference_funnel(ref: Reference, keys: list[str]) -> dict:
    total = len(keys)
    counts = {name: sum(name in ref.names(k) for k in keys) for name in STOREFRONT_PATH}
    return {
        "total_journeys": total,
        "stages": [
            {"event_name": n, "count": counts[n], "rate": round(counts[n] / total, 6) if total else 0.0}
            for n in STOREFRONT_PATH
        ],
    }


def reference_insights(ref: Reference, keys: list[str], limit: int) -> dict:
    """Runs of 2 and 3 consecutive names: occurrences, journeys holding them, share of all journeys;
    ranked by occurrences, then journeys, then the names. Next events from every pair."""
    total = len(keys)
    runs: dict[int, Counter[tuple[str, ...]]] = {2: Counter(), 3: Counter()}
    holding: dict[int, Counter[tuple[str, ...]]] = {2: Counter(), 3: Counter()}
    for k in keys:
        names = ref.names(k)
        for size in (2, 3):
            found = [tuple(names[i : i + size]) for i in range(len(names) - size + 1)]
            runs[size].update(found)
            holding[size].update(set(found))

    def top(size: int) -> list[dict]:
        ranked = sorted(runs[size], key=lambda r: (-runs[size][r], -holding[size][r], list(r)))[:limit]
        return [
            {"sequence": list(r), "count": runs[size][r], "journeys": holding[size][r],
             "share": round(holding[size][r] / total, 6)}
            for r in ranked
        ]  # fmt: skip

    after: dict[str, Counter[str]] = defaultdict(Counter)
    for (first, second), count in runs[2].items():
        after[first][second] += count
    next_events = []
    for name in sorted(after):
        transitions = sum(after[name].values())
        best = min(after[name], key=lambda n: (-after[name][n], n))
        next_events.append({"event_name": name, "next_event_name": best, "count": after[name][best],
                            "transitions": transitions, "share": round(after[name][best] / transitions, 6)})  # fmt: skip
    return {"total_journeys": total, "pairs": top(2), "triples": top(3), "next_events": next_events}


def reference_detail(ref: Reference, key: str) -> dict | None:
    """The list fields, every recorded event of the key in time order (ties by id), the sales counted
    in it; none for a key without entries."""
    if key not in ref.stream:
        return None
    events = sorted((e for e in ref.events if key_of(e) == key), key=lambda e: (e.at, e.event_id))
    sales = sorted((x for x in ref.stream[key] if x.kind == 1), key=lambda x: (x.at, x.id))
    units = {s.order_id: s.quantity for s in ref.sales}
    return {
        **ref.journey(key),
        "events": [
            {"event_id": e.event_id, "name": e.name, "timestamp": e.at, "url": e.url, "entity_type": None,
             "entity_id": None, "product_item_code": "P" if e.name in PRODUCT_EVENTS else None, "category_path": None,
             "metadata": {**({"productItemCode": "P"} if e.name in PRODUCT_EVENTS else {}),
                          **({"orderId": e.order_ref} if e.order_ref else {})}}
            for e in events
        ],
        "orders": [
            {"order_id": x.id, "timestamp": x.at, "currency": x.currency,
             "total": format_amount(x.amount, x.currency), "item_count": units[x.id]}
            for x in sales
        ],
    }  # fmt: skip


# --- random shops ----------------------------------------------------------------------------------


def event_strategy(slots: list[int]):
    return st.tuples(
        st.sampled_from(VISITORS), st.sampled_from(slots), st.sampled_from(NAMES), st.sampled_from(SESSIONS),
        st.sampled_from(JOURNEY_IDS), st.sampled_from(URLS), st.sampled_from(ORDER_REFS),
    )  # fmt: skip


money_strategy = st.tuples(
    st.sampled_from(CURRENCIES), st.integers(0, 10**6).map(lambda m: Decimal(m).scaleb(-3))
)  # thousandths: finer than EUR's and JPY's minor units, so sums are rounded once, per currency


def order_strategy(slots: list[int]):
    return st.tuples(
        st.sampled_from(VISITORS), st.sampled_from(slots), st.sampled_from(SESSIONS), st.sampled_from(JOURNEY_IDS),
        money_strategy, st.sampled_from([False, False, True]), st.booleans(), st.integers(1, 3),
        st.sampled_from(["no", "/thanks", "none"]),
    )  # fmt: skip


# A few instants per shop, so events and orders often share one (ties in every ordering rule).
shop_strategy = st.lists(st.integers(0, SLOTS - 1), min_size=1, max_size=4, unique=True).flatmap(
    lambda slots: st.tuples(
        st.lists(event_strategy(slots), min_size=2, max_size=14),
        st.lists(order_strategy(slots), min_size=1, max_size=5),
    )
)


def build_shop(raw_events, raw_orders, links: dict[str, str]) -> tuple[list[Event], list[Order]]:
    """Events and orders from drawn tuples. An `identify` carries the visitor's user (dropped when the
    visitor has none); an order carries it when drawn so; a reported order also has the storefront's
    purchase event naming it, in the order's own session and journey at the same instant."""
    events, orders = [], []
    for n, (visitor, slot, name, session, journey, url, ref) in enumerate(raw_events):
        if name == "identify" and visitor not in links:
            continue
        # Ids out of the order the events are sent in, so no tie is broken by the order rows are stored in.
        events.append(Event(f"e{n * 37 % 101:03d}", visitor, session, journey, at(slot), name, url,
                            ref if name == "purchase" else None, links[visitor] if name == "identify" else None))  # fmt: skip
    for n, drawn in enumerate(raw_orders):
        visitor, slot, session, journey, (currency, amount), refund, with_user, quantity, reported = drawn
        user = links.get(visitor) if with_user else None
        orders.append(Order(f"o{n}", visitor, session, journey, at(slot), currency, -amount if refund else amount,
                            refund, user, quantity))  # fmt: skip
        if reported != "no":  # with the page "/thanks", or with none
            events.append(Event(f"p{n}", visitor, session, journey, at(slot), "purchase",
                                None if reported == "none" else reported, f"o{n}", None))  # fmt: skip
    return events, orders


def steps_of(events: list[Event], orders: list[Order]) -> dict[str, list[dict]]:
    steps: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        step = {"event": e.name, "at": iso(e.at), "eventId": e.event_id, "sessionId": e.session}
        step |= {"journeyId": e.journey} if e.journey is not None else {}
        step |= {"url": e.url} if e.url is not None else {}
        step |= {"userId": e.user} if e.user is not None else {}
        step |= {"metadata": {"orderId": e.order_ref}} if e.order_ref is not None else {}
        steps[e.visitor].append(step)
    for o in orders:
        step = {"order": o.order_id, "at": iso(o.at), "sessionId": o.session, "currency": o.currency,
                "total": str(o.total), "isRefund": o.refund,
                "items": [{"productItemCode": "P", "quantity": o.quantity, "price": "10"}]}  # fmt: skip
        step |= {"journeyId": o.journey} if o.journey is not None else {}
        step |= {"userId": o.user} if o.user is not None else {}
        steps[o.visitor].append(step)
    return dict(steps)


@seed(20240110)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shop=shop_strategy,
    links=st.dictionaries(st.sampled_from(VISITORS), st.sampled_from(USERS), max_size=3),
    days=st.sampled_from(RANGES),
    zone=st.sampled_from(ZONES),
    converted=st.sampled_from([None, True, False]),
    page=st.tuples(st.integers(1, 4), st.integers(0, 4)),
    probes=st.lists(st.sampled_from(PROBES), min_size=1, max_size=2, unique=True),
)
def test_journeys_match_the_reference(tmp_path_factory, shop, links, days, zone, converted, page, probes):
    events, orders = build_shop(*shop, links)
    ref = Reference(events, orders)
    query = JourneyRange(site_id=SITE, start_date=days[0], end_date=days[1], timezone=zone)
    limit, offset = page
    keys = ref.started_in(query)
    filtered = [k for k in keys if converted is None or ref.journey(k)["converted"] == converted]

    ingest = Ingest(data_dir=tmp_path_factory.mktemp("journeys") / "data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    try:
        journeys_for(ingest, steps_of(events, orders))
        everything = list_journeys(engine, query, limit=500, offset=0)
        paged = list_journeys(engine, query, limit=limit, offset=offset, converted=converted)
        exported = list(iter_journeys(engine, query, limit=limit, converted=converted))
        stats = journey_stats(engine, query)
        funnel = journey_funnel(engine, query)
        insights = sequence_insights(engine, query, limit=limit)
        sequences = journey_sequences(engine, query, limit=limit, offset=offset)
        details = {key: get_journey(engine, site_id=SITE, journey_id=key) for key in probes}
    finally:
        engine.close()
        ingest.stop()

    def rows(journeys) -> list[dict]:
        return [j.model_dump() for j in journeys]

    assert (everything.total, rows(everything.journeys)) == (len(keys), [ref.journey(k) for k in keys])
    assert (paged.total, rows(paged.journeys)) == (
        len(filtered),
        [ref.journey(k) for k in filtered[offset:][:limit]],
    )
    assert rows(exported) == [ref.journey(k) for k in filtered[:limit]]
    assert stats.model_dump() == reference_stats(ref, keys)
    assert funnel.model_dump() == reference_funnel(ref, keys)
    assert insights.model_dump() == reference_insights(ref, keys, limit)
    assert (sequences.total, [(s.journey_id, s.sequence) for s in sequences.journeys]) == (
        len(keys),
        [(k, ref.names(k)) for k in keys[offset:][:limit]],
    )
    for key, found in details.items():
        assert (key, found and found.model_dump()) == (key, reference_detail(ref, key))
