"""Funnels: how many people go through a sequence of events, and how long each step takes.

Every step-1 event inside the entry range is a possible start (as ClickHouse's ``windowFunnel``
does); each person counts once, at the furthest step any start reaches within the conversion
window, with times taken from the earliest start that reaches that step. No sampling.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import pyarrow as pa
from pydantic import BaseModel, Field

from queries import library
from warehouse.engine import Engine

Order = Literal["sequential", "strict", "any"]
DEFAULT_WINDOW_SECONDS = 14 * 24 * 3600
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FunnelStep(BaseModel):
    event_name: str = Field(serialization_alias="eventName")
    count: int
    conversion_rate: float = Field(serialization_alias="conversionRate", description="count / people entered")
    drop_off: int = Field(serialization_alias="dropOff", description="people lost since the previous step")
    avg_time_to_convert_seconds: float | None = Field(serialization_alias="avgTimeToConvertSeconds")
    median_time_to_convert_seconds: float | None = Field(serialization_alias="medianTimeToConvertSeconds")


class FunnelReport(BaseModel):
    steps: list[FunnelStep]
    total_entered: int = Field(serialization_alias="totalEntered")
    overall_conversion_rate: float = Field(serialization_alias="overallConversionRate")


@dataclass(frozen=True)
class FunnelQuery:
    site_id: str
    steps: tuple[str, ...]
    start_date: date
    end_date: date
    timezone: str = "UTC"
    window_seconds: int = DEFAULT_WINDOW_SECONDS
    order: Order = "sequential"


# --- one person ---------------------------------------------------------------------------------


def _chain(
    events: list[tuple[int, str]], start: int, steps: tuple[str, ...], window_us: int, order: Order
) -> list[int]:
    """Times of the steps reached from the step-1 event at ``start`` (greedy earliest next match,
    which reaches the furthest step possible from that start)."""
    first_ts = events[start][0]
    times = [first_ts]
    if order == "any":
        wanted = Counter(steps[1:])
        for ts, name in events[start + 1 :]:
            if ts - first_ts > window_us or not wanted:
                break
            if wanted[name] > 0:
                wanted[name] -= 1
                times.append(ts)
        return times
    position = start
    for step in steps[1:]:
        if order == "strict":
            nxt = position + 1
            if nxt >= len(events) or events[nxt][1] != step or events[nxt][0] - first_ts > window_us:
                break
            position = nxt
        else:
            for candidate in range(position + 1, len(events)):
                ts, name = events[candidate]
                if ts - first_ts > window_us:
                    return times
                if name == step:
                    position = candidate
                    break
            else:
                break
        times.append(events[position][0])
    return times


def person_progress(
    events: list[tuple[int, str]],
    steps: tuple[str, ...],
    *,
    window_us: int,
    order: Order,
    entry: tuple[int, int],
) -> list[int]:
    """The step times of a person's first most complete conversion (empty when never entered).
    ``events`` are the person's (epoch-µs, name) in time order; ``entry`` the [start, end) range."""
    best: list[int] = []
    for index, (ts, name) in enumerate(events):
        if name != steps[0] or not entry[0] <= ts < entry[1]:
            continue
        times = _chain(events, index, steps, window_us, order)
        if len(times) > len(best):
            best = times
            if len(best) == len(steps):
                break
    return best


# --- the report ---------------------------------------------------------------------------------


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def summarise(progress: list[list[int]], steps: tuple[str, ...]) -> FunnelReport:
    """Counts per step (people at that step or further) and times between consecutive steps."""
    entered = sum(1 for p in progress if p)
    rows = []
    previous = entered
    for k, name in enumerate(steps):
        reached = [p for p in progress if len(p) > k]
        gaps = [(p[k] - p[k - 1]) / 1e6 for p in reached] if k else []
        rows.append(
            FunnelStep(
                event_name=name,
                count=len(reached),
                conversion_rate=_rate(len(reached), entered),
                drop_off=previous - len(reached),
                avg_time_to_convert_seconds=round(statistics.fmean(gaps), 3) if gaps else None,
                median_time_to_convert_seconds=round(statistics.median(gaps), 3) if gaps else None,
            )
        )
        previous = len(reached)
    return FunnelReport(
        steps=rows, total_entered=entered, overall_conversion_rate=_rate(rows[-1].count, entered)
    )


def _utc_bounds(query: FunnelQuery) -> tuple[datetime, datetime]:
    zone = ZoneInfo(query.timezone)
    start = datetime.combine(query.start_date, time.min, zone)
    end = datetime.combine(query.end_date + timedelta(days=1), time.min, zone)
    return start, end


def _scan_params(query: FunnelQuery) -> tuple[dict[str, Any], tuple[int, int]]:
    """The bound parameters of ``funnel_sequences`` and the entry range in epoch µs."""
    entry_start, entry_end = _utc_bounds(query)
    scan_end = entry_end + timedelta(seconds=query.window_seconds)
    params = {
        "site_id": query.site_id,
        "scan_start": entry_start.date() - timedelta(days=1),
        "scan_end": scan_end.date() + timedelta(days=1),
        "scan_end_ts": scan_end,
        "entry_start": entry_start,
        "entry_end": entry_end,
        "first_step": query.steps[0],
        "all_names": query.order == "strict",
        "step_names": list(dict.fromkeys(query.steps)),
    }
    return params, (int(entry_start.timestamp() * 1e6), int(entry_end.timestamp() * 1e6))


def _people(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """(person_id, [(epoch-µs, name), ...]) per person from rows ordered by person, then time; a
    person's rows may run across batches."""
    current = ""
    events: list[tuple[int, str]] = []
    for batch in batches:
        columns = (batch.column(n).to_pylist() for n in ("person_id", "ts_us", "name"))
        for person, ts, name in zip(*columns, strict=True):
            if person != current and events:
                yield current, events
                events = []
            current = person
            events.append((ts, name))
    if events:
        yield current, events


def funnel_progress(engine: Engine, query: FunnelQuery) -> Iterator[tuple[str, list[int]]]:
    """Every person who entered the funnel, in person-id order, with the epoch-µs times of the steps
    of their first most complete conversion (``times[k]`` is when step ``k`` was reached). Streamed
    from the engine batch by batch: the report and the per-person export both read this."""
    params, entry = _scan_params(query)
    window_us = query.window_seconds * 1_000_000
    for person_id, events in _people(library.stream(engine, "funnel_sequences", params)):
        times = person_progress(events, query.steps, window_us=window_us, order=query.order, entry=entry)
        if times:
            yield person_id, times


def funnel(engine: Engine, query: FunnelQuery) -> FunnelReport:
    """People entering by step 1 between ``start_date`` and ``end_date`` (inclusive, site time zone)
    and how far each got within ``window_seconds`` of their start, under the step ``order``."""
    return summarise([times for _, times in funnel_progress(engine, query)], query.steps)


def people_at_step(engine: Engine, query: FunnelQuery, *, step: int) -> Iterator[tuple[str, datetime]]:
    """The people who reached step number ``step`` (0-based) of the funnel, with the UTC time they
    reached it on their first most complete conversion: the people counted at that step of the
    report, in person-id order."""
    for person_id, times in funnel_progress(engine, query):
        if len(times) > step:
            yield person_id, EPOCH + timedelta(microseconds=times[step])
