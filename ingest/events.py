"""Events: a batch's events validated and normalised into the durable log's columns.

There is one validation path, with two decoders in front of it:

1. ``parse_event_batch``, the fast path of the public batch route (in the server or in a batch worker,
   ``ingest.batch_worker``): msgspec decodes and validates the whole body in one call into the structs
   of ``ingest.event_struct``, which are derived from the same TypedDicts as pydantic's
   (``ingest.schemas.EventBatch``, ``EventIn``), so the wire shape and its limits are declared once.
   It takes only what both libraries read alike (that module's docstring says where they differ) and
   a body too small for one event to break the size limit; for anything else it answers None.
2. ``event_log_columns``, for everything else (the bodies the fast path left, single tracked events,
   the private routes, imports, the demo): objects, names and sizes screened on the raw JSON, then
   pydantic validates the batch in one call (event by event only when one fails), and each problem is
   reported by its index.

Both end in ``_columns_of``: the rules no schema states (a product event's code, a category event's
path, blank ids, identify's user, timestamps, currency, money) run there once, on events from either
decoder, so a batch gets the same answer on either path (tests/ingest/test_normalise.py checks it
on generated batches). Orders and metrics are one item at a time, through pydantic only
(``ingest.orders``, ``ingest.metrics``); the rules they share with events are in ``ingest.validation``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, date, timedelta
from typing import Any

import msgspec
import orjson
from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from ingest.category_paths import UNKNOWN_CATEGORY, names_a_category
from ingest.currency import resolve_currency
from ingest.event_names import ALLOWED_NAMES_TEXT, CANONICAL_EVENT_NAMES, EVENT_FAMILIES
from ingest.event_struct import EVENT_BATCH_DECODER, ConsentStruct, DecodedBatch, EventStruct
from ingest.schemas import (
    BROKEN_CHARACTER,
    BROKEN_ID,
    MAX_CATEGORY_PATH_LENGTH,
    MAX_EVENT_BYTES,
    MAX_ID_LENGTH,
    EventIn,
)
from ingest.validation import Context, Rejected, checked_currency, event_time, micros, money

PRODUCT_EVENTS = frozenset(EVENT_FAMILIES["product"])
CATEGORY_EVENTS = frozenset(EVENT_FAMILIES["category"])

EVENT_LIST = TypeAdapter(list[EventIn])


def _event_error(error: ErrorDetails) -> Rejected:
    field_path = [str(p) for p in error["loc"][1:]]
    where = ".".join(field_path) or "event"
    reason = f"{where}: {error['msg']}"
    if not field_path:
        return Rejected("EVENT_NOT_OBJECT", "each event must be a JSON object")
    if field_path[0] == "timestamp":
        return Rejected("TIMESTAMP_INVALID", reason)
    return Rejected("INVALID_EVENT", reason)


def _json_size(value: Any) -> int | None:
    """Bytes of ``value`` as JSON; None when it nests deeper than orjson writes (the log could not hold it)."""
    try:
        return len(orjson.dumps(value))
    except orjson.JSONEncodeError:
        return None


EventFailures = list[tuple[int, Rejected]]
EventColumns = dict[str, list[Any]]

# The per-event columns of the durable log, in order.
EVENT_LOG_COLUMNS = (
    "event_id",
    "name",
    "ts",
    "visitor_id",
    "session_id",
    "journey_id",
    "user_id",
    "entity_type",
    "entity_id",
    "url",
    "referrer",
    "metadata",
    "product_item_code",
    "category_path",
    "currency",
    "value",
    "consent_necessary",
    "consent_analytics",
    "consent_marketing",
    "consent_preferences",
    "date",
)


def _screen(raws: list[Any]) -> dict[int, Rejected]:
    """Checks that need the raw JSON: objects only, canonical names, size per event."""
    bad: dict[int, Rejected] = {}
    batch_size = _json_size(raws)
    check_sizes = batch_size is None or batch_size > MAX_EVENT_BYTES
    for index, raw in enumerate(raws):
        if not isinstance(raw, dict):
            bad[index] = Rejected("EVENT_NOT_OBJECT", "each event must be a JSON object")
        elif "name" not in raw or raw["name"] is None:
            bad[index] = Rejected(
                "UNKNOWN_EVENT_NAME",
                f"each event needs a name, one of the canonical event names ({ALLOWED_NAMES_TEXT})",
            )
        elif not isinstance(raw["name"], str) or raw["name"] not in CANONICAL_EVENT_NAMES:
            bad[index] = Rejected(
                "UNKNOWN_EVENT_NAME", f"{raw['name']!r} is not a canonical event name ({ALLOWED_NAMES_TEXT})"
            )
        elif check_sizes:
            size = _json_size(raw)
            if size is None:
                bad[index] = _unstorable()
            elif size > MAX_EVENT_BYTES:
                bad[index] = Rejected(
                    "EVENT_TOO_LARGE", f"event is larger than {MAX_EVENT_BYTES} bytes as JSON"
                )
    return bad


def event_log_columns(raws: list[Any], ctx: Context) -> tuple[EventColumns, EventFailures]:
    """Validate a batch in one pass (the common all-valid case costs one call into pydantic-core);
    returns the good events as log columns (without the batch's common columns, see
    ``common_columns``) and the rejections by index."""
    bad = _screen(raws)
    candidates = [i for i in range(len(raws)) if i not in bad]
    try:
        events = EVENT_LIST.validate_python([raws[i] for i in candidates])
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            position = error["loc"][0]
            assert isinstance(position, int)  # a list's errors are located by index first
            bad.setdefault(candidates[position], _event_error(error))
        candidates = [i for i in candidates if i not in bad]
        events = EVENT_LIST.validate_python([raws[i] for i in candidates])
    return _columns_of(list(map(_as_struct, events)), candidates, bad, ctx)


def _as_struct(event: EventIn) -> Any:
    """A pydantic-validated event in the form the fast path decodes into (one column builder)."""
    consent = event.get("consent")
    fields = event if consent is None else {**event, "consent": ConsentStruct(**consent)}
    return EventStruct(**fields)


def parse_event_batch(body: bytes) -> DecodedBatch | None:
    """The fast path for a whole batch body: JSON parsed and every event validated in one call into
    msgspec (``ingest.event_struct``). None when anything needs the per-event path (a bad event, a
    value read differently by the two libraries, a body large enough that single events could break
    the size limit), which then reports each problem by index."""
    if len(body) > MAX_EVENT_BYTES:
        return None
    try:
        batch = EVENT_BATCH_DECODER.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        # Invalid UTF-8 is a ValueError and nesting past the interpreter's limit a RecursionError
        # in msgspec; the per-event path answers both (400 MALFORMED_JSON).
        return None
    if not all(event.name in CANONICAL_EVENT_NAMES for event in batch.events):
        return None
    return batch


def batch_visitors(visitor_ids: Iterable[Any]) -> list[str]:
    """The visitors a batch's events name, each once, in order: the visitor throttle counts the batch
    against every one of them, so naming a throttled visitor after another does not get past it."""
    return list(dict.fromkeys(v for v in visitor_ids if isinstance(v, str) and v))


def valid_event_log_columns(events: list[Any], ctx: Context) -> tuple[EventColumns, EventFailures]:
    """``event_log_columns`` for the events of a batch that ``parse_event_batch`` returned."""
    return _columns_of(events, range(len(events)), {}, ctx)


def _event_id(sent: str | None) -> str:
    """The client's id, or a new one when it sent none: a blank id ("", " ") is none, or every
    event of a client that sends one would be a duplicate of its first."""
    return sent if sent and not sent.isspace() else uuid.uuid4().hex


def _columns_of(
    events: list[Any], indexes, bad: dict[int, Rejected], ctx: Context
) -> tuple[EventColumns, EventFailures]:
    # Built a column at a time while the batch is hot in the cache: the flusher then joins lists
    # instead of picking one field out of tens of thousands of row dicts per column. The columns
    # that need a rule per event come from one pass; the others are copied by comprehension.
    batch = _BatchContext(ctx)
    kept, derived = [], []
    for index, event in zip(indexes, events, strict=True):
        try:
            derived.append(batch.derived(event, index))
        except Rejected as rejected:
            bad[index] = rejected
        else:
            kept.append(event)
    failures = sorted(bad.items())
    if not kept:
        return {name: [] for name in EVENT_LOG_COLUMNS}, failures
    ts, day, metadata, product_code, category_path, currency, value = map(list, zip(*derived, strict=True))
    consents = [event.consent for event in kept]
    if any(c is not None for c in consents):
        consent = {
            f"consent_{part}": [None if c is None else getattr(c, part) for c in consents]
            for part in CONSENT_PARTS
        }
    else:
        nothing = [None] * len(kept)
        consent = {f"consent_{part}": nothing for part in CONSENT_PARTS}
    columns = {
        "event_id": [_event_id(event.event_id) for event in kept],
        "name": [event.name for event in kept],
        "ts": ts,
        "visitor_id": [event.visitor_id for event in kept],
        "session_id": [event.session_id for event in kept],
        "journey_id": [event.journey_id for event in kept],
        "user_id": [event.user_id for event in kept],
        "entity_type": [event.entity_type for event in kept],
        "entity_id": [event.entity_id for event in kept],
        "url": [event.url for event in kept],
        "referrer": [event.referrer for event in kept],
        "metadata": metadata,
        "product_item_code": product_code,
        "category_path": category_path,
        "currency": currency,
        "value": value,
        **consent,
        "date": day,
    }
    return columns, failures


CONSENT_PARTS = ("necessary", "analytics", "marketing", "preferences")


DAY_US = 86_400_000_000
EPOCH_DAY = date(1970, 1, 1)


def _utc_date(us: int) -> str:
    return (EPOCH_DAY + timedelta(days=us // DAY_US)).isoformat()


# The ids of an event that must be exact text (see ingest.schemas.exact_id), wire name: attribute.
_IDS = {
    "eventId": "event_id",
    "visitorId": "visitor_id",
    "sessionId": "session_id",
    "journeyId": "journey_id",
    "userId": "user_id",
}


class _BatchContext:
    """What every event of one batch shares, computed once."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.site_currency = resolve_currency(ctx.site_currency)
        self.received_us = micros(ctx.received_at)
        self.received_date = ctx.received_at.astimezone(UTC).date().isoformat()

    def derived(self, event: Any, index: int) -> tuple[Any, ...]:
        """The log columns that take a rule: ts, date, metadata (JSON), product_item_code,
        category_path, currency and value; raises Rejected for an event that breaks one. ``index``:
        the event's place in its batch."""
        ctx = self.ctx
        name = event.name
        metadata = event.metadata
        # First, as the per-event path's screen does: metadata is the only free JSON of an event.
        try:
            metadata_json = orjson.dumps(metadata).decode() if metadata else "{}"
        except orjson.JSONEncodeError:
            raise _unstorable() from None
        get = metadata.get if metadata else _nothing
        product_code = get("productItemCode")
        if product_code is not None:
            # A number is a code written without quotes; true is not a code (bool is an int here).
            if isinstance(product_code, bool) or not isinstance(product_code, str | int):
                raise Rejected(
                    "MISSING_PRODUCT_CODE", "metadata.productItemCode must be a string (or a whole number)"
                )
            product_code = str(product_code).strip() or None
            if product_code is not None and len(product_code) > MAX_ID_LENGTH:
                raise Rejected(
                    "INVALID_EVENT", f"metadata.productItemCode is longer than {MAX_ID_LENGTH} characters"
                )
        if name in PRODUCT_EVENTS and not product_code:
            raise Rejected("MISSING_PRODUCT_CODE", f"'{name}' needs metadata.productItemCode")
        # The people analytics count: a blank id would make one person of every client sending it.
        if event.visitor_id.isspace() or event.session_id.isspace():
            raise Rejected("INVALID_EVENT", "visitorId and sessionId must not be blank")
        # One search over the ids together (None reads "None"), the field named only on a hit.
        ids = f"{event.event_id}{event.visitor_id}{event.session_id}{event.journey_id}{event.user_id}"
        if BROKEN_CHARACTER in ids:
            field = next(
                f for f, attribute in _IDS.items() if BROKEN_CHARACTER in (getattr(event, attribute) or "")
            )
            raise Rejected("INVALID_EVENT", f"{field} {BROKEN_ID}")
        if name == "identify" and (not event.user_id or event.user_id.isspace()):
            # The event that links a visitor to a user: without the user it links nothing.
            raise Rejected("MISSING_USER_ID", "'identify' needs userId, the user the visitor is")
        category_path = get("categoryPath")
        if category_path is not None and not isinstance(category_path, str):
            raise Rejected("INVALID_EVENT", "metadata.categoryPath must be a string such as 'Home > Kitchen'")
        if category_path is not None and len(category_path) > MAX_CATEGORY_PATH_LENGTH:
            raise Rejected(
                "INVALID_EVENT", f"metadata.categoryPath is longer than {MAX_CATEGORY_PATH_LENGTH} characters"
            )
        if name in CATEGORY_EVENTS and not names_a_category(category_path):
            # Its path, else the category its entityId names. A path of only `>` and blanks (' > ')
            # names none, as an empty one does: kept, it would count under `unknown`, though the
            # entityId says which category the listing is.
            category_path = event.entity_id or category_path or UNKNOWN_CATEGORY
        timestamp = event.timestamp
        if timestamp is None:
            # Server time, a microsecond apart per place in the batch: events sent without a time
            # keep the order they were sent in (journeys, sequences and funnels order by time).
            ts = self.received_us + index
            day = self.received_date if ts // DAY_US == self.received_us // DAY_US else _utc_date(ts)
        else:
            moment = event_time(timestamp, ctx)
            ts, day = micros(moment), moment.astimezone(UTC).date().isoformat()
        # The spec's order: the event's currency (its own field, else metadata.currency), the order's
        # (a purchase carrying its order as metadata.order), the site's, EUR. Only the event's own
        # field is refused when invalid; the others count "if valid".
        currency, meta_currency, order = event.currency, get("currency"), get("order")
        order_currency = order.get("currency") if isinstance(order, dict) else None
        if currency is None and meta_currency is None and order_currency is None:
            currency = self.site_currency
        else:
            currency = checked_currency(currency, meta_currency, order_currency, ctx.site_currency)
        value = event.value
        return (
            ts,
            day,
            metadata_json,
            product_code,
            category_path,
            currency,
            None if value is None else money(value, "value"),
        )


def _unstorable() -> Rejected:
    # orjson, which writes the log, stops at 255 levels of nesting and at integers beyond 64 bits.
    return Rejected(
        "INVALID_EVENT",
        "event holds JSON that cannot be stored (nested too deeply, or an integer beyond 64 bits)",
    )


def _nothing(_key: str) -> None:
    return None
