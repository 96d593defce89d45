"""The funnel report's parameters and answers: step rules as the OpenAPI schema states them, the report
(`queries.funnel.FunnelReport`) and the rows of its exports."""

from __future__ import annotations

from typing import Any

from api.schemas import EVENT_NAME_ENUM
from ingest.event_names import CANONICAL_EVENT_NAMES
from queries.funnel import FunnelReport, FunnelStep

__all__ = [
    "MAX_STEPS",
    "MAX_WINDOW_SECONDS",
    "PERSON_COLUMNS",
    "PERSON_ROW_SCHEMA",
    "STEPS_PATTERN",
    "STEPS_SCHEMA",
    "STEP_COLUMNS",
    "STEP_ROW_SCHEMA",
    "FunnelReport",
    "FunnelStep",
]

MAX_STEPS = 20
MAX_WINDOW_SECONDS = 365 * 24 * 3600
# What service.parse_steps accepts, as the schema says it: 2 to MAX_STEPS canonical names (a list in a
# body; comma-separated in a query string, where this is stricter only in refusing blanks around a name).
_NAME = "(" + "|".join(sorted(CANONICAL_EVENT_NAMES)) + ")"
STEPS_PATTERN = f"^{_NAME}(,{_NAME}){{1,{MAX_STEPS - 1}}}$"
STEPS_SCHEMA: dict[str, Any] = {
    "minItems": 2,
    "maxItems": MAX_STEPS,
    "items": {"type": "string", **EVENT_NAME_ENUM},
}

# The report's steps export: a row per step, the report's FunnelStep.
STEP_COLUMNS = (
    "eventName",
    "count",
    "conversionRate",
    "dropOff",
    "avgTimeToConvertSeconds",
    "medianTimeToConvertSeconds",
)
STEP_ROW_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/FunnelStep"}

# A step's people export: a row per person.
PERSON_COLUMNS = ("personId", "reachedAt")
PERSON_ROW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "personId": {
            "type": "string",
            "description": "The linked user when ever identified, else the visitor.",
        },
        "reachedAt": {
            "type": "string",
            "format": "date-time",
            "description": "When the step was reached, UTC.",
        },
    },
    "required": list(PERSON_COLUMNS),
}
