"""Correlations: which events go with purchase conversion among a site's people, over the lake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from api.analytics.correlations.schemas import Correlations
from api.analytics.scope import check_report_dates
from api.errors import BadRequest
from queries.correlations import CorrelationRange, correlations
from warehouse.config_store.sites import Site
from warehouse.engine import Engine

DEFAULT_SPAN = timedelta(days=30)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def get_report(
    engine: Engine, *, site: Site, start: datetime | None, end: datetime | None, limit: int
) -> Correlations:
    """Over [start, end) (UTC when naive), by default the 30 days up to ``end`` or up to now."""
    check_report_dates(*(moment.date() for moment in (start, end) if moment is not None))
    until = _utc(end) if end else datetime.now(UTC)
    since = _utc(start) if start else until - DEFAULT_SPAN
    if since >= until:
        raise BadRequest("startDate must be before endDate", code="DATE_RANGE_INVALID")
    return correlations(engine, CorrelationRange(site_id=site["id"], start=since, end=until), limit=limit)
