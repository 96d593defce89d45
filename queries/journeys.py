"""Journeys: the events of one `journey_id` (events without one fall back to their `session_id`), as
lists, totals, a journey-level storefront funnel, one journey's timeline, and event-name sequences.

A journey is the events of one ``journeyId``; events without one fall back to their ``sessionId`` as
the journey key. Every report works on the same stream per journey: the journey's events plus each
sale (refunds are not purchases) as a ``purchase`` at the order's time; a ``purchase`` event whose
``metadata.orderId`` names a sale is that sale, counted once (it is no entry of its own journey). A
journey is ``converted`` when its stream holds a ``purchase``. Money comes from orders only, per
currency, never summed across currencies. A journey belongs to a date range when its first entry,
event or sale, falls inside it (site time zone, inclusive days); its later entries count wherever they
fall. People are the linked user when the visitor was ever identified, else the visitor.

A sale joins the journey of its ``journeyId`` when an event is in that journey; else the journey of its
person's first purchase event naming it, and takes that event's page (none when it has none); else the
journey its visitor's session was in at the order's time: that of the session's latest event at or
before it, else of the session's first event. A sale no event places (a checkout tracked only
server-side) is a journey of its own, keyed by its ``journeyId``, else its ``sessionId``. Entries at
one instant are in a fixed order: events before sales, each by id (event id, order id), as the
timeline lists events; the same order breaks every tie in placing a sale.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import date, datetime
from typing import Any

import duckdb
import orjson

from aisle.wire import CamelModel
from queries import library
from queries.money import format_amount
from queries.ranges import LocalDays
from queries.rates import rate
from warehouse.engine import Engine

STOREFRONT_PATH = ("page_view", "product_view", "add_to_cart", "checkout_begin", "purchase")
EXPORT_BATCH_ROWS = 1000


class Money(CamelModel):
    currency: str
    amount: str


class Journey(CamelModel):
    journey_id: str
    person_id: str
    visitor_id: str
    started_at: datetime
    ended_at: datetime
    duration_seconds: float
    event_count: int
    converted: bool
    entry_url: str | None
    exit_url: str | None
    revenue: list[Money]


class JourneyPage(CamelModel):
    total: int
    limit: int
    offset: int
    journeys: list[Journey]


class CurrencyRevenue(CamelModel):
    currency: str
    revenue: str
    orders: int


class JourneyStats(CamelModel):
    total_journeys: int
    converted_journeys: int
    conversion_rate: float
    avg_events_per_journey: float
    avg_duration_seconds: float
    median_duration_seconds: float
    unique_people: int
    revenue_by_currency: list[CurrencyRevenue]
    mixed_currency: bool


class FunnelStage(CamelModel):
    event_name: str
    count: int
    rate: float


class JourneyFunnel(CamelModel):
    total_journeys: int
    stages: list[FunnelStage]


class TimelineEvent(CamelModel):
    event_id: str
    name: str
    timestamp: datetime
    url: str | None
    entity_type: str | None
    entity_id: str | None
    product_item_code: str | None
    category_path: str | None
    metadata: dict[str, Any]


class JourneyOrder(CamelModel):
    order_id: str
    timestamp: datetime
    currency: str
    total: str
    item_count: int | None


class JourneyDetail(Journey):
    events: list[TimelineEvent]
    orders: list[JourneyOrder]


class SequenceCount(CamelModel):
    sequence: list[str]
    count: int
    journeys: int
    share: float


class NextEvent(CamelModel):
    event_name: str
    next_event_name: str
    count: int
    transitions: int
    share: float


class SequenceInsights(CamelModel):
    total_journeys: int
    pairs: list[SequenceCount]
    triples: list[SequenceCount]
    next_events: list[NextEvent]


class JourneySequence(CamelModel):
    journey_id: str
    sequence: list[str]


class SequencePage(CamelModel):
    total: int
    limit: int
    offset: int
    journeys: list[JourneySequence]


class JourneyRange(LocalDays):
    """Journeys of a site whose first event falls between two inclusive days of the site time zone."""


# --- small pure helpers ------------------------------------------------------------------------------


def _seconds(value: float | None) -> float:
    return round(float(value), 3) if value is not None else 0.0


def _journey(row: dict[str, Any]) -> Journey:
    return Journey(
        journey_id=row["journey_key"],
        person_id=row["person_id"],
        visitor_id=row["visitor_id"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        duration_seconds=_seconds(row["duration_seconds"]),
        event_count=row["event_count"],
        converted=row["converted"],
        entry_url=row["entry_url"],
        exit_url=row["exit_url"],
        revenue=[
            Money(currency=r["currency"], amount=format_amount(r["amount"] or 0, r["currency"]))
            for r in row["revenue"]
        ],
    )


# --- running the shared steps on one cursor ------------------------------------------------------------


_run = library.rows_on


def _execute(cursor: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> None:
    cursor.execute(library.sql(name), params)


@contextmanager
def _journeys_of(
    engine: Engine, *, keys: str, params: dict[str, Any], scan_from: date = date.min
) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, Any]]]:
    """A cursor holding the temporary tables `journey_sales` (every sale and its journey),
    `journey_keys` (chosen by the ``keys`` query) and `journey_summary`, and the table macro
    `journey_stream`; temporary objects belong to their cursor alone. Beside it, the parameters a
    query reading the stream binds (`$site_id`, `$scan_from`). ``scan_from``: no chosen journey has
    an entry in an earlier partition (a purchase event counted as its sale may lie there; it is no
    entry)."""
    cursor = engine.cursor()
    stream = {"site_id": params["site_id"], "scan_from": scan_from}
    try:
        _execute(cursor, "journey_sales", {"site_id": params["site_id"]})
        _execute(cursor, keys, params)
        _execute(cursor, "journey_stream", {})
        _execute(cursor, "journey_summary", stream)
        yield cursor, stream
    finally:
        cursor.close()


def _in_range(
    engine: Engine, query: JourneyRange
) -> AbstractContextManager[tuple[duckdb.DuckDBPyConnection, dict[str, Any]]]:
    params = query.params()
    # Choosing the journeys reads every partition up to the range's end (an entry before the range
    # means the journey started earlier); the chosen ones have no entry before scan_start.
    started = {name: params[name] for name in ("site_id", "range_start", "range_end", "scan_end")}
    return _journeys_of(engine, keys="journey_started", params=started, scan_from=params["scan_start"])


# --- the reports ----------------------------------------------------------------------------------------


def list_journeys(
    engine: Engine, query: JourneyRange, *, limit: int, offset: int, converted: bool | None = None
) -> JourneyPage:
    """Journeys started in the range, newest first (ties by journey key), paged; `total` counts every
    journey matching the `converted` filter (None: all)."""
    with _in_range(engine, query) as (cursor, _):
        total = _run(cursor, "journey_count", {"converted": converted})[0]["total"]
        rows = _run(cursor, "journey_list", {"converted": converted, "limit": limit, "offset": offset})
    return JourneyPage(total=total, limit=limit, offset=offset, journeys=[_journey(r) for r in rows])


def iter_journeys(
    engine: Engine, query: JourneyRange, *, limit: int, converted: bool | None = None
) -> Iterator[Journey]:
    """The rows of `list_journeys` from the first on, at most ``limit``, fetched in batches so an
    export never holds them all at once."""
    with _in_range(engine, query) as (cursor, _):
        params = {"converted": converted, "limit": limit, "offset": 0}
        reader = cursor.sql(library.sql("journey_list"), params=params).to_arrow_reader(EXPORT_BATCH_ROWS)
        for batch in reader:
            for row in batch.to_pylist():
                yield _journey(row)


def journey_stats(engine: Engine, query: JourneyRange) -> JourneyStats:
    """Journeys started in the range: how many, how many converted, entries and duration per journey
    (mean and median), distinct people (of each journey's first entry), and sales per currency."""
    with _in_range(engine, query) as (cursor, _):
        totals = _run(cursor, "journey_stats", {})[0]
        revenue = _run(cursor, "journey_revenue", {})
    journeys = totals["journeys"]
    return JourneyStats(
        total_journeys=journeys,
        converted_journeys=totals["converted"],
        conversion_rate=rate(totals["converted"], journeys),
        avg_events_per_journey=round(totals["events"] / journeys, 3) if journeys else 0.0,
        avg_duration_seconds=round(float(totals["duration_seconds"]) / journeys, 3) if journeys else 0.0,
        median_duration_seconds=_seconds(totals["median_duration_seconds"]),
        unique_people=totals["people"],
        revenue_by_currency=[
            CurrencyRevenue(
                currency=r["currency"],
                revenue=format_amount(r["revenue"] or 0, r["currency"]),
                orders=r["orders"],
            )
            for r in revenue
        ],
        mixed_currency=len(revenue) > 1,
    )


def journey_funnel(
    engine: Engine, query: JourneyRange, stages: tuple[str, ...] = STOREFRONT_PATH
) -> JourneyFunnel:
    """For each stage, the journeys started in the range that contain that event (anywhere, in any
    order), and their share of all those journeys."""
    with _in_range(engine, query) as (cursor, stream):
        total = _run(cursor, "journey_count", {"converted": None})[0]["total"]
        rows = _run(cursor, "journey_funnel", {**stream, "stages": list(stages)})
        counts = {r["name"]: r["journeys"] for r in rows}
    return JourneyFunnel(
        total_journeys=total,
        stages=[
            FunnelStage(event_name=name, count=counts.get(name, 0), rate=rate(counts.get(name, 0), total))
            for name in stages
        ],
    )


def get_journey(engine: Engine, *, site_id: str, journey_id: str) -> JourneyDetail | None:
    """One journey, whatever its date, with its recorded events in time order (ties by event id) and
    the sales counted in it; None when it has no entry: no event or sale of the site carries that
    journey (or session) key, or its only events are purchase events counted as their sale (perhaps in
    another journey, or another person's: a forwarded thank-you page)."""
    params = {"site_id": site_id, "journey_key": journey_id}
    with _journeys_of(engine, keys="journey_one", params=params) as (cursor, _):
        summary = _run(cursor, "journey_list", {"converted": None, "limit": 1, "offset": 0})
        if not summary:
            return None
        events = _run(cursor, "journey_timeline", params)
        orders = _run(cursor, "journey_orders", {"site_id": site_id})
    return JourneyDetail(
        **_journey(summary[0]).model_dump(),
        events=[
            TimelineEvent(
                event_id=e["event_id"],
                name=e["name"],
                timestamp=e["ts"],
                url=e["url"],
                entity_type=e["entity_type"],
                entity_id=e["entity_id"],
                product_item_code=e["product_item_code"],
                category_path=e["category_path"],
                metadata=orjson.loads(e["metadata"]) if e["metadata"] else {},
            )
            for e in events
        ],
        orders=[
            JourneyOrder(
                order_id=o["order_id"],
                timestamp=o["ts"],
                currency=o["currency"],
                total=format_amount(o["total"] or 0, o["currency"]),
                item_count=o["item_count"],
            )
            for o in orders
        ],
    )


def _top(rows: list[dict[str, Any]], total: int, limit: int) -> list[SequenceCount]:
    ranked = sorted(rows, key=lambda r: (-r["occurrences"], -r["journeys"], r["sequence"]))[:limit]
    return [
        SequenceCount(
            sequence=r["sequence"],
            count=r["occurrences"],
            journeys=r["journeys"],
            share=rate(r["journeys"], total),
        )
        for r in ranked
    ]


def next_events(pairs: list[dict[str, Any]]) -> list[NextEvent]:
    """For each event name, the name that most often comes right after it in a journey (ties: by
    name), with its share of all transitions out of that name."""
    out_of: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for pair in pairs:
        first, second = pair["sequence"]
        out_of[first].append((second, pair["occurrences"]))
    result = []
    for name in sorted(out_of):
        transitions = sum(count for _, count in out_of[name])
        best, count = min(out_of[name], key=lambda item: (-item[1], item[0]))
        result.append(
            NextEvent(
                event_name=name,
                next_event_name=best,
                count=count,
                transitions=transitions,
                share=rate(count, transitions),
            )
        )
    return result


def sequence_insights(engine: Engine, query: JourneyRange, *, limit: int) -> SequenceInsights:
    """The most frequent consecutive pairs and triples of event names inside journeys started in the
    range (count: occurrences; journeys and share: journeys containing them at least once; ranked by
    count, then journeys, then the names), and the most common next event after each event name."""
    with _in_range(engine, query) as (cursor, stream):
        total = _run(cursor, "journey_count", {"converted": None})[0]["total"]
        rows = _run(cursor, "journey_transitions", stream)
    pairs, triples = [], []
    for row in rows:
        if row["third"] is None:
            pairs.append({**row, "sequence": [row["first"], row["second"]]})
        else:
            triples.append({**row, "sequence": [row["first"], row["second"], row["third"]]})
    return SequenceInsights(
        total_journeys=total,
        pairs=_top(pairs, total, limit),
        triples=_top(triples, total, limit),
        next_events=next_events(pairs),
    )


def journey_sequences(engine: Engine, query: JourneyRange, *, limit: int, offset: int) -> SequencePage:
    """Journeys started in the range as their entry names in time order, newest first (ties by journey
    key), paged."""
    with _in_range(engine, query) as (cursor, stream):
        total = _run(cursor, "journey_count", {"converted": None})[0]["total"]
        rows = _run(cursor, "journey_sequences", {**stream, "limit": limit, "offset": offset})
    return SequencePage(
        total=total,
        limit=limit,
        offset=offset,
        journeys=[JourneySequence(journey_id=r["journey_key"], sequence=r["sequence"]) for r in rows],
    )
