"""Event batches decoded by msgspec: the storefront's busiest body, parsed and validated in one pass.

The structs are derived from the documented TypedDicts (``ingest.schemas.EventBatch``, ``EventIn``),
so the wire shape and its limits are declared once. msgspec decodes and validates a batch in a
fraction of pydantic-core's time (docs/decisions.md has the figures).

Where the two libraries read a value differently, the struct takes the narrower form and anything
else fails the whole body over to pydantic's per-event path (which then decides, and reports each
problem by index): timestamps are RFC 3339 with at most microseconds (pydantic truncates finer
fractions where msgspec rounds them; pydantic also takes dates and epoch numbers), money is a plain
decimal string or a 64-bit integer (pydantic reads JSON fractions through binary floats, and the
per-event path turns away what the log's JSON writer cannot hold), and booleans are JSON booleans
(pydantic also takes "yes", 1 and the like).
"""

from __future__ import annotations

import re
import types
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, NotRequired, Protocol, Required, Union, get_args, get_origin

import annotated_types
import msgspec
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic.types import Strict
from typing_extensions import TypedDict, get_type_hints, is_typeddict

from ingest.schemas import Consent, EventBatch, EventIn, clock_reading, iso_time, plain_amount

# pydantic's rules the wire types here cover already, or that ``parse_event_batch`` checks itself.
_COVERED = (plain_amount, iso_time, clock_reading)

_RFC3339_MICROS = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?", re.ASCII
)
_PLAIN_DECIMAL = re.compile(r"-?\d{1,30}(?:\.\d{1,30})?", re.ASCII)


class WireTimestamp(datetime):
    """A timestamp both libraries read the same way (see the module's docstring)."""


class WireMoney(Decimal):
    """An amount both libraries read the same way (see the module's docstring)."""


def _decode_hook(kind: type, value: Any) -> Any:
    if kind is WireTimestamp and isinstance(value, str) and _RFC3339_MICROS.fullmatch(value):
        return WireTimestamp.fromisoformat(value)  # ValueError (a 30th of February) fails the body over
    if kind is WireMoney:
        if isinstance(value, str) and _PLAIN_DECIMAL.fullmatch(value):
            return WireMoney(value)
        # Longer integers go to the per-event path, which holds them to a double's 15 digits.
        if isinstance(value, int) and not isinstance(value, bool) and -(10**15) < value < 10**15:
            return WireMoney(value)
    raise ValueError(f"left to the per-event path: {value!r}")


_NARROWED: dict[Any, type] = {datetime: WireTimestamp, Decimal: WireMoney}


class _Lengths(TypedDict, total=False):
    """The constraints msgspec takes over from a field's pydantic annotations."""

    min_length: int
    max_length: int


def _constraints(extras: tuple[Any, ...]) -> _Lengths:
    found: _Lengths = {}
    for extra in extras:
        for rule in extra.metadata if isinstance(extra, FieldInfo) else [extra]:
            # msgspec's types are strict already (a bool is only true or false).
            if any(rule is covered for covered in _COVERED) or isinstance(rule, Strict):
                continue
            if isinstance(rule, annotated_types.MaxLen):
                found["max_length"] = rule.max_length
            elif isinstance(rule, annotated_types.MinLen):
                found["min_length"] = rule.min_length
            else:
                raise TypeError(f"no msgspec form for the constraint {rule!r}")
    return found


def _with_constraints(hint: Any, constraints: _Lengths) -> Any:
    """``hint`` with length limits on its non-null members (msgspec constrains one type at a time)."""
    if not constraints:
        return hint
    if get_origin(hint) in (Union, types.UnionType):
        return Union[tuple(_with_constraints(member, constraints) for member in get_args(hint))]  # noqa: UP007
    if hint is type(None):
        return hint
    return Annotated[hint, msgspec.Meta(**constraints)]


def _wire_type(hint: Any) -> Any:
    origin = get_origin(hint)
    if origin in (NotRequired, Required):
        return _wire_type(get_args(hint)[0])
    if origin is Annotated:
        base, *extras = get_args(hint)
        return _with_constraints(_wire_type(base), _constraints(tuple(extras)))
    if origin in (Union, types.UnionType):
        return Union[tuple(_wire_type(member) for member in get_args(hint))]  # noqa: UP007
    if origin is list:
        return types.GenericAlias(list, (_wire_type(get_args(hint)[0]),))  # list[that type]
    if is_typeddict(hint):
        return struct_of(hint)
    if hint in _NARROWED:
        return _NARROWED[hint]
    if hint in (str, bool, int, float, type(None), Any) or origin is dict:
        return hint
    raise TypeError(f"no msgspec form for {hint!r}")


def _allows_none(hint: Any) -> bool:
    return hint is type(None) or (
        get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)
    )


def _required(hint: Any, *, total: bool) -> bool:
    # Read off the hint, not ``__required_keys__``: with postponed annotations (our schemas) the
    # TypedDict cannot see ``NotRequired`` inside a string when the class is made.
    origin = get_origin(hint)
    return True if origin is Required else False if origin is NotRequired else total


_STRUCTS: dict[type, type[msgspec.Struct]] = {}


def struct_of(typed_dict: type) -> type[msgspec.Struct]:
    """A msgspec struct with the TypedDict's keys as fields (snake_case), read from camelCase JSON.
    A key that may be absent defaults to None; one that may be absent but not null defaults to
    ``UNSET``, which is falsy, so that null still fails validation."""
    if typed_dict in _STRUCTS:
        return _STRUCTS[typed_dict]
    required: list[tuple[str, Any]] = []
    optional: list[tuple[str, Any, Any]] = []
    # Every TypedDict has __total__; ``type`` does not say so.
    total = getattr(typed_dict, "__total__", True)
    for name, hint in get_type_hints(typed_dict, include_extras=True).items():
        kind = _wire_type(hint)
        if _required(hint, total=total):
            required.append((name, kind))
        elif _allows_none(kind):
            optional.append((name, kind, None))
        else:
            optional.append((name, kind | msgspec.UnsetType, msgspec.UNSET))
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [*required, *optional]
    struct = msgspec.defstruct(
        typed_dict.__name__, fields, rename={field[0]: to_camel(field[0]) for field in fields}, gc=False
    )
    _STRUCTS[typed_dict] = struct
    return struct


EventBatchStruct = struct_of(EventBatch)
EventStruct = struct_of(EventIn)
ConsentStruct = struct_of(Consent)


class DecodedBatch(Protocol):
    """A batch as ``EVENT_BATCH_DECODER`` reads it. Its struct is made at import from ``EventBatch``, so
    no static type names the fields: this says the two the fast path reads."""

    events: list[Any]
    sent_at: datetime | None


EVENT_BATCH_DECODER: msgspec.json.Decoder[DecodedBatch] = msgspec.json.Decoder(
    EventBatchStruct, dec_hook=_decode_hook
)
