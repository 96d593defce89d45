"""Attribution: which campaigns, widgets and recommendations a conversion (and its revenue) is owed to.

Touchpoints are impressions and clicks whose ``entityType`` is ``campaign``, ``widget`` or
``recommendation`` (any case) with an ``entityId``, by the same person, strictly before the conversion
and within the lookback window. A conversion's touchpoints are ordered by time, then event id, and each
model gives them credits that sum to 1: ``first_touch`` / ``last_touch`` all to the first / last;
``linear`` 1/n each; ``time_decay`` weight 2^(-age / 7 days) (half-life 7 days, age = conversion time
minus touchpoint time), normalised; ``position_based`` 40% first, 40% last, 20% split evenly between
the others (one touchpoint: 100%; two: 50% each). Credits are split over every touchpoint of a
conversion, whatever entity it belongs to; an entity's credit is the sum of its touchpoints' credits,
its revenue that credit times the order total.

Conversions are orders timed in the range (refunds excluded) and ``purchase`` events in it that name no
sale; a purchase event whose ``metadata.orderId`` names a sale of the site (of any date; a refund is no
sale) is that same purchase, once, at the sale's time and with its money (other purchase events count
as conversions without money). Touchpoints may precede the range. Attributed revenue is the sum over
conversions of the entity's share (credit times order total, kept at 6 decimals), the row then rounded
to the currency's minor units; ``orders`` / ``conversions`` are summed credits (fractions of
conversions). Refunds are not netted from attributed revenue. ``assistedConversions``: conversions
with at least one touchpoint of the entity. ``ctr`` is clicks / impressions in the range (null without
impressions).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from aisle.wire import CamelModel
from queries import library
from queries.money import MoneyTotal, format_amount, money_total
from queries.rates import rate
from queries.revenue import ReportRange
from warehouse.engine import Engine

Model = Literal["first_touch", "last_touch", "linear", "time_decay", "position_based"]
MODELS: tuple[Model, ...] = ("first_touch", "last_touch", "linear", "time_decay", "position_based")
EntityType = Literal["campaign", "widget", "recommendation"]
ENTITY_TYPES: tuple[EntityType, ...] = ("campaign", "widget", "recommendation")

# Canonical names (ingest/event_names.py): exposures and clicks of placements, widgets and products.
IMPRESSION_NAMES = ("impression", "view", "widget_impression", "widget_view", "product_impression")
CLICK_NAMES = ("click", "product_click")
TOUCH_NAMES = IMPRESSION_NAMES + CLICK_NAMES

HALF_LIFE = timedelta(days=7)
DEFAULT_LOOKBACK_DAYS = 30
# Position based: the first and the last touchpoint get this share each, the ones between the rest.
POSITION_ENDS = 0.4

_US = 1_000_000


# --- the models ------------------------------------------------------------------------------------


def model_credits(
    touch_times: Sequence[datetime], conversion_at: datetime, *, half_life: timedelta = HALF_LIFE
) -> dict[Model, list[float]]:
    """Each touchpoint's credit per model, touchpoints given in credit order (time, then event id).
    first/last touch: 1 to the first/last; linear: 1/n; time decay: 2^(-age / half-life) normalised;
    position based: 1 for one touch, 1/2 each for two, else 0.4 first, 0.4 last, 0.2 split between."""
    n = len(touch_times)
    if n == 0:
        return {model: [] for model in MODELS}
    decay = [0.5 ** ((conversion_at - t) / half_life) for t in touch_times]
    weight = sum(decay)
    if n == 1:
        position = [1.0]
    elif n == 2:
        position = [0.5, 0.5]
    else:
        middle = (1 - 2 * POSITION_ENDS) / (n - 2)
        position = [POSITION_ENDS] + [middle] * (n - 2) + [POSITION_ENDS]
    return {
        "first_touch": [1.0] + [0.0] * (n - 1),
        "last_touch": [0.0] * (n - 1) + [1.0],
        "linear": [1 / n] * n,
        "time_decay": [d / weight for d in decay],
        "position_based": position,
    }


def share(credit: float, total: Decimal) -> Decimal:
    """A touchpoint's part of an order: credit × total at the lake's money scale (6 decimals)."""
    return (Decimal(credit) * total).quantize(Decimal("0.000001"))


# --- one conversion --------------------------------------------------------------------------------


class AmbiguousEventId(Exception):
    """The id names events (or orders) on more than one of the caller's sites."""


class TouchpointCredit(CamelModel):
    event_id: str
    name: str
    kind: Literal["impression", "click"]
    entity_type: str
    entity_id: str
    at: datetime
    credits: dict[str, float]


class EntityCredit(CamelModel):
    entity_type: str
    entity_id: str
    touchpoints: int
    credit: float
    revenue: str | None


class ModelAttribution(CamelModel):
    model: str
    entities: list[EntityCredit]


class ConversionOrder(CamelModel):
    order_id: str
    currency: str
    total: str


class EventAttribution(CamelModel):
    event_id: str
    site_id: str
    conversion_type: Literal["event", "order"]
    conversion_name: str
    person_id: str
    conversion_event_at: datetime
    order: ConversionOrder | None
    lookback_days: int
    window_start: datetime
    half_life_days: float
    total_touchpoints: int
    total_interactions: int
    total_impressions: int
    touchpoints: list[TouchpointCredit]
    models: list[ModelAttribution]


@dataclass(frozen=True)
class _Conversion:
    kind: Literal["event", "order"]
    site_id: str
    key: str
    name: str
    person_id: str
    at: datetime
    order: dict[str, Any] | None


def _one(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    if len(rows) > 1:
        raise AmbiguousEventId
    return rows[0] if rows else None


def _find_conversion(engine: Engine, *, site_ids: list[str], event_id: str) -> _Conversion | None:
    event = _one(
        library.run(
            engine, "attribution_conversion_event", {"site_ids": site_ids, "event_id": event_id}
        ).to_pylist()
    )
    if event is not None:
        order = None
        if event["order_ref"]:
            found = library.run(
                engine,
                "attribution_conversion_order",
                {"site_ids": [event["site_id"]], "order_id": event["order_ref"]},
            )
            order = next(iter(found.to_pylist()), None)
        return _Conversion(
            "event",
            event["site_id"],
            event["event_id"],
            event["name"],
            event["person_id"],
            event["ts"],
            order,
        )
    order = _one(
        library.run(
            engine, "attribution_conversion_order", {"site_ids": site_ids, "order_id": event_id}
        ).to_pylist()
    )
    if order is None:
        return None
    return _Conversion(
        "order", order["site_id"], order["order_id"], "purchase", order["person_id"], order["ts"], order
    )


def event_attribution(
    engine: Engine, *, site_ids: list[str], event_id: str, lookback_days: int = DEFAULT_LOOKBACK_DAYS
) -> EventAttribution | None:
    """The touchpoints before one conversion, the event `event_id` (or, when no event has that id, the
    order), with each touchpoint's credit per model and per-model credit and revenue per entity.
    None when the id is unknown on these sites."""
    if not site_ids:
        return None
    conversion = _find_conversion(engine, site_ids=site_ids, event_id=event_id)
    if conversion is None:
        return None
    at = conversion.at.astimezone(UTC)
    start = at - timedelta(days=lookback_days)
    rows = library.run(
        engine,
        "attribution_person_touchpoints",
        {
            "site_id": conversion.site_id,
            "person_id": conversion.person_id,
            "touch_start": start,
            "conversion_at": at,
            "scan_start": start.date(),
            "scan_end": at.date(),
            "touch_names": list(TOUCH_NAMES),
            "click_names": list(CLICK_NAMES),
            "entity_types": list(ENTITY_TYPES),
        },
    ).to_pylist()
    credits = model_credits([r["ts"] for r in rows], at)
    order = conversion.order
    touchpoints = [
        TouchpointCredit(
            event_id=r["event_id"],
            name=r["name"],
            kind="click" if r["is_click"] else "impression",
            entity_type=r["entity_type"],
            entity_id=r["entity_id"],
            at=r["ts"],
            credits={model: round(credits[model][i], 6) for model in MODELS},
        )
        for i, r in enumerate(rows)
    ]
    models = []
    for model in MODELS:
        per_entity: dict[tuple[str, str], list[float]] = defaultdict(list)
        for r, credit in zip(rows, credits[model], strict=True):
            per_entity[r["entity_type"], r["entity_id"]].append(credit)
        entities = [
            EntityCredit(
                entity_type=entity_type,
                entity_id=entity_id,
                touchpoints=len(parts),
                credit=round(sum(parts), 6),
                revenue=None
                if order is None
                else format_amount(sum(share(c, order["total"]) for c in parts), order["currency"]),
            )
            for (entity_type, entity_id), parts in per_entity.items()
        ]
        entities.sort(key=lambda e: (-e.credit, e.entity_type, e.entity_id))
        models.append(ModelAttribution(model=model, entities=entities))
    clicks = sum(1 for r in rows if r["is_click"])
    return EventAttribution(
        event_id=event_id,
        site_id=conversion.site_id,
        conversion_type=conversion.kind,
        conversion_name=conversion.name,
        person_id=conversion.person_id,
        conversion_event_at=at,
        order=None
        if order is None
        else ConversionOrder(
            order_id=order["order_id"],
            currency=order["currency"],
            total=format_amount(order["total"], order["currency"]),
        ),
        lookback_days=lookback_days,
        window_start=start,
        half_life_days=HALF_LIFE / timedelta(days=1),
        total_touchpoints=len(rows),
        total_interactions=clicks,
        total_impressions=len(rows) - clicks,
        touchpoints=touchpoints,
        models=models,
    )


# --- many conversions: revenue per entity ----------------------------------------------------------


class AttributedCurrency(CamelModel):
    currency: str
    revenue: str
    orders: float


class ModelRevenue(CamelModel):
    model: str
    conversions: float
    revenue_by_currency: list[AttributedCurrency]
    total_revenue: MoneyTotal


class EntityRevenue(CamelModel):
    site_id: str
    entity_type: str
    entity_id: str
    start_date: date
    end_date: date
    timezone: str
    lookback_days: int
    half_life_days: float
    impressions: int
    clicks: int
    ctr: float | None
    people: int
    assisted_conversions: int
    models: list[ModelRevenue]


def _credit_params(report: ReportRange, lookback_days: int) -> dict[str, Any]:
    params = report.params()
    touch_start = params["range_start"] - timedelta(days=lookback_days)
    return {
        **params,
        "touch_start": touch_start,
        "touch_scan_start": touch_start.astimezone(UTC).date(),
        "lookback_us": lookback_days * 86_400 * _US,
        "half_life_us": int(HALF_LIFE / timedelta(microseconds=1)),
        "touch_names": list(TOUCH_NAMES),
        "entity_types": list(ENTITY_TYPES),
    }


def _count_params(report: ReportRange) -> dict[str, Any]:
    return {
        **report.params(),
        "impression_names": list(IMPRESSION_NAMES),
        "click_names": list(CLICK_NAMES),
        "entity_types": list(ENTITY_TYPES),
    }


def attributed_rows(
    engine: Engine,
    report: ReportRange,
    *,
    entity_type: str | None,
    entity_id: str | None,
    lookback_days: int = DEFAULT_LOOKBACK_DAYS,
) -> list[dict[str, Any]]:
    """Per entity and currency (None: purchases without an order): conversions touched, and per model
    the credited conversions (`<model>_conversions`) and revenue (`<model>_revenue`, unrounded)."""
    params = {**_credit_params(report, lookback_days), "entity_type": entity_type, "entity_id": entity_id}
    return library.run(engine, "attribution_credits", params).to_pylist()


def touchpoint_counts(
    engine: Engine, report: ReportRange, *, entity_type: str | None, entity_id: str | None
) -> list[dict[str, Any]]:
    """Per entity: impressions, clicks and people in the range."""
    params = {**_count_params(report), "entity_type": entity_type, "entity_id": entity_id}
    return library.run(engine, "attribution_touchpoint_counts", params).to_pylist()


def _model_revenue(rows: list[dict[str, Any]], model: str, site_currency: str) -> ModelRevenue:
    """One model's credited conversions (moneyless purchases included) and revenue per currency,
    over rows of `attributed_rows` (of one entity or several); a card without revenue is zero in the
    site's currency, as on the revenue overview."""
    by_currency: dict[str, list[Any]] = {}
    for r in rows:
        if r["currency"] is not None:
            slot = by_currency.setdefault(r["currency"], [Decimal(0), 0.0])
            slot[0] += r[f"{model}_revenue"]
            slot[1] += r[f"{model}_conversions"]
    return ModelRevenue(
        model=model,
        conversions=round(sum(r[f"{model}_conversions"] for r in rows), 6),
        revenue_by_currency=[
            AttributedCurrency(currency=c, revenue=format_amount(revenue, c), orders=round(orders, 6))
            for c, (revenue, orders) in sorted(by_currency.items())
        ],
        total_revenue=money_total(
            [(c, revenue) for c, (revenue, _) in by_currency.items()], empty_currency=site_currency
        ),
    )


def _ctr(clicks: int, impressions: int) -> float | None:
    return rate(clicks, impressions) if impressions else None


def entity_revenue(
    engine: Engine,
    report: ReportRange,
    *,
    entity_type: EntityType,
    entity_id: str,
    site_currency: str,
    lookback_days: int = DEFAULT_LOOKBACK_DAYS,
) -> EntityRevenue:
    """Revenue attributed to one campaign, widget or recommendation per model and currency, over the
    conversions timed in the range; its impressions, clicks and reach in the range."""
    rows = attributed_rows(
        engine, report, entity_type=entity_type, entity_id=entity_id, lookback_days=lookback_days
    )
    counts = touchpoint_counts(engine, report, entity_type=entity_type, entity_id=entity_id)
    count = counts[0] if counts else {"impressions": 0, "clicks": 0, "people": 0}
    return EntityRevenue(
        site_id=report.site_id,
        entity_type=entity_type,
        entity_id=entity_id,
        start_date=report.start_date,
        end_date=report.end_date,
        timezone=report.timezone,
        lookback_days=lookback_days,
        half_life_days=HALF_LIFE / timedelta(days=1),
        impressions=count["impressions"],
        clicks=count["clicks"],
        ctr=_ctr(count["clicks"], count["impressions"]),
        people=count["people"],
        assisted_conversions=sum(r["touched_conversions"] for r in rows),
        models=[_model_revenue(rows, model, site_currency) for model in MODELS],
    )


# --- recommendations breakdown ---------------------------------------------------------------------


class RecommendationRow(CamelModel):
    recommendation_id: str
    impressions: int
    clicks: int
    ctr: float | None
    people: int
    assisted_conversions: int
    attributed_conversions: float
    revenue_by_currency: list[AttributedCurrency]
    total_revenue: MoneyTotal


class RecommendationsBreakdown(CamelModel):
    site_id: str
    start_date: date
    end_date: date
    timezone: str
    model: str
    lookback_days: int
    half_life_days: float
    total: int
    limit: int
    offset: int
    impressions: int
    clicks: int
    ctr: float | None
    attributed_conversions: float
    revenue_by_currency: list[AttributedCurrency]
    total_revenue: MoneyTotal
    recommendations: list[RecommendationRow]


def recommendations_breakdown(
    engine: Engine,
    report: ReportRange,
    *,
    site_currency: str,
    model: Model = "last_touch",
    lookback_days: int = DEFAULT_LOOKBACK_DAYS,
    limit: int = 50,
    offset: int = 0,
) -> RecommendationsBreakdown:
    """Every recommendation with impressions or clicks in the range, or a touchpoint of a conversion
    in the range (an assisted conversion, listed even when `model` gives it no credit): its counts,
    CTR (clicks / impressions), credited conversions and revenue per currency. Most clicked first,
    then most seen, then by id."""
    counts = {
        r["entity_id"]: r
        for r in touchpoint_counts(engine, report, entity_type="recommendation", entity_id=None)
    }
    credited: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in attributed_rows(
        engine, report, entity_type="recommendation", entity_id=None, lookback_days=lookback_days
    ):
        credited[r["entity_id"]].append(r)
    rows = []
    for rec_id in counts.keys() | credited.keys():
        count = counts.get(rec_id, {"impressions": 0, "clicks": 0, "people": 0})
        revenue = _model_revenue(credited.get(rec_id, []), model, site_currency)
        rows.append(
            RecommendationRow(
                recommendation_id=rec_id,
                impressions=count["impressions"],
                clicks=count["clicks"],
                ctr=_ctr(count["clicks"], count["impressions"]),
                people=count["people"],
                assisted_conversions=sum(r["touched_conversions"] for r in credited.get(rec_id, [])),
                attributed_conversions=revenue.conversions,
                revenue_by_currency=revenue.revenue_by_currency,
                total_revenue=revenue.total_revenue,
            )
        )
    rows.sort(key=lambda r: (-r.clicks, -r.impressions, r.recommendation_id))
    overall = _model_revenue([r for rs in credited.values() for r in rs], model, site_currency)
    impressions = sum(c["impressions"] for c in counts.values())
    clicks = sum(c["clicks"] for c in counts.values())
    return RecommendationsBreakdown(
        site_id=report.site_id,
        start_date=report.start_date,
        end_date=report.end_date,
        timezone=report.timezone,
        model=model,
        lookback_days=lookback_days,
        half_life_days=HALF_LIFE / timedelta(days=1),
        total=len(rows),
        limit=limit,
        offset=offset,
        impressions=impressions,
        clicks=clicks,
        ctr=_ctr(clicks, impressions),
        attributed_conversions=overall.conversions,
        revenue_by_currency=overall.revenue_by_currency,
        total_revenue=overall.total_revenue,
        recommendations=rows[offset : offset + limit],
    )
