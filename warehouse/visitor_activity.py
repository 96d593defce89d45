"""Visitor activity by local month: a rollup of the events lake that the cohort report reads instead
of every event of the whole months it covers.

One Parquet file per site and local month (in the site's time zone), a row per visitor, user id the
event itself names, and event name, plus a row over all names (name ``*``): the first event's time
and the local days of the month with an event, as bits. Its manifest names the lake files it was
built from; a rollup stands for its month only while the lake shows exactly those files (a late
flush or a compaction makes it stale until the job rebuilds it), so a report never reads a rollup
that misses an event.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow.parquet as pq
import structlog

from warehouse.engine import Engine
from warehouse.lake import EVENTS, Lake, fsync_path

log = structlog.get_logger("aisle.visitor_activity")

BUILD_SQL = (Path(__file__).parent / "sql" / "visitor_activity.sql").read_text()
ALL_NAMES = "*"
GRACE_SECONDS = 15 * 60  # replaced data files outlive queries that already chose them
# The rollup's columns; a rollup of another layout stands for nothing until the job rebuilds it.
LAYOUT = 2  # 2: purchase rows kept apart by the order they name (order_id)


def next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


@dataclass(frozen=True)
class Rollup:
    month: date  # the local month's first day
    file: Path


def month_bounds(month: date, timezone: str) -> tuple[datetime, datetime]:
    """The UTC instants where the local month starts and the next one starts."""
    zone = ZoneInfo(timezone)
    start = datetime.combine(month, clock.min, zone).astimezone(UTC)
    return start, datetime.combine(next_month(month), clock.min, zone).astimezone(UTC)


def _site_dir(lake: Lake, site_id: str) -> Path:
    return lake.root / "_rollups" / "visitor_activity" / f"site_id={site_id}"


def _sources(lake: Lake, site_id: str, start: datetime, end: datetime) -> list[str]:
    """The live files of the UTC date partitions holding [start, end), by their real paths."""
    day, last = start.date(), (end - timedelta(microseconds=1)).date()
    files: list[str] = []
    while day <= last:
        partition = lake.partition_dir(EVENTS, site_id=site_id, date=day.isoformat())
        files.extend(str(f.resolve()) for f in partition.glob("*.parquet"))
        day += timedelta(days=1)
    return sorted(files)


def build(engine: Engine, site_id: str, month: date, timezone: str) -> bool:
    """(Re)build one month's rollup; False when the lake changed meanwhile (the next run retries)."""
    lake = engine.lake
    start, end = month_bounds(month, timezone)
    sources = _sources(lake, site_id, start, end)
    if not sources:
        return False
    directory = _site_dir(lake, site_id) / f"month={month:%Y-%m}"
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / f"{uuid.uuid4().hex}.parquet"
    temp = directory / f".{data.name}.tmp"
    cursor = engine.cursor()
    try:
        # Written by DuckDB straight from the query: a month of a big site never sits in Python.
        cursor.sql(
            BUILD_SQL,
            params={
                "files": sources,
                "month": month,
                "month_start": start,
                "month_end": end,
                "timezone": timezone,
            },
        ).write_parquet(str(temp), compression="zstd")
    finally:
        cursor.close()
    if _sources(lake, site_id, start, end) != sources:
        temp.unlink(missing_ok=True)
        return False
    fsync_path(temp)
    os.replace(temp, data)
    manifest = {
        "layout": LAYOUT,
        "timezone": timezone,
        "file": data.name,
        "sources": sources,
        "rows": pq.read_metadata(data).num_rows,
    }
    temp = directory / f".manifest-{uuid.uuid4().hex}.tmp"
    temp.write_text(json.dumps(manifest))
    fsync_path(temp)
    os.replace(temp, directory / "manifest.json")
    fsync_path(directory)
    _forget_replaced(directory, keep=data.name)
    return True


def _forget_replaced(directory: Path, *, keep: str) -> None:
    """Delete data files no manifest names any more (and files a crash left half-written) once
    their grace period is over."""
    for old in [*directory.glob("*.parquet"), *directory.glob(".*.tmp")]:
        if old.name != keep and time.time() - old.stat().st_mtime >= GRACE_SECONDS:
            old.unlink(missing_ok=True)


def _manifest(directory: Path) -> dict | None:
    try:
        return json.loads((directory / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def current(lake: Lake, site_id: str, timezone: str, *, until: datetime) -> list[Rollup]:
    """The site's rollups that stand for their month now: built in ``timezone`` and today's layout,
    from exactly the files the lake shows, for months that end by ``until``. Oldest month first."""
    found = []
    for directory in sorted(_site_dir(lake, site_id).glob("month=*")):
        manifest = _manifest(directory)
        if manifest is None or manifest.get("layout") != LAYOUT or manifest["timezone"] != timezone:
            continue
        month = date.fromisoformat(directory.name.removeprefix("month=") + "-01")
        start, end = month_bounds(month, timezone)
        if end > until or _sources(lake, site_id, start, end) != manifest["sources"]:
            continue
        found.append(Rollup(month, directory / manifest["file"]))
    return found


def _months_with_events(lake: Lake, site_id: str, timezone: str) -> list[date]:
    dates = sorted(
        date.fromisoformat(p.name.removeprefix("date="))
        for p in (lake.table_dir(EVENTS) / f"site_id={site_id}").glob("date=*")
    )
    if not dates:
        return []
    zone = ZoneInfo(timezone)
    first = datetime.combine(dates[0], clock.min, UTC).astimezone(zone).date().replace(day=1)
    last = datetime.combine(dates[-1], clock.max, UTC).astimezone(zone).date()
    months, month = [], first
    while month <= last:
        months.append(month)
        month = next_month(month)
    return months


def refresh(engine: Engine, timezones: Mapping[str, str], *, now: datetime | None = None) -> int:
    """Build the rollups that are missing or stale for every month that has ended; returns how many
    were built. Sites not in ``timezones`` count in UTC."""
    now = now or datetime.now(UTC)
    lake, built = engine.lake, 0
    for site_dir in sorted(lake.table_dir(EVENTS).glob("site_id=*")):
        site_id = site_dir.name.removeprefix("site_id=")
        timezone = timezones.get(site_id, "UTC")
        try:
            fresh = {r.month for r in current(lake, site_id, timezone, until=now)}
            for month in _months_with_events(lake, site_id, timezone):
                if month not in fresh and month_bounds(month, timezone)[1] <= now:
                    built += build(engine, site_id, month, timezone)
        except Exception:
            # One site's failure (say, a time zone this machine does not know) must not keep the
            # others' rollups from being built; its reports scan the events meanwhile.
            log.exception("visitor activity rollup failed", site_id=site_id, timezone=timezone)
    if built:
        log.info("visitor activity rolled up", months=built)
    return built
