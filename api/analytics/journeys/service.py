"""Journeys: the reports over the lake, one journey or 404, and the rows of the export."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

from api.analytics.journeys import schemas
from api.analytics.scope import date_range
from api.errors import NotFound
from queries import journeys
from queries.journeys import JourneyRange
from warehouse.config_store.sites import Site
from warehouse.engine import Engine


def journey_range(site: Site, *, start_date: date | None, end_date: date | None) -> JourneyRange:
    """Journeys whose first entry falls between two inclusive days of the site's time zone (the last 30
    by default)."""
    start, end = date_range(site, start_date, end_date)
    return JourneyRange(site_id=site["id"], start_date=start, end_date=end, timezone=site["timezone"])


def list_journeys(
    engine: Engine, query: JourneyRange, *, limit: int, offset: int, converted: bool | None
) -> schemas.JourneyPage:
    return journeys.list_journeys(engine, query, limit=limit, offset=offset, converted=converted)


def get_stats(engine: Engine, query: JourneyRange) -> schemas.JourneyStats:
    return journeys.journey_stats(engine, query)


def get_funnel(engine: Engine, query: JourneyRange) -> schemas.JourneyFunnel:
    return journeys.journey_funnel(engine, query)


def get_or_raise(engine: Engine, *, site: Site, journey_id: str) -> schemas.JourneyDetail:
    found = journeys.get_journey(engine, site_id=site["id"], journey_id=journey_id)
    if found is None:
        raise NotFound(f"No journey '{journey_id}' on this site", code="JOURNEY_NOT_FOUND")
    return found


def get_sequence_insights(engine: Engine, query: JourneyRange, *, limit: int) -> schemas.SequenceInsights:
    return journeys.sequence_insights(engine, query, limit=limit)


def list_sequences(engine: Engine, query: JourneyRange, *, limit: int, offset: int) -> schemas.SequencePage:
    return journeys.journey_sequences(engine, query, limit=limit, offset=offset)


def export_name(query: JourneyRange) -> str:
    return f"journeys-{query.site_id}-{query.start_date}-{query.end_date}"


def export_rows(
    engine: Engine, query: JourneyRange, *, limit: int, converted: bool | None
) -> Iterator[schemas.Journey]:
    """The list's journeys from the newest on, at most ``limit``, read in batches as they are sent."""
    return journeys.iter_journeys(engine, query, limit=limit, converted=converted)


def csv_values(rows: Iterator[schemas.Journey]) -> Iterator[list[Any]]:
    """A journey each, in ``schemas.EXPORT_COLUMNS``: `converted` as true/false, `revenue` per currency as
    `EUR 30.5;USD 20`."""
    for journey in rows:
        row = journey.model_dump(by_alias=True, mode="json")
        row["revenue"] = ";".join(f"{r['currency']} {r['amount']}" for r in row["revenue"])
        row["converted"] = "true" if row["converted"] else "false"
        yield [row[c] for c in schemas.EXPORT_COLUMNS]


def json_rows(rows: Iterator[schemas.Journey]) -> Iterator[dict[str, Any]]:
    return (journey.model_dump(by_alias=True, mode="json") for journey in rows)
