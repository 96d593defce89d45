"""Revenue of one site per currency, and how identified and anonymous people convert.

Orders are the source of truth for money: amounts stay Decimals beside their own currency, are never
converted and never summed across currencies, and are formatted with the currency's minor units."""

from __future__ import annotations

from datetime import date
from typing import Any

from aisle.wire import CamelModel
from queries import library
from queries.money import MoneyTotal, format_amount, money_total, per_unit
from queries.ranges import LocalDays
from queries.rates import rate
from warehouse.engine import Engine


class ReportRange(LocalDays):
    """Whole days of the site's time zone, both ends included."""


# --- response models -------------------------------------------------------------------------------


class CurrencySales(CamelModel):
    currency: str
    revenue: str
    orders: int
    avg_order_value: str
    refunds: int
    refunded: str
    net_revenue: str


class DailyCurrencyRevenue(CamelModel):
    currency: str
    revenue: str
    orders: int


class RevenueDay(CamelModel):
    date: date
    revenue_by_currency: list[DailyCurrencyRevenue]


class RevenueOverview(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    timezone: str
    orders: int
    refunds: int
    revenue_by_currency: list[CurrencySales]
    total_revenue: MoneyTotal
    total_net_revenue: MoneyTotal
    mixed_currency: bool
    daily: list[RevenueDay]


class GroupCurrencyRevenue(CamelModel):
    currency: str
    revenue: str
    orders: int
    buyers: int
    avg_order_value: str
    revenue_per_person: str


class PeopleGroup(CamelModel):
    people: int
    converters: int
    conversion_rate: float
    orders: int
    revenue_by_currency: list[GroupCurrencyRevenue]
    total_revenue: MoneyTotal


class IdentityConversionMetrics(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    timezone: str
    total_people: int
    identified_share: float
    identified: PeopleGroup
    anonymous: PeopleGroup
    conversion_rate_ratio: float | None
    mixed_currency: bool


# --- small pure helpers ----------------------------------------------------------------------------


# --- revenue overview ------------------------------------------------------------------------------


def revenue_overview(engine: Engine, report: ReportRange, *, site_currency: str) -> RevenueOverview:
    """Sales per currency of orders timed in the range (refund orders apart: their count and absolute
    amount, and sales net of them), cards that total only a single currency, and every day's sales."""
    params = report.params()
    rows = library.run(engine, "revenue_overview", params).to_pylist()
    daily_rows = library.run(engine, "revenue_daily", {**params, "timezone": report.timezone}).to_pylist()
    by_currency = [
        CurrencySales(
            currency=r["currency"],
            revenue=format_amount(r["revenue"], r["currency"]),
            orders=r["orders"],
            avg_order_value=per_unit(r["revenue"], r["orders"], r["currency"]),
            refunds=r["refunds"],
            refunded=format_amount(r["refunded"], r["currency"]),
            net_revenue=format_amount(r["revenue"] - r["refunded"], r["currency"]),
        )
        for r in rows
    ]
    currencies = [r["currency"] for r in rows if r["orders"]]
    sales = {(r["day"], r["currency"]): r for r in daily_rows}
    daily = [
        RevenueDay(
            date=day,
            revenue_by_currency=[
                DailyCurrencyRevenue(
                    currency=c,
                    revenue=format_amount(sales[day, c]["revenue"] if (day, c) in sales else 0, c),
                    orders=sales[day, c]["orders"] if (day, c) in sales else 0,
                )
                for c in currencies
            ],
        )
        for day in report.days()
    ]
    return RevenueOverview(
        site_id=report.site_id,
        start_date=report.start_date,
        end_date=report.end_date,
        timezone=report.timezone,
        orders=sum(r["orders"] for r in rows),
        refunds=sum(r["refunds"] for r in rows),
        revenue_by_currency=by_currency,
        total_revenue=money_total(
            [(r["currency"], r["revenue"]) for r in rows], empty_currency=site_currency
        ),
        total_net_revenue=money_total(
            [(r["currency"], r["revenue"] - r["refunded"]) for r in rows], empty_currency=site_currency
        ),
        mixed_currency=len(rows) > 1,
        daily=daily,
    )


# --- identified vs anonymous -----------------------------------------------------------------------


def _group(people: dict[str, int], revenue: list[dict[str, Any]], site_currency: str) -> PeopleGroup:
    count = people.get("people", 0)
    return PeopleGroup(
        people=count,
        converters=people.get("converters", 0),
        conversion_rate=rate(people.get("converters", 0), count),
        orders=sum(r["orders"] for r in revenue),
        revenue_by_currency=[
            GroupCurrencyRevenue(
                currency=r["currency"],
                revenue=format_amount(r["revenue"], r["currency"]),
                orders=r["orders"],
                buyers=r["buyers"],
                avg_order_value=per_unit(r["revenue"], r["orders"], r["currency"]),
                revenue_per_person=per_unit(r["revenue"], count, r["currency"]),
            )
            for r in revenue
        ],
        total_revenue=money_total(
            [(r["currency"], r["revenue"]) for r in revenue], empty_currency=site_currency
        ),
    )


def _ratio_of_rates(a: PeopleGroup, b: PeopleGroup) -> float | None:
    """How many times b's conversion rate a's is, from the counts; None when b has no converter."""
    if not (a.people and b.people and b.converters):
        return None
    return round((a.converters * b.people) / (a.people * b.converters), 6)


def identity_conversion_metrics(
    engine: Engine, report: ReportRange, *, site_currency: str
) -> IdentityConversionMetrics:
    """People active in the range (an event or a sale; a refund alone is none) split into identified (linked to a user id,
    at any time) and anonymous: how many, how many bought, and their sales per currency."""
    params = report.params()
    people = {r["identified"]: r for r in library.run(engine, "identity_people", params).to_pylist()}
    revenue = library.run(engine, "identity_revenue", params).to_pylist()
    identified = _group(people.get(True, {}), [r for r in revenue if r["identified"]], site_currency)
    anonymous = _group(people.get(False, {}), [r for r in revenue if not r["identified"]], site_currency)
    total = identified.people + anonymous.people
    return IdentityConversionMetrics(
        site_id=report.site_id,
        start_date=report.start_date,
        end_date=report.end_date,
        timezone=report.timezone,
        total_people=total,
        identified_share=rate(identified.people, total),
        identified=identified,
        anonymous=anonymous,
        conversion_rate_ratio=_ratio_of_rates(identified, anonymous),
        mixed_currency=len({r["currency"] for r in revenue}) > 1,
    )
