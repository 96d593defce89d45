"""Bodies and answers of the funnel definition routes."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from pydantic import ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from api.analytics.funnels.schemas import MAX_STEPS, MAX_WINDOW_SECONDS, STEPS_SCHEMA
from api.schemas import CamelModel, StrictCamelModel, leave_out_unset
from ingest.schemas import SiteIdText
from queries.funnel import DEFAULT_WINDOW_SECONDS, FunnelReport, Order

STEPS_DESCRIPTION = (
    f"Canonical event names in funnel order: at least two, at most {MAX_STEPS}; a name repeated means "
    "the person must do it again."
)
WINDOW_DESCRIPTION = "Conversion window from step 1 in seconds, inclusive: 1 second to 365 days."
ORDER_DESCRIPTION = (
    "sequential: each step after the previous, other events may come between; strict: no other event of "
    "the person between steps; any: steps after step 1 in any order."
)


class FunnelDefinitionCreate(StrictCamelModel):
    site_id: SiteIdText = Field(description="The site the funnel belongs to; it must be your organisation's.")
    name: str = Field(min_length=1, max_length=200)
    description: str | None = Field(default=None, max_length=2000)
    steps: list[str] = Field(description=STEPS_DESCRIPTION, json_schema_extra=STEPS_SCHEMA)
    window_seconds: int = Field(
        default=DEFAULT_WINDOW_SECONDS, ge=1, le=MAX_WINDOW_SECONDS, description=WINDOW_DESCRIPTION
    )
    order: Order = Field(default="sequential", description=ORDER_DESCRIPTION)


class FunnelDefinitionUpdate(StrictCamelModel):
    """Partial update: fields left out keep their value; `description: null` clears the description."""

    model_config = ConfigDict(json_schema_extra=leave_out_unset)

    # `X | SkipJsonSchema[None]`: null is read (to answer that it cannot be null) but never documented.
    # Bounds go on X itself: on the union pydantic writes them under the wrong names in the schema.
    name: Annotated[str, Field(min_length=1, max_length=200)] | SkipJsonSchema[None] = None
    description: str | None = Field(default=None, max_length=2000)
    steps: list[str] | SkipJsonSchema[None] = Field(
        default=None, description=STEPS_DESCRIPTION, json_schema_extra=STEPS_SCHEMA
    )
    window_seconds: Annotated[int, Field(ge=1, le=MAX_WINDOW_SECONDS)] | SkipJsonSchema[None] = Field(
        default=None, description=WINDOW_DESCRIPTION
    )
    order: Order | SkipJsonSchema[None] = Field(default=None, description=ORDER_DESCRIPTION)

    @model_validator(mode="after")
    def _required_fields_are_not_null(self) -> FunnelDefinitionUpdate:
        nulls = [
            name
            for name in ("name", "steps", "window_seconds", "order")
            if name in self.model_fields_set and getattr(self, name) is None
        ]
        if nulls:
            raise ValueError(f"Leave out a field to keep its value; it cannot be null: {', '.join(nulls)}")
        return self


class FunnelDefinitionOut(CamelModel):
    id: str
    site_id: str
    name: str
    description: str | None
    steps: list[str]
    window_seconds: int
    order: Order
    created_by: str | None = Field(description="The user who created it (or duplicated it).")
    created_at: datetime
    updated_at: datetime


class FunnelTemplate(CamelModel):
    key: str = Field(description="Stable identifier of the template.")
    name: str
    description: str
    steps: list[str]
    window_seconds: int
    order: Order


class FunnelDefinitionAnalysis(CamelModel):
    definition: FunnelDefinitionOut
    start_date: date = Field(description="First entry day, site time zone.")
    end_date: date = Field(description="Last entry day, inclusive.")
    report: FunnelReport
