"""Site-level event analytics: key metrics, event pages, time series."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, TypedDict
from zoneinfo import ZoneInfo

import orjson

from queries import library
from queries.overview import Scope, overview
from warehouse.engine import Engine

Bucket = Literal["hour", "day", "week"]
STEP = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}


def site_metrics(engine: Engine, site_id: str, scope: Scope) -> dict[str, Any]:
    """Overview counts plus session shape: bounce rate (sessions with one event), average session
    duration (last event time less first) and events per session, over the range's events (UTC days;
    a session crossing the range's edge counts with its part inside)."""
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
    engine: Engine,
    site_id: str,
    scope: Scope,
    *,
    limit: int,
    offset: int,
    name: str | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """One page of the site's events of the range (UTC days), newest first (then by id), optionally of
    one name or `metadata.source`; `total` counts every match, whichever page is asked for."""
    rows = library.run(
        engine,
        "site_events_page",
        {
            "site_id": site_id,
            "start_date": scope.start_date,
            "end_date": scope.end_date,
            "name": name,
            "source": source,
            "limit": limit,
            "offset": offset,
        },
    ).to_pylist()
    return {
        "total": rows[0]["total"],
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
            }
            for r in rows
            if r["event_id"] is not None
        ],
    }


class TimeseriesRow(TypedDict):
    bucket: str
    events: int
    people: int


def timeseries(
    engine: Engine, site_id: str, *, start: date, end: date, timezone: str, interval: Bucket, name: str | None
) -> list[TimeseriesRow]:
    """Every bucket from start to end (site time zone), zero buckets included. Days and weeks are named
    by their local date; hours by their local start with its UTC offset, so a day when summer time
    starts has 23 and one when it ends 25, the repeated hour told apart by its offset. An hour bucket is
    a run of instants with one local hour and one offset: where the offset changes by half an hour
    (Lord Howe Island) the change starts a bucket of its own, named by its first instant
    (`01:30:00+10:30`)."""
    zone = ZoneInfo(timezone)
    range_start = datetime.combine(start, time.min, zone)
    range_end = datetime.combine(end + timedelta(days=1), time.min, zone)
    params = {
        "site_id": site_id,
        "start_date": start - timedelta(days=1),
        "end_date": end + timedelta(days=1),
        "range_start": range_start,
        "range_end": range_end,
        "name": name,
    }
    if interval == "hour":
        starts = hour_starts(range_start.astimezone(UTC), range_end.astimezone(UTC), zone)
        table = library.run(engine, "events_timeseries_hourly", {**params, "bucket_starts": starts})
        labels = [(b, b.astimezone(zone).isoformat()) for b in starts]
    else:
        table = library.run(
            engine, "events_timeseries", {**params, "interval": interval, "timezone": timezone}
        )
        first = datetime.combine(start, time.min)
        if interval == "week":
            first -= timedelta(days=first.weekday())
        labels = [(b, b.isoformat()) for b in _steps(first, range_end.replace(tzinfo=None), STEP[interval])]
    found = {r["bucket"]: r for r in table.to_pylist()}
    empty = {"events": 0, "people": 0}
    return [
        {"bucket": label, "events": found.get(b, empty)["events"], "people": found.get(b, empty)["people"]}
        for b, label in labels
    ]


def hour_starts(start: datetime, end: datetime, zone: ZoneInfo) -> list[datetime]:
    """The first instant of every hour bucket in [start, end): the next local hour, or an earlier change
    of UTC offset. Instants, stepped in UTC: local wall-clock hours repeat or vanish when the offset
    changes."""
    starts = []
    moment = start
    while moment < end:
        starts.append(moment)
        local = moment.astimezone(zone)
        past = timedelta(minutes=local.minute, seconds=local.second, microseconds=local.microsecond)
        following = moment + STEP["hour"] - past
        if (following - _SECOND).astimezone(zone).utcoffset() != local.utcoffset():
            following = _offset_change(moment, following - _SECOND, zone)
        moment = following
    return starts


_SECOND = timedelta(seconds=1)


def _offset_change(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The first whole second after ``before`` (and at most ``after``) whose UTC offset is another
    (zones change offsets on whole seconds)."""
    offset = before.astimezone(zone).utcoffset()
    while after - before > _SECOND:
        middle = before + _SECOND * ((after - before) // _SECOND // 2)
        if middle.astimezone(zone).utcoffset() == offset:
            before = middle
        else:
            after = middle
    return after


def _steps(first: datetime, end: datetime, step: timedelta) -> list[datetime]:
    out = []
    while first < end:
        out.append(first)
        first += step
    return out
