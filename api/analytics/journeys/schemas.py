"""The journey reports' answers: the report models of `queries.journeys`, and the columns of the
export."""

from __future__ import annotations

from typing import Any

from queries.journeys import (
    Journey,
    JourneyDetail,
    JourneyFunnel,
    JourneyPage,
    JourneyStats,
    SequenceInsights,
    SequencePage,
)

__all__ = [
    "EXPORT_COLUMNS",
    "JOURNEY_ROW_SCHEMA",
    "Journey",
    "JourneyDetail",
    "JourneyFunnel",
    "JourneyPage",
    "JourneyStats",
    "SequenceInsights",
    "SequencePage",
]

EXPORT_COLUMNS = (
    "journeyId",
    "personId",
    "visitorId",
    "startedAt",
    "endedAt",
    "durationSeconds",
    "eventCount",
    "converted",
    "entryUrl",
    "exitUrl",
    "revenue",
)
# The export's JSON rows are the list's journeys.
JOURNEY_ROW_SCHEMA: dict[str, Any] = {"$ref": "#/components/schemas/Journey"}
