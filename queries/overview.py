"""Overview numbers for one site or all sites of an organisation: counts, per-currency revenue,
events by name, and a daily trend. Days are UTC calendar days of the lake's partitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from ingest.event_names import EVENT_FAMILIES
from queries import library
from queries.money import format_amount, per_unit
from queries.rates import rate
from warehouse.engine import Engine

FAMILY_OF = {name: family for family, names in EVENT_FAMILIES.items() for name in names}


@dataclass(frozen=True)
class Scope:
    site_ids: tuple[str, ...]
    start_date: date
    end_date: date

    @classmethod
    def last_days(cls, site_ids: list[str], days: int, *, today: date) -> Scope:
        return cls(tuple(site_ids), today - timedelta(days=days - 1), today)

    def params(self) -> dict[str, Any]:
        return {"site_ids": list(self.site_ids), "start_date": self.start_date, "end_date": self.end_date}

    def describe(self) -> dict[str, Any]:
        return {
            "siteIds": list(self.site_ids),
            "startDate": self.start_date.isoformat(),
            "endDate": self.end_date.isoformat(),
        }


def revenue_by_currency(engine: Engine, scope: Scope) -> list[dict[str, Any]]:
    """One row per currency: revenue (sales, refunds excluded), orders, average order value, refunded."""
    table = library.run(engine, "revenue_by_currency", scope.params()).to_pylist()
    return [
        {
            "currency": row["currency"],
            # In the currency's minor units, as every amount the analytics answer (queries.money).
            "revenue": format_amount(row["revenue"] or 0, row["currency"]),
            "orders": row["orders"],
            "avgOrderValue": per_unit(row["revenue"] or 0, row["orders"], row["currency"]),
            "refunded": format_amount(row["refunded"] or 0, row["currency"]),
        }
        for row in table
    ]


def event_breakdown(engine: Engine, scope: Scope) -> list[dict[str, Any]]:
    rows = library.run(engine, "event_breakdown", scope.params()).to_pylist()
    return [
        {"name": r["name"], "family": FAMILY_OF.get(r["name"]), "count": r["events"], "people": r["people"]}
        for r in rows
    ]


def overview(engine: Engine, scope: Scope) -> dict[str, Any]:
    """Counts of events, people (across devices), sessions, page views and orders; the share of people
    who bought; revenue per currency with a `mixedCurrency` flag, never one total across currencies.
    People are everyone with an event or a sale in the range (a refund is the shop's doing, not the
    person's), sessions those of the range's events, page views `page_view` and `virtual_page_view`
    events (a single-page storefront's route changes); buyers have a sale or a `purchase` event that
    names no sale of its site (one naming a sale is that sale, whenever it was)."""
    totals = library.run(engine, "overview_totals", scope.params()).to_pylist()[0]
    revenue = revenue_by_currency(engine, scope)
    return {
        "scope": scope.describe(),
        "totals": {
            "events": totals["events"],
            "people": totals["people"],
            "sessions": totals["sessions"],
            "pageViews": totals["page_views"],
            "orders": totals["orders"],
        },
        "purchaseConversionRate": rate(totals["buyers"], totals["people"]),
        "revenueByCurrency": revenue,
        "mixedCurrency": len(revenue) > 1,
        "topEvents": event_breakdown(engine, scope)[:10],
    }


def daily_activity(engine: Engine, scope: Scope) -> list[dict[str, Any]]:
    """Every day of the range, zeros included."""
    rows = {r["date"]: r for r in library.run(engine, "daily_activity", scope.params()).to_pylist()}
    days = (scope.end_date - scope.start_date).days + 1
    out = []
    for offset in range(days):
        day = scope.start_date + timedelta(days=offset)
        row = rows.get(day, {"events": 0, "people": 0})
        out.append({"date": day.isoformat(), "events": row["events"], "people": row["people"]})
    return out
