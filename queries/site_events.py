"""Site-level event analytics: key metrics, event pages, time series."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import orjson

from queries import library
from queries.overview import Scope, overview
from warehouse.engine import Engine

Bucket = Literal["hour", "day", "week"]
STEP = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}


def site_metrics(engine: Engine, site_id: str, scope: Scope) -> dict[str, Any]:
    """Overview counts plus session shape: bounce rate (sessions with one event), average session
    duration and events per session."""
    base = overview(engine, scope)
    sessions = library.run(
        engine,
        "site_sessions",
        {"site_id": site_id, "start_date": scope.start_date, "end_date": scope.end_date},
    ).to_pylist()[0]
    return {
        **base["totals"],
        "bounceRate": round(sessions["bounces"] / sessions["sessions"], 6) if sessions["sessions"] else 0.0,
        "avgSessionDurationSeconds": round(float(sessions["avg_seconds"]), 3),
        "avgEventsPerSession": round(float(sessions["avg_events"]), 3),
        "purchaseConversionRate": base["purchaseConversionRate"],
        "revenueByCurrency": base["revenueByCurrency"],
        "mixedCurrency": base["mixedCurrency"],
    }


def events_page(
    engine: Engine, site_id: str, scope: Scope, *, limit: int, offset: int, name: str | None = None,
    source: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    rows = library.run(
        engine,
        "site_events_page",
        {"site_id": site_id, "start_date": scope.start_date, "end_date": scope.end_date, "name": name,
         "source": source, "limit": limit, "offset": offset},
    ).to_pylist()  # fmt: skip
    total = rows[0]["total"] if rows else 0
    return {
        "total": total,
        "limit": limit,
        "offset": offset,
        "events": [
            {
                "eventId": r["event_id"],
                "name": r["name"],
                "timestamp": r["ts"].isoformat(),
                "visitorId": r["visitor_id"],
                "sessionId": r["session_id"],
                "journeyId": r["journey_id"],
                "userId": r["user_id"],
                "url": r["url"],
                "entityType": r["entity_type"],
                "entityId": r["entity_id"],
                "productItemCode": r["product_item_code"],
                "categoryPath": r["category_path"],
                "metadata": orjson.loads(r["metadata"]) if r["metadata"] else {},
                "channel": r["channel"],
            }  # fmt: skip
            for r in rows
        ],
    }


def timeseries(
    engine: Engine, site_id: str, *, start: date, end: date, timezone: str, interval: Bucket, name: str | None
) -> list[dict[str, Any]]:
    """Every bucket from start to end (site time zone), zero buckets included."""
    zone = ZoneInfo(timezone)
    range_start = datetime.combine(start, time.min, zone)
    range_end = datetime.combine(end + timedelta(days=1), time.min, zone)
    rows = library.run(
        engine,
        "events_timeseries",
        {"site_id": site_id, "start_date": start - timedelta(days=1), "end_date": end + timedelta(days=1),
         "range_start": range_start, "range_end": range_end, "interval": interval, "timezone": timezone,
         "name": name},
    ).to_pylist()  # fmt: skip
    found = {r["bucket"]: r for r in rows}
    bucket = datetime.combine(start, time.min)
    if interval == "week":
        bucket -= timedelta(days=bucket.weekday())
    out = []
    while bucket < range_end.replace(tzinfo=None):
        row = found.get(bucket, {"events": 0, "people": 0})
        out.append({"bucket": bucket.isoformat(), "events": row["events"], "people": row["people"]})
        bucket += STEP[interval]
    return out
