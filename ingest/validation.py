"""What every ingested row shares: the request's context, the ``Rejected`` error with its stable code,
and the rules of more than one kind of row (time, money, currency, validation by a pydantic model).

Every function here is pure: given the wire dict, the site and the receive time, a row builder
(``ingest.events``, ``ingest.orders``, ``ingest.metrics``, ``ingest.consent``) returns the row that goes
to the durable log, or raises ``Rejected`` with a stable code and a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from ingest.currency import is_iso4217, not_a_currency, resolve_currency
from ingest.schemas import EARLIEST, aware

MONEY_SCALE = 6
MONEY_DIGITS = 17  # amounts below 10^17 (decimal128(24, 6) holds 18 integer digits)
# Storefront clocks drift; anything further out than this is a broken client, not skew.
PUBLIC_MAX_AGE = timedelta(days=7)
MAX_FUTURE = timedelta(minutes=10)


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


def common_columns(ctx: Context) -> dict[str, Any]:
    """The columns every row of one request shares (an event batch's are logged once per batch)."""
    return {
        "received_at": micros(ctx.received_at),
        "channel": ctx.channel,
        "client_platform": ctx.client_platform,
        "client_version": ctx.client_version,
        "site_id": ctx.site_id,
    }


def event_time(raw: datetime | None, ctx: Context) -> datetime:
    """Server time when absent; shifted by the batch's clock skew (received - sentAt) when known."""
    if raw is None:
        return ctx.received_at
    moment = aware(raw)
    if ctx.sent_at is not None:
        try:
            moment += ctx.received_at - aware(ctx.sent_at)
        except OverflowError:
            raise Rejected(
                "TIMESTAMP_INVALID", "timestamp is out of range after clock-skew correction"
            ) from None
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
    # By the exponent: abs() or a comparison of "1E+1000000" overflows the decimal context.
    if not value.is_finite() or (value and value.adjusted() >= MONEY_DIGITS):
        raise Rejected("AMOUNT_INVALID", f"{field} must be a finite amount below 10^17")
    exact = value.quantize(Decimal(1).scaleb(-MONEY_SCALE))
    if value != exact:
        raise Rejected("AMOUNT_TOO_PRECISE", f"{field} has more than {MONEY_SCALE} decimal places")
    # At the lake's scale: trailing zeros beyond it ("1.000...0") would not fit decimal128(24, 6).
    return format(exact, "f")


def checked_currency(code: str | None, *fallbacks: str | None) -> str:
    """The resolved currency (``code``, else the first valid fallback, else EUR); ``code`` itself, when
    sent, must be an ISO 4217 currency."""
    if code is not None and not is_iso4217(code.strip().upper()):
        raise Rejected("CURRENCY_NOT_ISO4217", not_a_currency(code))
    return resolve_currency(code, *fallbacks)


def validated(model, raw: Any, *, what: str, kind: str):
    """``model`` from one JSON item, or Rejected as ``<KIND>_NOT_OBJECT`` / ``INVALID_<KIND>``."""
    if not isinstance(raw, dict):
        raise Rejected(f"{kind}_NOT_OBJECT", f"{what} must be a JSON object")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise Rejected(f"INVALID_{kind}", _validation_reason(exc)) from exc


def _validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "event"
    return f"{where}: {first['msg']}"
