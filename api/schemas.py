"""Base model for the wire: camelCase JSON, snake_case Python."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

from ingest.schemas import is_a_number


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class StrictCamelModel(CamelModel):
    """Request bodies: unknown fields are an error, so typos do not pass silently."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", str_strip_whitespace=True
    )


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


IsoDate = Annotated[date, _iso_not_a_number("date such as 2026-01-31")]
IsoDateTime = Annotated[datetime, _iso_not_a_number("timestamp such as 2026-01-31T09:30:00Z")]
