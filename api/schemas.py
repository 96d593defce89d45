"""The API's shared wire types: request-body base, report dates, and what the schema says of checked values."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, GetJsonSchemaHandler, WithJsonSchema
from pydantic.json_schema import JsonSchemaValue

from aisle.wire import CamelModel
from ingest.currency import ISO4217_CODES
from ingest.event_names import CANONICAL_EVENT_NAMES
from ingest.schemas import is_a_number

# A character pydantic's str_strip_whitespace keeps at the ends of a string (it strips Unicode's
# White_Space): a string needs one to keep a minLength of 1 once stripped, "  " being "" then.
NOT_BLANK_PATTERN = r"[^\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def _not_blank(schema: dict[str, Any]) -> None:
    for spec in schema.get("properties", {}).values():
        for branch in [spec, *spec.get("anyOf", ())]:
            if branch.get("type") == "string" and branch.get("minLength", 0) >= 1 and "pattern" not in branch:
                branch["pattern"] = NOT_BLANK_PATTERN


class StrictCamelModel(CamelModel):
    """Request bodies: unknown fields are an error, so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # Strings are stripped before their length is checked: the schema says a required text is not
        # only blanks.
        schema = handler(core_schema)
        _not_blank(handler.resolve_ref_schema(schema))
        return schema


class Ok(CamelModel):
    success: bool = True


def _iso_not_a_number(what: str):
    # Pydantic reads a bare number as seconds since 1970 ("1700006400" is 2023-11-15); on our wire days
    # and instants are ISO 8601, so a number is a unix time sent by mistake, answered as such.
    def check(value: Any) -> Any:
        if is_a_number(value):
            raise ValueError(f"expected an ISO 8601 {what}, not a number")
        return value

    return BeforeValidator(check)


# Dates a report may name: the lake holds nothing older (events before 2000 are refused on ingest), and
# the bounds keep every computed instant (a day's end, a local midnight) inside what datetime can hold.
# The routes refuse others with 400 `DATE_OUT_OF_RANGE` (api.analytics.scope.check_report_dates); the
# schema states the bounds as a pattern on the year, JSON Schema having no minimum for dates.
EARLIEST_REPORT_DATE = date(1970, 1, 1)
LATEST_REPORT_DATE = date(9000, 12, 31)
REPORT_YEAR_PATTERN = r"^(19[7-9][0-9]|[2-8][0-9]{3}|9000)-"


def _report_time_schema(format: str) -> WithJsonSchema:
    # How a range's two ends relate is a rule over two parameters, which JSON Schema cannot state: said.
    rules = (
        f"{EARLIEST_REPORT_DATE} to {LATEST_REPORT_DATE} (else 400 `DATE_OUT_OF_RANGE`). `startDate` may not "
        "be after `endDate` (an omitted `endDate` is today, or now): 400 `DATE_RANGE_INVALID`."
    )
    return WithJsonSchema(
        {"type": "string", "format": format, "pattern": REPORT_YEAR_PATTERN, "description": rules}
    )


IsoDate = Annotated[date, _iso_not_a_number("date such as 2026-01-31"), _report_time_schema("date")]
IsoDateTime = Annotated[
    datetime, _iso_not_a_number("timestamp such as 2026-01-31T09:30:00Z"), _report_time_schema("date-time")
]


# --- what the schema says of values the routes check with codes of their own ------------------------
# Routes that answer a stable code (`UNKNOWN_EVENT_NAME`, `CURRENCY_NOT_ISO4217`) check these values
# themselves; the schema lists the same values, so a client built from it sends no other.

EVENT_NAME_ENUM: dict[str, Any] = {"enum": sorted(CANONICAL_EVENT_NAMES)}
# A site id in a query string; in a body it is `ingest.schemas.SiteIdText`. Not a uuid: 400 `INVALID_SITE_ID`.
SITE_ID_FORMAT: dict[str, Any] = {"format": "uuid"}
UUID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
CURRENCY_ENUM: dict[str, Any] = {"enum": sorted(ISO4217_CODES)}


def leave_out_unset(schema: dict[str, Any]) -> None:
    """``json_schema_extra`` of a partial update whose fields are ``X | SkipJsonSchema[None] = None``:
    a field is left out to keep its value, never sent as null, so the schema shows no null default."""
    for spec in schema.get("properties", {}).values():
        if "default" in spec and spec["default"] is None:
            del spec["default"]
