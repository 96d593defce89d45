"""Base model for the wire: camelCase JSON, snake_case Python."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


class StrictCamelModel(CamelModel):
    """Request bodies: unknown fields are an error, so typos do not pass silently."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", str_strip_whitespace=True
    )


class Ok(CamelModel):
    success: bool = True
