"""Consent records: a visitor's consent decision, validated and normalised into a row of the
``consents`` lake table.

A record states some or all of the four categories; a category it leaves out (or sends as null) is
"not stated by this record", so a client can sync a partial change (``grantConsent(['analytics'])``)
without restating the rest. Analytics read each category's latest stated value.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, StrictBool, ValidationError

from aisle.wire import CamelModel
from ingest.schemas import MAX_ID_LENGTH, EventTime, OptionalId, SentAt, exact_id
from ingest.validation import Context, Rejected, event_time, micros

Category = Literal["necessary", "analytics", "marketing", "preferences"]
CATEGORIES: tuple[Category, ...] = ("necessary", "analytics", "marketing", "preferences")
SOURCES = ("banner", "preference_center", "sdk", "api", "cmp", "other")
Source = Literal["banner", "preference_center", "sdk", "api", "cmp", "other"]


class _Strict(CamelModel):
    model_config = ConfigDict(extra="forbid")


class ConsentDecision(_Strict):
    """Each category granted (true), refused (false) or not stated by this record (absent or null)."""

    # parse_consent refuses a record stating none (400 `CONSENT_CATEGORIES_EMPTY`): the schema says one
    # category at least is a boolean.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [{"required": [name], "properties": {name: {"type": "boolean"}}} for name in CATEGORIES]
        }
    )

    necessary: StrictBool | None = None
    analytics: StrictBool | None = None
    marketing: StrictBool | None = None
    preferences: StrictBool | None = None


class ConsentIn(_Strict):
    """One consent decision of a visitor. Unknown fields and unknown categories are rejected (400)."""

    visitor_id: Annotated[str, AfterValidator(exact_id)] = Field(min_length=1, max_length=MAX_ID_LENGTH)
    session_id: OptionalId = None
    user_id: OptionalId = None
    categories: ConsentDecision = Field(
        description="The categories this decision states: necessary, analytics, marketing, preferences "
        "(booleans). At least one must be stated; any other key is rejected."
    )
    source: Source = Field(
        default="api",
        description="Where the decision was made: " + ", ".join(SOURCES) + ". Default `api`.",
    )
    timestamp: EventTime | None = Field(
        default=None, description="When the visitor decided (ISO 8601); server time when absent."
    )
    sent_at: SentAt | None = Field(
        default=None,
        description="Client clock when sent (an ISO 8601 date and time to the second, any year); "
        "corrects client clock skew of `timestamp`.",
    )
    consent_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_LENGTH,
        description="Client-made id; a re-send within 24 h is stored once.",
    )


class ConsentResult(CamelModel):
    accepted: bool = True
    consent_id: str
    duplicate: bool = Field(description="True when this consentId was already stored (kept once).")


def _reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


def parse_consent(raw: Any) -> ConsentIn:
    """The wire record, or Rejected with a stable code (``UNKNOWN_CONSENT_CATEGORY`` names the bad key)."""
    if not isinstance(raw, dict):
        raise Rejected("CONSENT_NOT_OBJECT", "the body must be a JSON object")
    categories = raw.get("categories")
    if isinstance(categories, dict):
        unknown = sorted(str(k) for k in categories if k not in CATEGORIES)
        if unknown:
            raise Rejected(
                "UNKNOWN_CONSENT_CATEGORY",
                f"unknown consent categor{'ies' if len(unknown) > 1 else 'y'} {', '.join(repr(u) for u in unknown)}; "
                f"the categories are {', '.join(CATEGORIES)}",
            )
    try:
        record = ConsentIn.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        code = "TIMESTAMP_INVALID" if first["loc"][:1] in (("timestamp",), ("sentAt",)) else "INVALID_CONSENT"
        raise Rejected(code, _reason(exc)) from exc
    if all(getattr(record.categories, c) is None for c in CATEGORIES):
        raise Rejected(
            "CONSENT_CATEGORIES_EMPTY",
            "categories must state at least one of " + ", ".join(CATEGORIES) + " as true or false",
        )
    return record


def consent_row(raw: Any, ctx: Context) -> dict[str, Any]:
    """The log row of one consent record (raises Rejected). ``ctx.sent_at`` is overridden by the
    record's own ``sentAt`` when it has one."""
    record = parse_consent(raw)
    if record.sent_at is not None:
        ctx = replace(ctx, sent_at=record.sent_at)
    moment = event_time(record.timestamp, ctx)
    return {
        "consent_id": record.consent_id or uuid.uuid4().hex,
        "ts": micros(moment),
        "received_at": micros(ctx.received_at),
        "visitor_id": record.visitor_id,
        "session_id": record.session_id,
        "user_id": record.user_id,
        "source": record.source,
        **{f"consent_{c}": getattr(record.categories, c) for c in CATEGORIES},
        "channel": ctx.channel,
        "client_platform": ctx.client_platform,
        "client_version": ctx.client_version,
        "site_id": ctx.site_id,
        "date": moment.astimezone(UTC).date().isoformat(),
    }
