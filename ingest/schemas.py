"""Wire shapes of behavioural data: event batches and orders, with their documented limits."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any, NotRequired, overload

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    WithJsonSchema,
    model_validator,
    with_config,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from typing_extensions import TypedDict

from aisle.wire import CAMEL_CONFIG
from ingest.event_names import CANONICAL_EVENT_NAMES

# Documented limits (also in the OpenAPI descriptions).
MAX_BATCH_EVENTS = 500
MAX_EVENT_BYTES = 32 * 1024
MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_ID_LENGTH = 128
MAX_NAME_LENGTH = 64
MAX_URL_LENGTH = 2048
MAX_ORDER_ITEMS = 2000
MAX_CATEGORY_PATH_LENGTH = 500

# A site id in a body: the routes answer 400 `INVALID_SITE_ID` for text that is no uuid
# (api.deps.canonical_site_id), so the schema says uuid; only the schema, validation stays there.
SiteIdText = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]


# A decimal as JSON and most languages write one. Python's Decimal also reads other scripts' digits
# ("١٢"), underscores ("1_000") and surrounding spaces, which no shop means as an amount.
AMOUNT_PATTERN = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
AMOUNT_TEXT = re.compile(AMOUNT_PATTERN)


# A JSON number is read as a double, which holds 15 significant digits: past them the number read may
# not be the one sent (99999999999999.99 reads as ...98), and money is kept exact or refused. An
# integer is read exactly here, but most clients' JSON (JavaScript's) held it as a double before it
# was sent (9007199254740993 goes out as ...992): the same limit holds for it.
DOUBLE_DIGITS = 15


def _significant_digits(number: float | int) -> int:
    """Digits of the shortest text that reads back as ``number`` (a double read from at most 15
    digits has at most 15 here)."""
    digits = str(abs(number)) if isinstance(number, int) else repr(number).split("e")[0].lstrip("-")
    return len(digits.replace(".", "").strip("0"))


def _amount_text(value: Any) -> Any:
    if isinstance(value, str) and not AMOUNT_TEXT.fullmatch(value):
        spaced = value != value.strip() and AMOUNT_TEXT.fullmatch(value.strip())
        raise ValueError("must be a decimal number such as 19.99" + (", without spaces" if spaced else ""))
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and _significant_digits(value) > DOUBLE_DIGITS:
        raise ValueError(
            f"has more than {DOUBLE_DIGITS} significant digits, more than a JSON number keeps exactly: "
            'send it as a decimal string such as "99999999999999.99"'
        )
    return value


class _AmountText(BeforeValidator):
    """The amount check, and what the schema says of amounts: a number, or text that is one."""

    def __get_pydantic_json_schema__(
        self, core_schema: Any, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        if handler.mode != "validation":
            return schema
        return {"anyOf": [{"type": "number"}, {"type": "string", "pattern": f"^{AMOUNT_PATTERN}$"}]}


plain_amount = _AmountText(_amount_text)
# Money on the wire: a JSON number or a decimal string, kept exact.
Amount = Annotated[Decimal, plain_amount]

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # no event, order or client clock is older


# A number written as text. pydantic reads one as seconds since 1970 in a date or time field, where our
# wire takes ISO 8601 only: "1700006400" is a unix time sent by mistake, "0" is not 1970.
NUMBER_TEXT = re.compile(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?", re.ASCII)


def is_a_number(value: Any) -> bool:
    """A JSON number, or text that is one (booleans are neither)."""
    if isinstance(value, str):
        return NUMBER_TEXT.fullmatch(value.strip()) is not None
    return isinstance(value, int | float) and not isinstance(value, bool)


def _time_text(value: Any) -> Any:
    # pydantic reads a number as epoch seconds: a sentAt of 5 would shift the batch by 56 years.
    if is_a_number(value):
        raise ValueError("must be an ISO 8601 time such as 2026-01-05T10:00:00Z")
    return value


def aware(moment: datetime) -> datetime:
    """``moment`` with a time zone: a naive time is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# A clock reading: a date *and* a time to the second. pydantic also reads a bare date (midnight: a
# batch sent at 13:00 shifted by 13 hours), a time without seconds and a numeric text ("5": epoch
# seconds), none of which says what the client's clock read.
_CLOCK_READING = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?", re.ASCII
)


def _clock_reading(value: Any) -> Any:
    if not (isinstance(value, str) and _CLOCK_READING.fullmatch(value)):
        raise ValueError(
            "must be the client's clock as an ISO 8601 date and time, such as 2026-01-05T10:00:00Z"
        )
    return value


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be blank")
    return text


# A visitor, session or user as identity: a blank one would make one person of every client sending it.
# JSON text's lone UTF-16 surrogates ("\ud800", a string cut inside an emoji) are read as U+FFFD
# (ingest.json_text), which is right for text but would make "a\ud800" and "a\udbff" one id: their
# events stored once, their orders refused as duplicates. An id holding U+FFFD is refused instead.
BROKEN_CHARACTER = "\ufffd"
BROKEN_ID = "must not contain U+FFFD (a broken character, or a lone UTF-16 surrogate read as one)"


@overload
def exact_id(text: str) -> str: ...
@overload
def exact_id(text: str | None) -> str | None: ...
def exact_id(text: str | None) -> str | None:
    if text is not None and BROKEN_CHARACTER in text:
        raise ValueError(BROKEN_ID)
    return text


IdentityId = Annotated[
    str, Field(min_length=1, max_length=MAX_ID_LENGTH), AfterValidator(_not_blank), AfterValidator(exact_id)
]
OptionalId = Annotated[str | None, Field(max_length=MAX_ID_LENGTH), AfterValidator(exact_id)]


# --- what the schema says of the rules the validators here check ------------------------------------
# JSON Schema patterns for them, so that clients generated from the OpenAPI schema send only what is
# taken: an identity id is not blank (what str.strip() leaves is not empty) and no id holds U+FFFD.


def _char_class(chars: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in chars)


# What str.strip() strips: the characters str.isspace() counts, every one of them below U+3001.
_STRIPPED = _char_class("".join(c for c in map(chr, range(0x3001)) if c.isspace()))
NOT_BLANK_TEXT = f"[^{_STRIPPED}]"
EXACT_ID_PATTERN = "^[^\\ufffd]*$"
IDENTITY_ID_PATTERN = f"^[^\\ufffd]*[^{_STRIPPED}\\ufffd][^\\ufffd]*$"
# Decimal text below zero: a minus, then a digit other than 0 before any exponent ("-0.0" is zero).
NEGATIVE_AMOUNT_PATTERN = "^-[0.]*[1-9]"


def _string_branch(spec: dict[str, Any]) -> dict[str, Any]:
    """The string schema of a property: the property's own, or its `anyOf` branch of type string."""
    return next((b for b in spec.get("anyOf", ()) if b.get("type") == "string"), spec)


def _patterns(**patterns: str) -> Callable[[dict[str, Any]], None]:
    """``json_schema_extra`` putting each pattern on its property's string branch (a property of type
    ``str | None`` has one), by the property's wire name."""

    def extra(schema: dict[str, Any]) -> None:
        for name, pattern in patterns.items():
            _string_branch(schema["properties"][to_camel(name)])["pattern"] = pattern

    return extra


iso_time = BeforeValidator(_time_text)
clock_reading = BeforeValidator(_clock_reading)
# An event's, order's or metric's time: ISO 8601 text (a number would be read as epoch seconds).
EventTime = Annotated[datetime, iso_time]
# A batch's sentAt: the client's clock when it sent. Any year: a device whose clock reset to 1970 is
# the case it is there for (its events' times shift by the same skew).
SentAt = Annotated[datetime, clock_reading]


# camelCase on the wire, snake_case inside. Values are kept exactly as sent (no whitespace stripping):
# free metadata must not be rewritten.
_WIRE_DICT = CAMEL_CONFIG


class _Wire(BaseModel):
    model_config = _WIRE_DICT


# Events are validated into plain dicts keyed by their lake column names (TypedDicts, not models):
# on the busiest route that halves the cost of validation and lets a validated event become its lake
# row without copying attribute by attribute.


@with_config(_WIRE_DICT)
class Consent(TypedDict, total=False):
    # JSON booleans only: lax pydantic reads "yes", "true" and 1 as true (and msgspec's path does not).
    necessary: StrictBool | None
    analytics: StrictBool | None
    marketing: StrictBool | None
    preferences: StrictBool | None


def _optional_id(description: str | None = None) -> Any:
    return Field(max_length=MAX_ID_LENGTH, description=description)


@with_config(
    ConfigDict(
        **_WIRE_DICT,
        json_schema_extra=_patterns(
            visitor_id=IDENTITY_ID_PATTERN,
            session_id=IDENTITY_ID_PATTERN,
            event_id=EXACT_ID_PATTERN,
            journey_id=EXACT_ID_PATTERN,
            user_id=EXACT_ID_PATTERN,
        ),
    )
)
class EventIn(TypedDict):
    """One behavioural event. Unknown top-level fields are ignored; put free data in `metadata`."""

    name: Annotated[
        str,
        Field(
            max_length=MAX_NAME_LENGTH,
            description="A canonical event name; another is refused as `UNKNOWN_EVENT_NAME`.",
            json_schema_extra={"enum": sorted(CANONICAL_EVENT_NAMES)},
        ),
    ]
    timestamp: NotRequired[
        Annotated[
            EventTime | None,
            Field(
                description="ISO 8601; server time when absent (a microsecond apart per place in the batch, "
                "so events sent without a time keep the batch's order)."
            ),
        ]
    ]
    event_id: NotRequired[
        Annotated[str | None, _optional_id("Client-made id; re-sends within 24 h are stored once.")]
    ]
    visitor_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    session_id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH)]
    journey_id: NotRequired[Annotated[str | None, _optional_id()]]
    user_id: NotRequired[Annotated[str | None, _optional_id()]]
    entity_type: NotRequired[Annotated[str | None, Field(max_length=MAX_NAME_LENGTH)]]
    entity_id: NotRequired[Annotated[str | None, _optional_id()]]
    url: NotRequired[Annotated[str | None, Field(max_length=MAX_URL_LENGTH)]]
    referrer: NotRequired[Annotated[str | None, Field(max_length=MAX_URL_LENGTH)]]
    # null is no metadata, as every other optional field takes null for absent.
    metadata: NotRequired[dict[str, Any] | None]
    consent: NotRequired[Consent | None]
    currency: NotRequired[
        Annotated[
            str | None,
            Field(
                max_length=8,
                description="ISO-4217 of `value`. Absent: `metadata.currency`, then the currency of the "
                "order a purchase carries (`metadata.order.currency`), then the site's, then EUR.",
            ),
        ]
    ]
    value: NotRequired[
        Annotated[
            Amount | None,
            Field(
                description="Money value of the event (decimal string, or number of at most 15 significant digits)."
            ),
        ]
    ]


class EventBatchIn(_Wire):
    # Items stay raw (not dict-typed) so that a non-object event is reported by index, not fatal to the batch.
    events: list[Any] = Field(
        max_length=MAX_BATCH_EVENTS,
        description=f"Up to {MAX_BATCH_EVENTS} events, each up to {MAX_EVENT_BYTES // 1024} KiB as JSON. "
        "Valid events are kept; invalid ones are reported by index.",
    )
    sent_at: SentAt | None = Field(
        default=None,
        description="Client clock when the batch was sent, an ISO 8601 date and time to the second "
        "(any year: a clock reset to 1970 too); corrects client clock skew. A bare date, a time without "
        "seconds or a number refuses the batch (400).",
    )


class TrackBatchIn(EventBatchIn):
    site_id: SiteIdText = Field(description="The site (uuid) the events belong to.")


@with_config(_WIRE_DICT)
class EventBatch(TypedDict):
    """The documented shape of an events batch (items are validated one by one)."""

    events: Annotated[list[EventIn], Field(max_length=MAX_BATCH_EVENTS)]
    sent_at: NotRequired[
        Annotated[SentAt | None, Field(description="Client clock (ISO 8601) when the batch was sent.")]
    ]


class TrackEventBatch(EventBatch):
    site_id: SiteIdText


@with_config(_WIRE_DICT)
class TrackNestedDoc(TypedDict):
    """One private event in its nested form."""

    site_id: SiteIdText
    event: EventIn


def _trimmed(text: str | None) -> str | None:
    return exact_id(text.strip() or None) if text is not None else None


def _product_uuid(text: str | None) -> str | None:
    # The spec's productId is a uuid; a shop's own id sent here would name a product no report can
    # find by its productId (the catalog derives ids from codes), so it is refused, not read as a code.
    text = _trimmed(text)
    if text is None:
        return None
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise ValueError(
            "productId must be a uuid (Aisle's product id); send a shop's own code as productItemCode"
        ) from None


def _names_a_product(schema: dict[str, Any]) -> None:
    _patterns(product_item_code=EXACT_ID_PATTERN)(schema)
    # The rule of _needs_a_product: a productItemCode that is not blank, or a productId.
    schema["anyOf"] = [
        {
            "required": ["productItemCode"],
            "properties": {"productItemCode": {"type": "string", "pattern": NOT_BLANK_TEXT}},
        },
        {"required": ["productId"], "properties": {"productId": {"type": "string"}}},
    ]


class OrderItemIn(_Wire):
    model_config = ConfigDict(json_schema_extra=_names_a_product)

    # Trimmed, as event codes are: " 123 " and "123" are one product (one product id).
    product_item_code: Annotated[str | None, AfterValidator(_trimmed)] = Field(
        default=None, max_length=MAX_ID_LENGTH
    )
    product_id: Annotated[str | None, AfterValidator(_product_uuid)] = Field(
        default=None,
        max_length=MAX_ID_LENGTH,
        json_schema_extra={"format": "uuid"},
        description="Aisle's product id (a uuid, as the catalog lists it); the line is credited to that "
        "product when it has no productItemCode. A shop's own ids go in productItemCode.",
    )
    # Strict: lax pydantic also reads "2" and true as quantities.
    quantity: StrictInt = Field(
        ge=-1_000_000, le=1_000_000, description="Units; zero or more on a sale, either sign on a refund."
    )
    price: Amount = Field(description="Unit price, in the order currency; zero or more on a sale.")
    name: str | None = Field(default=None, max_length=500)
    category_path: str | None = Field(default=None, max_length=MAX_CATEGORY_PATH_LENGTH)

    @model_validator(mode="after")
    def _needs_a_product(self) -> OrderItemIn:
        # A model validator: a field validator would not run when productId is absent (its default).
        if self.product_id is None and not self.product_item_code:
            raise ValueError("each item needs productItemCode or productId")
        return self


def _order_id(text: str) -> str:
    # Trimmed, as product codes are: "o1 " and "o1" are one order (stored twice before).
    return exact_id(_not_blank(text).strip())


NOT_NEGATIVE_AMOUNT = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "not": {"pattern": NEGATIVE_AMOUNT_PATTERN}},
    ]
}


def _order_rules(schema: dict[str, Any]) -> None:
    _patterns(
        order_id=IDENTITY_ID_PATTERN,
        visitor_id=IDENTITY_ID_PATTERN,
        session_id=IDENTITY_ID_PATTERN,
        journey_id=EXACT_ID_PATTERN,
        user_id=EXACT_ID_PATTERN,
        refund_of=EXACT_ID_PATTERN,
    )(schema)
    # The rules of order_row (ingest.normalise): a refund (isRefund true) may carry any sign and a
    # refundOf; a sale has no negative total, quantity or price, and no refundOf (a blank one is none).
    schema["anyOf"] = [
        {"required": ["isRefund"], "properties": {"isRefund": {"const": True}}},
        {
            "properties": {
                "total": NOT_NEGATIVE_AMOUNT,
                "items": {
                    "items": {"properties": {"quantity": {"minimum": 0}, "price": NOT_NEGATIVE_AMOUNT}}
                },
                "refundOf": {
                    "anyOf": [{"type": "null"}, {"type": "string", "not": {"pattern": NOT_BLANK_TEXT}}]
                },
            }
        },
    ]


class OrderIn(_Wire):
    model_config = ConfigDict(json_schema_extra=_order_rules)

    order_id: Annotated[str, AfterValidator(_order_id)] = Field(min_length=1, max_length=MAX_ID_LENGTH)
    timestamp: EventTime | None = None
    visitor_id: IdentityId
    session_id: IdentityId
    journey_id: OptionalId = None
    user_id: OptionalId = None
    currency: str | None = Field(default=None, max_length=8)
    total: Amount
    subtotal: Amount | None = None
    tax: Amount | None = None
    shipping: Amount | None = None
    discount: Amount | None = None
    is_refund: StrictBool = Field(
        default=False,
        description="A refund or cancellation. Its total may be sent negative or positive (shops do both; it is "
        "stored as sent, and analytics count refunds by this flag, never as revenue); a negative total "
        "without isRefund is refused.",
    )
    refund_of: Annotated[str | None, AfterValidator(_trimmed)] = Field(
        default=None, max_length=MAX_ID_LENGTH, description="The refunded orderId; only with isRefund true."
    )
    items: list[OrderItemIn] = Field(
        min_length=1,
        max_length=MAX_ORDER_ITEMS,
        description="Each item names its product by a productItemCode or a productId (not blank); an item "
        "with neither is refused (400 `INVALID_ORDER`).",
    )
    consent: Consent | None = None


class TrackOrderIn(OrderIn):
    site_id: SiteIdText


class MetricIn(_Wire):
    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, description="e.g. LCP, CLS, queue_size.")
    value: StrictFloat  # a JSON number (lax pydantic also reads true as 1.0)
    unit: str | None = Field(default=None, max_length=16)
    timestamp: EventTime | None = None
    visitor_id: OptionalId = None
    session_id: OptionalId = None
    url: str | None = Field(default=None, max_length=MAX_URL_LENGTH)
    tags: dict[str, str | int | float | bool] = Field(default_factory=dict)


class MetricsBatchIn(_Wire):
    # Items stay raw, as an event batch's do: an invalid metric is reported by index.
    metrics: list[Any] = Field(max_length=MAX_BATCH_EVENTS)
    sent_at: SentAt | None = None


class MetricsBatch(_Wire):
    """The documented shape of a metrics batch (items are validated one by one)."""

    metrics: list[MetricIn] = Field(max_length=MAX_BATCH_EVENTS)
    sent_at: SentAt | None = None


class Rejection(BaseModel):
    index: int
    code: str
    reason: str


class BatchResult(_Wire):
    accepted: int = Field(
        description="Valid items, now durable: the new ones and the `duplicates` (a client may forget "
        "every accepted item; none needs sending again)."
    )
    rejected: list[Rejection] = Field(description="Invalid items by index, with a code and a reason.")
    duplicates: int = Field(
        description="Accepted items already stored before (a re-sent or repeated eventId): kept once."
    )


class OrderResult(_Wire):
    accepted: bool = True
    order_id: str
    currency: str
