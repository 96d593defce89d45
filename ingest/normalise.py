"""Validation and normalisation of single events and orders into lake rows.

Every function here is pure: given the wire dict, the site and the receive time it returns the row
that goes to the durable log, or raises ``Rejected`` with a stable code and a reason.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import orjson
from pydantic import ValidationError

from ingest.currency import is_iso4217, resolve_currency
from ingest.event_names import CANONICAL_EVENT_NAMES, EVENT_FAMILIES
from ingest.schemas import MAX_EVENT_BYTES, EventIn, MetricIn, OrderIn

PRODUCT_EVENTS = frozenset(EVENT_FAMILIES["product"])
CATEGORY_EVENTS = frozenset(EVENT_FAMILIES["category"])
UNKNOWN_CATEGORY = "unknown"

MONEY_SCALE = 6
MONEY_LIMIT = Decimal(10) ** 17
# Storefront clocks drift; anything further out than this is a broken client, not skew.
PUBLIC_MAX_AGE = timedelta(days=7)
MAX_FUTURE = timedelta(minutes=10)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)


class Rejected(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Context:
    """What the server knows about a request, beyond its body."""

    site_id: str
    site_currency: str
    received_at: datetime
    channel: str  # web, mobile, server (private track), import
    historical: bool = False  # private routes and imports accept old timestamps
    sent_at: datetime | None = None
    client_platform: str | None = None
    client_version: str | None = None


def micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def event_time(raw: datetime | None, ctx: Context) -> datetime:
    """Server time when absent; shifted by the batch's clock skew (received - sentAt) when known."""
    if raw is None:
        return ctx.received_at
    moment = _aware(raw)
    if ctx.sent_at is not None:
        moment += ctx.received_at - _aware(ctx.sent_at)
    earliest = EARLIEST if ctx.historical else ctx.received_at - PUBLIC_MAX_AGE
    if moment > ctx.received_at + MAX_FUTURE:
        raise Rejected("TIMESTAMP_IN_FUTURE", "timestamp is in the future (after clock-skew correction)")
    if moment < earliest:
        raise Rejected(
            "TIMESTAMP_TOO_OLD",
            "timestamp is older than 7 days; send historical data through /analytics/track or `aisle import`"
            if not ctx.historical
            else "timestamp is before 2000-01-01",
        )
    return moment


def money(value: Decimal | None, field: str) -> str | None:
    if value is None:
        return None
    if not value.is_finite() or abs(value) >= MONEY_LIMIT:
        raise Rejected("AMOUNT_INVALID", f"{field} must be a finite amount below 10^17")
    if value != value.quantize(Decimal(1).scaleb(-MONEY_SCALE)):
        raise Rejected("AMOUNT_TOO_PRECISE", f"{field} has more than {MONEY_SCALE} decimal places")
    return format(value, "f")


def _currency(code: str | None, *fallbacks: str | None) -> str:
    if code is not None and not is_iso4217(code.strip().upper()):
        raise Rejected("CURRENCY_NOT_ISO4217", f"'{code}' is not an ISO-4217 currency code")
    return resolve_currency(code, *fallbacks)


def _validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "event"
    return f"{where}: {first['msg']}"


def _consent(consent) -> dict[str, bool | None]:
    return {
        f"consent_{k}": getattr(consent, k) if consent else None
        for k in ("necessary", "analytics", "marketing", "preferences")
    }


def _common(ctx: Context) -> dict[str, Any]:
    return {
        "received_at": micros(ctx.received_at),
        "channel": ctx.channel,
        "client_platform": ctx.client_platform,
        "client_version": ctx.client_version,
        "site_id": ctx.site_id,
    }


def event_row(raw: Any, ctx: Context) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Rejected("EVENT_NOT_OBJECT", "each event must be a JSON object")
    if len(orjson.dumps(raw)) > MAX_EVENT_BYTES:
        raise Rejected("EVENT_TOO_LARGE", f"event is larger than {MAX_EVENT_BYTES} bytes as JSON")
    name = raw.get("name")
    if name not in CANONICAL_EVENT_NAMES:
        raise Rejected("UNKNOWN_EVENT_NAME", f"'{name}' is not a canonical event name")
    try:
        event = EventIn.model_validate(raw)
    except ValidationError as exc:
        code = (
            "TIMESTAMP_INVALID"
            if any(e["loc"][:1] == ("timestamp",) for e in exc.errors())
            else "INVALID_EVENT"
        )
        raise Rejected(code, _validation_reason(exc)) from exc
    metadata = event.metadata
    product_code = metadata.get("productItemCode")
    if product_code is not None and not isinstance(product_code, str | int):
        raise Rejected("MISSING_PRODUCT_CODE", "metadata.productItemCode must be a string")
    product_code = str(product_code).strip() if product_code is not None else None
    if name in PRODUCT_EVENTS and not product_code:
        raise Rejected("MISSING_PRODUCT_CODE", f"'{name}' needs metadata.productItemCode")
    category_path = None
    if name in CATEGORY_EVENTS:
        category_path = metadata.get("categoryPath") or event.entity_id or UNKNOWN_CATEGORY
        category_path = str(category_path)
    elif isinstance(metadata.get("categoryPath"), str):
        category_path = metadata["categoryPath"]
    moment = event_time(event.timestamp, ctx)
    value = money(event.value, "value")
    currency = _currency(event.currency, metadata.get("currency") if isinstance(metadata.get("currency"), str) else None,
                         ctx.site_currency)  # fmt: skip
    return {
        "event_id": event.event_id or uuid.uuid4().hex,
        "name": name,
        "ts": micros(moment),
        "visitor_id": event.visitor_id,
        "session_id": event.session_id,
        "journey_id": event.journey_id,
        "user_id": event.user_id,
        "entity_type": event.entity_type,
        "entity_id": event.entity_id,
        "url": event.url,
        "referrer": event.referrer,
        "metadata": orjson.dumps(metadata).decode(),
        "product_item_code": product_code,
        "category_path": category_path,
        "currency": currency,
        "value": value,
        **_consent(event.consent),
        **_common(ctx),
        "date": moment.astimezone(UTC).date().isoformat(),
    }


def order_row(raw: Any, ctx: Context) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Rejected("ORDER_NOT_OBJECT", "the order must be a JSON object")
    try:
        order = OrderIn.model_validate(raw)
    except ValidationError as exc:
        raise Rejected("INVALID_ORDER", _validation_reason(exc)) from exc
    moment = event_time(order.timestamp, ctx)
    items = [
        {
            "product_item_code": item.product_item_code,
            "product_id": item.product_id,
            "quantity": item.quantity,
            "price": money(item.price, f"items.{i}.price"),
            "name": item.name,
            "category_path": item.category_path,
        }
        for i, item in enumerate(order.items)
    ]
    return {
        "order_id": order.order_id,
        "ts": micros(moment),
        "visitor_id": order.visitor_id,
        "session_id": order.session_id,
        "journey_id": order.journey_id,
        "user_id": order.user_id,
        "currency": _currency(order.currency, ctx.site_currency),
        "total": money(order.total, "total"),
        "subtotal": money(order.subtotal, "subtotal"),
        "tax": money(order.tax, "tax"),
        "shipping": money(order.shipping, "shipping"),
        "discount": money(order.discount, "discount"),
        "is_refund": order.is_refund,
        "refund_of": order.refund_of,
        "items": items,
        "item_count": sum(abs(i["quantity"]) for i in items),
        **_consent(order.consent),
        **_common(ctx),
        "date": moment.astimezone(UTC).date().isoformat(),
    }


def metric_row(raw: Any, ctx: Context) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Rejected("METRIC_NOT_OBJECT", "each metric must be a JSON object")
    try:
        metric = MetricIn.model_validate(raw)
    except ValidationError as exc:
        raise Rejected("INVALID_METRIC", _validation_reason(exc)) from exc
    if metric.value != metric.value or metric.value in (float("inf"), float("-inf")):
        raise Rejected("INVALID_METRIC", "value must be a finite number")
    moment = event_time(metric.timestamp, ctx)
    return {
        "metric_id": uuid.uuid4().hex,
        "name": metric.name,
        "value": metric.value,
        "unit": metric.unit,
        "ts": micros(moment),
        "visitor_id": metric.visitor_id,
        "session_id": metric.session_id,
        "url": metric.url,
        "tags": orjson.dumps(metric.tags).decode(),
        **_common(ctx),
        "date": moment.astimezone(UTC).date().isoformat(),
    }
