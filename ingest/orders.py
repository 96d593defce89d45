"""Orders: one order validated (``ingest.schemas.OrderIn``, then the rules a schema does not state) and
normalised into its lake row."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from ingest.schemas import Consent, OrderIn
from ingest.validation import (
    Context,
    Rejected,
    checked_currency,
    common_columns,
    event_time,
    micros,
    money,
    validated,
)


def order_row(raw: Any, ctx: Context) -> dict[str, Any]:
    order = validated(OrderIn, raw, what="the order", kind="ORDER")
    if order.total is not None and order.total < 0 and not order.is_refund:
        # Stored as a sale it would quietly take revenue away.
        raise Rejected("INVALID_ORDER", "total is negative: a refund or cancellation needs isRefund true")
    if order.refund_of is not None and not order.is_refund:
        # Stored as a sale it would count as revenue while saying it refunds another order.
        raise Rejected(
            "INVALID_ORDER", "refundOf names the order a refund refunds: send isRefund true with it"
        )
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
    for i, item in enumerate(order.items):  # amounts checked above: each is finite
        if not order.is_refund and (item.quantity < 0 or item.price < 0):
            # Lines are product revenue: a negative one would take it from the product quietly.
            raise Rejected(
                "INVALID_ORDER",
                f"items.{i} is negative: a sale's lines need a quantity and price of zero or more "
                "(a refund or cancellation needs isRefund true)",
            )
    return {
        "order_id": order.order_id,
        "ts": micros(moment),
        "visitor_id": order.visitor_id,
        "session_id": order.session_id,
        "journey_id": order.journey_id,
        "user_id": order.user_id,
        "currency": checked_currency(order.currency, ctx.site_currency),
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
        **common_columns(ctx),
        "date": moment.astimezone(UTC).date().isoformat(),
    }


def _consent(consent: Consent | None) -> dict[str, bool | None]:
    consent = consent or {}
    return {
        "consent_necessary": consent.get("necessary"),
        "consent_analytics": consent.get("analytics"),
        "consent_marketing": consent.get("marketing"),
        "consent_preferences": consent.get("preferences"),
    }
