"""Funnels: how many people go through a sequence of events, and how long each step takes.

Every step-1 event inside the entry range is a possible start (as ClickHouse's ``windowFunnel``
does); each person counts once, at the furthest step any start reaches within the conversion
window, with times taken from the earliest start that reaches that step (the person's first most
complete conversion). Events at the same microsecond sort in step order, other events first (as
``windowFunnel`` sorts them). Orders count as ``purchase`` events of their person at their time; a
``purchase`` event carrying an order's id is that same purchase, once. People are the linked user when
the visitor was ever identified, else the visitor; visitor and user ids are one namespace, so a
visitor id equal to a user id is that user. No sampling.

How it runs: DuckDB returns only two integers per event, grouped by person and in time order (the
person as a 64-bit hash of its id; the time in epoch µs packed with the event's step code, which puts
events of one microsecond in step order), and numpy walks every step-1 event forward at once, one step
at a time, with gathers over the arrays.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
from pydantic import BaseModel, Field

from queries import library
from queries.rates import rate
from warehouse.engine import Engine

Order = Literal["sequential", "strict", "any"]
DEFAULT_WINDOW_SECONDS = 14 * 24 * 3600
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PART_ROWS = 2_000_000  # rows walked together: bounded temporaries, and work for every core


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


@dataclass(frozen=True)
class Progress:
    """The people who entered, each at its first most complete conversion: ``person[i]`` reached
    ``level[i]`` steps, step ``k`` at ``times[i, k]`` (epoch µs; columns past the level mean nothing)."""

    person: np.ndarray
    level: np.ndarray
    times: np.ndarray


# --- the walk -----------------------------------------------------------------------------------
#
# The rows are events grouped by person and in time order within each person; a row index stands
# for an event. ``end[i]`` is one past the last row of row i's person, so a later row belongs to the
# same person exactly when it lies before ``end[i]``.


def _codes(steps: tuple[str, ...]) -> list[int]:
    """Each step's event code: the 1-based position of its name among the distinct step names (0 is
    every other event)."""
    names = list(dict.fromkeys(steps))
    return [names.index(step) + 1 for step in steps]


class _Rows:
    def __init__(self, person: np.ndarray, ts: np.ndarray, code: np.ndarray) -> None:
        self.ts, self.code, self.n = ts, code, len(ts)
        ends = np.append(np.flatnonzero(person[1:] != person[:-1]) + 1, self.n)
        self.end = np.repeat(ends, np.diff(ends, prepend=0))
        self._next: dict[int, np.ndarray] = {}

    def next_of(self, wanted: int) -> np.ndarray:
        """``next_of(c)[i]``: the first row at or after row ``i`` (0..n) with code ``c``, ``n`` when
        none: a reverse running minimum, computed once per code."""
        if wanted not in self._next:
            found = np.full(self.n + 1, self.n, dtype=np.int64)
            hits = np.flatnonzero(self.code == wanted)
            found[hits] = hits
            reverse = found[::-1]
            np.minimum.accumulate(reverse, out=reverse)
            self._next[wanted] = found
        return self._next[wanted]

    def within(self, candidate: np.ndarray, end: np.ndarray, deadline: np.ndarray) -> np.ndarray:
        """Which candidate rows are their start's person's and no later than its deadline."""
        return (candidate < end) & (self.ts.take(candidate, mode="clip") <= deadline)


def _walk(
    rows: _Rows,
    starts: np.ndarray,
    codes: list[int],
    *,
    window_us: int,
    order: Order,
    record: bool = False,
    second: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """From each start (the row of a step-1 event), the number of steps reached, taking at every
    step the earliest event that qualifies (which reaches the furthest step possible from that
    start); with ``record``, also the row of every step reached (-1 past the level). ``second``: the
    step-2 candidate of each start when already known (sequential order)."""
    level = np.ones(len(starts), dtype=np.int64)
    # ``reached`` and ``found`` exist only with ``record``
    reached = np.full((len(starts), len(codes)), -1, dtype=np.int64) if record else None
    if reached is not None:
        reached[:, 0] = starts
    every, end, deadline = np.arange(len(starts)), rows.end[starts], rows.ts[starts] + window_us
    if order == "any":
        # Steps 2..k in any order: of each name wanted m times, its first m events after the start.
        found = np.full((len(starts), len(codes) - 1), rows.n, dtype=np.int64) if record else None
        filled = np.zeros(len(starts), dtype=np.int64)
        for wanted, repeats in Counter(codes[1:]).items():
            alive, position, a_end, a_deadline = every, starts, end, deadline
            for _ in range(repeats):
                candidate = rows.next_of(wanted)[position + 1]
                ok = rows.within(candidate, a_end, a_deadline)
                alive, position, a_end, a_deadline = alive[ok], candidate[ok], a_end[ok], a_deadline[ok]
                if not len(alive):
                    break
                level[alive] += 1
                if found is not None:
                    found[alive, filled[alive]] = position
                    filled[alive] += 1
        if found is not None and reached is not None:
            found.sort(axis=1)
            reached[:, 1:] = np.where(found < rows.n, found, -1)
        return level, reached
    alive, position = every, starts
    for k in range(1, len(codes)):
        if order == "strict":
            candidate = position + 1
            ok = rows.within(candidate, end, deadline) & (rows.code.take(candidate, mode="clip") == codes[k])
        else:
            candidate = (
                second[alive] if k == 1 and second is not None else rows.next_of(codes[k])[position + 1]
            )
            ok = rows.within(candidate, end, deadline)
        alive, position, end, deadline = alive[ok], candidate[ok], end[ok], deadline[ok]
        if not len(alive):
            break
        level[alive] = k + 1
        if reached is not None:
            reached[alive, k] = position
    return level, reached


def _first_best(group: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Per run of equal ``group`` values (sorted), the index of the first element reaching the run's
    highest ``level``."""
    new = np.ones(len(group), dtype=bool)
    new[1:] = group[1:] != group[:-1]
    run = np.cumsum(new) - 1
    best = np.maximum.reduceat(level, np.flatnonzero(new))
    reaching = np.flatnonzero(level == best[run])
    return reaching[np.diff(run[reaching], prepend=-1) != 0]


def _sequential_starts(rows: _Rows, starts: np.ndarray, codes: list[int], *, window_us: int) -> np.ndarray:
    """Per person, the first start reaching the person's furthest step, in sequential order.

    Starts of one person that see the same next step-2 event follow the same chain from there on;
    the last of them has the most time left, so only it is walked. In the person's first run whose
    last start reaches the best level, the earliest start reaching it is the first one no more than
    the window before the chain's last step."""
    second = rows.next_of(codes[1])[starts + 1]
    end = rows.end[starts]
    last = np.ones(len(starts), dtype=bool)
    last[:-1] = (second[1:] != second[:-1]) | (end[1:] != end[:-1])
    tails = np.flatnonzero(last)
    level, _ = _walk(
        rows, starts[tails], codes, window_us=window_us, order="sequential", second=second[tails]
    )
    pick = _first_best(end[tails], level)
    heads = np.concatenate(([0], tails[:-1] + 1))[pick]
    tail = tails[pick]
    best, reached = _walk(
        rows, starts[tail], codes, window_us=window_us, order="sequential", record=True, second=second[tail]
    )
    assert reached is not None  # recorded
    last_step = reached[np.arange(len(tail)), best - 1]
    earliest = np.where(best > 1, rows.ts[last_step] - window_us, np.iinfo(np.int64).min)
    low, high = heads, tail  # the answer lies in [low, high]; high always qualifies
    while (open_ := low < high).any():
        middle = (low + high) // 2
        qualifies = rows.ts[starts[middle]] >= earliest
        high = np.where(open_ & qualifies, middle, high)
        low = np.where(open_ & ~qualifies, middle + 1, low)
    return starts[low]


def walk_funnel(
    person: np.ndarray,
    ts: np.ndarray,
    code: np.ndarray,
    *,
    codes: list[int],
    window_us: int,
    order: Order,
    entry: tuple[int, int],
) -> Progress:
    """The funnel over events grouped by ``person`` and in time order within each person: ``ts`` in
    epoch µs, ``code`` each event's step code (see ``_codes``), ``codes`` the code of each step and
    ``entry`` the [start, end) range of step-1 events that count as starts."""
    rows = _Rows(person, ts, code)
    starts = np.flatnonzero((code == codes[0]) & (ts >= entry[0]) & (ts < entry[1]))
    if not len(starts):
        return Progress(person[:0], np.empty(0, dtype=np.int64), np.empty((0, len(codes)), dtype=np.int64))
    if order == "sequential":
        chosen = _sequential_starts(rows, starts, codes, window_us=window_us)
    else:
        level, _ = _walk(rows, starts, codes, window_us=window_us, order=order)
        chosen = starts[_first_best(rows.end[starts], level)]
    level, reached = _walk(rows, chosen, codes, window_us=window_us, order=order, record=True)
    assert reached is not None  # recorded
    times = np.where(reached >= 0, ts[np.maximum(reached, 0)], 0)
    return Progress(person[chosen], level, times)


# --- the report ---------------------------------------------------------------------------------


def summarise_progress(progress: Progress, steps: tuple[str, ...]) -> FunnelReport:
    """Counts per step (people at that step or further) and times between consecutive steps."""
    entered = len(progress.level)
    rows = []
    previous = entered
    for k, name in enumerate(steps):
        reached = progress.level > k
        count = int(reached.sum())
        gaps = np.empty(0)
        if k and count:
            gaps = (progress.times[reached, k] - progress.times[reached, k - 1]) / 1e6
        rows.append(
            FunnelStep(
                event_name=name,
                count=count,
                conversion_rate=rate(count, entered),
                drop_off=previous - count,
                # fsum: the exactly rounded sum, so the mean does not depend on the order of people
                avg_time_to_convert_seconds=round(math.fsum(gaps.tolist()) / len(gaps), 3)
                if len(gaps)
                else None,
                median_time_to_convert_seconds=round(float(np.median(gaps)), 3) if len(gaps) else None,
            )
        )
        previous = count
    return FunnelReport(
        steps=rows, total_entered=entered, overall_conversion_rate=rate(rows[-1].count, entered)
    )


def _utc_bounds(query: FunnelQuery) -> tuple[datetime, datetime]:
    zone = ZoneInfo(query.timezone)
    start = datetime.combine(query.start_date, time.min, zone)
    end = datetime.combine(query.end_date + timedelta(days=1), time.min, zone)
    return start, end


def _scan_params(query: FunnelQuery) -> tuple[dict[str, Any], tuple[int, int]]:
    """The bound parameters of ``funnel_events`` and the entry range in epoch µs."""
    entry_start, entry_end = _utc_bounds(query)
    scan_end = entry_end + timedelta(seconds=query.window_seconds)
    names = list(dict.fromkeys(query.steps))
    params = {
        "site_id": query.site_id,
        "scan_start": entry_start.date() - timedelta(days=1),
        "scan_end": scan_end.date() + timedelta(days=1),
        "scan_end_ts": scan_end,
        "entry_start": entry_start,
        "all_names": query.order == "strict",
        "step_names": names,
        "code_span": 1 << len(names).bit_length(),
    }
    return params, (int(entry_start.timestamp() * 1e6), int(entry_end.timestamp() * 1e6))


def _parts(person: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) row ranges of about ``PART_ROWS`` rows each, cut between people (``person`` is
    sorted)."""
    cuts = [0]
    while len(person) - cuts[-1] > PART_ROWS:
        cut = int(np.searchsorted(person, person[cuts[-1] + PART_ROWS - 1], side="right"))
        if cut == len(person):
            break
        cuts.append(cut)
    return list(zip(cuts, [*cuts[1:], len(person)], strict=True))


def _progress(engine: Engine, query: FunnelQuery) -> Progress:
    params, entry = _scan_params(query)
    table = library.run(engine, "funnel_events", params)
    person = table["person_key"].to_numpy()
    key = table["event_key"].to_numpy()
    bits = params["code_span"].bit_length() - 1
    code = (key & (params["code_span"] - 1)).astype(np.min_scalar_type(params["code_span"]))
    ts = key >> bits
    del table, key

    def walk(part: tuple[int, int]) -> Progress:
        rows = slice(*part)
        return walk_funnel(
            person[rows],
            ts[rows],
            code[rows],
            codes=_codes(query.steps),
            window_us=query.window_seconds * 1_000_000,
            order=query.order,
            entry=entry,
        )

    # numpy lets go of the GIL in its loops, so parts of people walk side by side
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = list(pool.map(walk, _parts(person)))
    return Progress(*(np.concatenate([getattr(p, f) for p in done]) for f in ("person", "level", "times")))


def funnel(engine: Engine, query: FunnelQuery) -> FunnelReport:
    """People entering by step 1 between ``start_date`` and ``end_date`` (inclusive, site time zone)
    and how far each got within ``window_seconds`` of their start, under the step ``order``."""
    return summarise_progress(_progress(engine, query), query.steps)


def funnel_progress(engine: Engine, query: FunnelQuery) -> Iterator[tuple[str, list[int]]]:
    """Every person who entered the funnel, in person-id order, with the epoch-µs times of the steps
    of their first most complete conversion (``times[k]`` is when step ``k`` was reached): the
    progress the report summarises, with the ids behind the person hashes (refused, rather than
    merged, if two ids ever share a hash)."""
    progress = _progress(engine, query)
    if not len(progress.level):
        return
    params, _ = _scan_params(query)
    entry_start, entry_end = _utc_bounds(query)
    ids = library.run(
        engine,
        "funnel_people",
        {
            "site_id": query.site_id,
            "scan_start": params["scan_start"],
            "scan_end": params["scan_end"],
            "entry_start": entry_start,
            "entry_end": entry_end,
            "first_step": query.steps[0],
        },
    )
    names: dict[int, str] = {}
    for key, person_id in zip(ids["person_key"].to_pylist(), ids["person_id"].to_pylist(), strict=True):
        if names.setdefault(key, person_id) != person_id:
            raise RuntimeError(f"two people share the hash {key}: {names[key]!r}, {person_id!r}")
    order = sorted(range(len(progress.level)), key=lambda i: names[int(progress.person[i])])
    for i in order:
        yield names[int(progress.person[i])], progress.times[i, : progress.level[i]].tolist()


def people_at_step(engine: Engine, query: FunnelQuery, *, step: int) -> Iterator[tuple[str, datetime]]:
    """The people who reached step number ``step`` (0-based) of the funnel, with the UTC time they
    reached it on their first most complete conversion: the people counted at that step of the
    report, in person-id order. In any order that is step 1 and any ``step`` of the other steps,
    whichever they are, reached when the last of them happened."""
    for person_id, times in funnel_progress(engine, query):
        if len(times) > step:
            yield person_id, EPOCH + timedelta(microseconds=times[step])
