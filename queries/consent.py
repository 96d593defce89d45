"""Consent analytics: opt-in rates, trends, the impact of a category, changes of mind, the consent
log, and a replay of past events through a consent gate.

Consent reaches the lake two ways: consent records (the public consent route,
``POST /public/sites/:siteKey/consent``; table ``consents``) and the ``consent`` fields of events
(orders' consent fields are not read). Both are observations of a person's state: each states some of
the four categories necessary, analytics, marketing, preferences as granted (true) or refused (false)
and leaves the others unstated. Except in the replay (the state at each instant), a person's state for
a category over a range is the value of their latest observation in the range that states it;
observations of the same microsecond are ordered event first, record last (an explicit decision wins),
then by id. People are the linked user when a visitor was ever identified (or the record's own
``userId``), else the visitor. Rates are part / whole rounded to 6 places, 0 when the whole is 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

import duckdb
from pydantic import Field

from aisle.wire import CamelModel
from ingest.consent import CATEGORIES, Category
from queries import library
from queries.cohort import add_periods, bucket_start
from queries.money import MoneyTotal, format_amount, money_total, per_unit
from queries.ranges import LocalDays
from queries.rates import rate
from warehouse.engine import Engine

Interval = Literal["day", "week", "month"]
ExportKind = Literal["all", "record", "event"]
OPTIONAL = ("analytics", "marketing", "preferences")
Group = Literal["granted", "denied", "unstated"]
GROUPS: tuple[Group, ...] = ("granted", "denied", "unstated")
MAX_PERIODS = 800
EXPORT_BATCH_ROWS = 1000

DESCRIPTIONS = {
    "necessary": "Strictly necessary storage and processing; the storefront cannot work without it.",
    "analytics": "Measurement of visits and behaviour (this service's analytics).",
    "marketing": "Advertising, retargeting and forwarding to marketing providers.",
    "preferences": "Remembering choices such as language, region or recently viewed products.",
}


class ConsentRange(LocalDays):
    """A site and inclusive days in its time zone."""


# --- response models -----------------------------------------------------------------------------------


class CategoryRate(CamelModel):
    category: Category
    granted: int = Field(description="People whose latest stated value in the range is granted.")
    denied: int = Field(description="People whose latest stated value in the range is refused.")
    decided: int = Field(description="granted + denied.")
    unstated: int = Field(description="People with consent observations who never stated this category.")
    opt_in_rate: float = Field(description="granted / decided (0 when nobody decided).")


class Choices(CamelModel):
    decided: int = Field(description="People whose latest values state analytics, marketing and preferences.")
    accept_all: int
    reject_all: int
    custom: int
    accept_all_rate: float
    reject_all_rate: float
    custom_rate: float


class ConsentStats(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    people: int = Field(description="People with at least one consent observation in the range.")
    consent_records: int
    events_with_consent: int
    categories: list[CategoryRate]
    choices: Choices


class CategoryDetail(CategoryRate):
    description: str
    required: bool = Field(description="True for `necessary`: it cannot be refused in a consent banner.")
    grants: int = Field(description="Changes from refused to granted between consecutive stated values.")
    revocations: int = Field(description="Changes from granted to refused.")
    people_changed: int


class ConsentCategories(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    people: int
    categories: list[CategoryDetail]


class PeriodCategory(CamelModel):
    category: Category
    granted: int
    denied: int
    opt_in_rate: float


class TrendPeriod(CamelModel):
    period_start: date
    people: int
    consent_records: int
    categories: list[PeriodCategory]


class ConsentTrends(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    interval: Interval
    periods: list[TrendPeriod]


class CurrencyRevenue(CamelModel):
    currency: str
    revenue: str
    orders: int
    avg_order_value: str


class ImpactGroup(CamelModel):
    group: Group
    people: int
    events: int
    events_per_person: float
    conversions: int = Field(description="People with a sale (order or `purchase` event) in the range.")
    conversion_rate: float
    orders: int
    revenue_by_currency: list[CurrencyRevenue]
    revenue: MoneyTotal


class ConsentImpact(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    consent_category: Category
    groups: list[ImpactGroup]


class SimulationSettings(CamelModel):
    granular_enabled: bool
    required_categories: list[Category] = Field(description="The categories the gate needed.")
    timeout_ms: int


class ConsentSimulation(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    settings: SimulationSettings
    total_events: int
    people: int
    sent: int
    delayed: int
    dropped: int
    dropped_refused: int = Field(description="Dropped while a required category was stated refused.")
    dropped_undecided: int = Field(description="Dropped while a required category was never stated.")
    sent_share: float
    delayed_share: float
    dropped_share: float
    avg_delay_ms: float = Field(description="Mean wait of the delayed events (0 when none).")
    max_delay_ms: float


class ExportRow(CamelModel):
    kind: Literal["record", "event"]
    id: str
    timestamp: datetime
    person_id: str
    visitor_id: str
    session_id: str | None
    user_id: str | None
    source: str | None
    channel: str | None
    necessary: bool | None
    analytics: bool | None
    marketing: bool | None
    preferences: bool | None


# --- small pure helpers ----------------------------------------------------------------------------------


def category_rate(category: Category, granted: int, denied: int, people: int) -> CategoryRate:
    decided = granted + denied
    return CategoryRate(
        category=category,
        granted=granted,
        denied=denied,
        decided=decided,
        unstated=people - decided,
        opt_in_rate=rate(granted, decided),
    )


def periods_of(start: date, end: date, interval: Interval) -> list[date]:
    """The first days of the calendar periods (day; ISO week from Monday; month) touching the range."""
    first = bucket_start(start, interval)
    periods: list[date] = []
    while (day := add_periods(first, len(periods), interval)) <= end:
        periods.append(day)
    return periods


# --- running on one cursor ---------------------------------------------------------------------------------


_rows = library.rows_on


@contextmanager
def _observed(engine: Engine, query: ConsentRange) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor holding the temporary tables `consent_observations` and `consent_states` of the range."""
    cursor = engine.cursor()
    try:
        cursor.execute(library.sql("consent_observations"), query.params())
        cursor.execute(library.sql("consent_states"))
        yield cursor
    finally:
        cursor.close()


def _stats_on(cursor: duckdb.DuckDBPyConnection, query: ConsentRange) -> ConsentStats:
    totals = _rows(cursor, "consent_totals", {})[0]
    counts = {r["category"]: r for r in _rows(cursor, "consent_stats", {})}
    people = totals["people"]
    categories = [
        category_rate(c, counts.get(c, {}).get("granted", 0), counts.get(c, {}).get("denied", 0), people)
        for c in CATEGORIES
    ]
    decided, accept, reject = totals["decided"], totals["accept_all"], totals["reject_all"]
    choices = Choices(
        decided=decided,
        accept_all=accept,
        reject_all=reject,
        custom=decided - accept - reject,
        accept_all_rate=rate(accept, decided),
        reject_all_rate=rate(reject, decided),
        custom_rate=rate(decided - accept - reject, decided),
    )
    return ConsentStats(
        site_id=query.site_id,
        start_date=query.start_date,
        end_date=query.end_date,
        people=people,
        consent_records=totals["records"],
        events_with_consent=totals["stated_events"],
        categories=categories,
        choices=choices,
    )


# --- the reports -----------------------------------------------------------------------------------------


def consent_stats(engine: Engine, query: ConsentRange) -> ConsentStats:
    """Opt-in rate per category over people with a consent observation in the range, each counted once
    with their latest stated value; accept-all / reject-all / custom over people whose latest values
    state all three optional categories (analytics, marketing, preferences)."""
    with _observed(engine, query) as cursor:
        return _stats_on(cursor, query)


def consent_categories(engine: Engine, query: ConsentRange) -> ConsentCategories:
    """Per category: the opt-in figures of ``consent_stats`` plus changes of mind in the range
    (consecutive stated values of one person that differ)."""
    with _observed(engine, query) as cursor:
        stats = _stats_on(cursor, query)
        changes = {r["category"]: r for r in _rows(cursor, "consent_changes", {})}
    details = []
    for figures in stats.categories:
        change = changes.get(figures.category, {})
        details.append(
            CategoryDetail(
                **figures.model_dump(),
                description=DESCRIPTIONS[figures.category],
                required=figures.category == "necessary",
                grants=change.get("grants", 0),
                revocations=change.get("revocations", 0),
                people_changed=change.get("people_changed", 0),
            )
        )
    return ConsentCategories(
        site_id=query.site_id,
        start_date=query.start_date,
        end_date=query.end_date,
        people=stats.people,
        categories=details,
    )


class TooManyPeriods(ValueError):
    pass


def consent_trends(engine: Engine, query: ConsentRange, *, interval: Interval) -> ConsentTrends:
    """Per calendar period of the site's time zone (every period touching the range, empty ones with
    zeros): people with an observation in it, consent records, and per category people whose latest
    stated value within that period is granted or refused, with the opt-in rate. Only observations
    inside the range count, also in a first or last period that reaches beyond it."""
    firsts = periods_of(query.start_date, query.end_date, interval)
    if len(firsts) > MAX_PERIODS:
        raise TooManyPeriods(f"the range spans {len(firsts)} {interval}s; at most {MAX_PERIODS} are allowed")
    starts = [datetime.combine(d, time.min, query.zone) for d in firsts]
    ends = [*starts[1:], datetime.combine(add_periods(firsts[-1], 1, interval), time.min, query.zone)]
    with _observed(engine, query) as cursor:
        rows = _rows(cursor, "consent_trends", {"starts": starts, "ends": ends})
    by_period: dict[int, dict[str, Any]] = {}
    for row in rows:
        slot = by_period.setdefault(row["period"], {"people": row["people"], "records": row["records"]})
        slot[row["category"]] = (row["granted"], row["denied"])
    periods = []
    for index, first in enumerate(firsts, start=1):
        slot = by_period.get(index, {"people": 0, "records": 0})
        categories = [
            PeriodCategory(category=c, granted=g, denied=d, opt_in_rate=rate(g, g + d))
            for c in CATEGORIES
            for g, d in [slot.get(c, (0, 0))]
        ]
        periods.append(
            TrendPeriod(
                period_start=first,
                people=slot["people"],
                consent_records=slot["records"],
                categories=categories,
            )
        )
    return ConsentTrends(
        site_id=query.site_id,
        start_date=query.start_date,
        end_date=query.end_date,
        interval=interval,
        periods=periods,
    )


def _revenue_rows(rows: list[dict[str, Any]]) -> list[CurrencyRevenue]:
    return [
        CurrencyRevenue(
            currency=r["currency"],
            revenue=format_amount(r["revenue"], r["currency"]),
            orders=r["orders"],
            avg_order_value=per_unit(r["revenue"], r["orders"], r["currency"]),
        )
        for r in rows
    ]


def consent_impact(engine: Engine, query: ConsentRange, *, category: Category) -> ConsentImpact:
    """Everyone active in the range (an event, a sale or a consent observation; a refund is no activity),
    split by their latest stated value of ``category`` in the range: granted, denied, unstated. Per
    group: people, events, converters (people with a sale, or a purchase event naming no sale of the
    site), sales and revenue per currency (orders that are not refunds)."""
    with _observed(engine, query) as cursor:
        cursor.execute(library.sql("consent_groups"), {**query.params(), "category": category})
        activity = {r["consent_group"]: r for r in _rows(cursor, "consent_impact_activity", query.params())}
        revenue = _rows(cursor, "consent_impact_revenue", query.params())
    groups = []
    for group in GROUPS:
        row = activity.get(group, {"people": 0, "events": 0, "converters": 0, "orders": 0})
        sales = [r for r in revenue if r["consent_group"] == group]
        groups.append(
            ImpactGroup(
                group=group,
                people=row["people"],
                events=int(row["events"]),
                events_per_person=round(int(row["events"]) / row["people"], 6) if row["people"] else 0.0,
                conversions=row["converters"],
                conversion_rate=rate(row["converters"], row["people"]),
                orders=int(row["orders"]),
                revenue_by_currency=_revenue_rows(sales),
                revenue=money_total(
                    ((r["currency"], r["revenue"]) for r in sales), empty_currency=query.currency
                ),
            )
        )
    return ConsentImpact(
        site_id=query.site_id,
        start_date=query.start_date,
        end_date=query.end_date,
        consent_category=category,
        groups=groups,
    )


def iter_consent_log(
    engine: Engine, query: ConsentRange, *, kind: ExportKind = "all", limit: int
) -> Iterator[ExportRow]:
    """The observations of the range in time order (a record after an event of the same microsecond),
    at most ``limit``, fetched in batches so an export never holds them all at once."""
    with _observed(engine, query) as cursor:
        reader = cursor.sql(library.sql("consent_export"), params={"kind": kind, "limit": limit})
        for batch in reader.to_arrow_reader(EXPORT_BATCH_ROWS):
            for row in batch.to_pylist():
                yield ExportRow(timestamp=row.pop("ts"), **row)


def simulate_consent(
    engine: Engine, query: ConsentRange, *, granular: bool, required: list[str], timeout_ms: int
) -> ConsentSimulation:
    """Replay the events of the range through a consent gate. Non-granular: one switch covers every
    category, so the gate needs all four granted; granular: it needs ``required`` (none: all sent).
    See ``consent_simulate.sql`` for sent / delayed / dropped."""
    gate: list[Category] = list(CATEGORIES) if not granular else [c for c in CATEGORIES if c in set(required)]
    timeout_us = timeout_ms * 1000
    wait_end = query.range_end + timedelta(microseconds=timeout_us)
    params = {
        "site_id": query.site_id,
        "range_start": query.range_start,
        "range_end": query.range_end,
        "wait_end": wait_end,
        "scan_start": query.range_start.astimezone(UTC).date(),
        "scan_end": wait_end.astimezone(UTC).date(),
        "timeout_us": timeout_us,
        **{f"need_{c}": c in gate for c in CATEGORIES},
    }
    cursor = engine.cursor()
    try:
        row = _rows(cursor, "consent_simulate", params)[0]
    finally:
        cursor.close()
    events, delayed = row["events"], row["delayed"]
    return ConsentSimulation(
        site_id=query.site_id,
        start_date=query.start_date,
        end_date=query.end_date,
        settings=SimulationSettings(
            granular_enabled=granular, required_categories=gate, timeout_ms=timeout_ms
        ),
        total_events=events,
        people=row["people"],
        sent=row["sent"],
        delayed=delayed,
        dropped=row["dropped"],
        dropped_refused=row["dropped_refused"],
        dropped_undecided=row["dropped"] - row["dropped_refused"],
        sent_share=rate(row["sent"], events),
        delayed_share=rate(delayed, events),
        dropped_share=rate(row["dropped"], events),
        avg_delay_ms=round(int(row["delay_us_total"]) / delayed / 1000, 3) if delayed else 0.0,
        max_delay_ms=round(int(row["delay_us_max"]) / 1000, 3),
    )
