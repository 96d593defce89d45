"""Per-person views of the funnel walk, for tests: one person's step times through the vectorised walk,
and the report over hand-written step times."""

from __future__ import annotations

import numpy as np

from queries.funnel import FunnelReport, Order, Progress, _codes, summarise_progress, walk_funnel


def person_progress(
    events: list[tuple[int, str]],
    steps: tuple[str, ...],
    *,
    window_us: int,
    order: Order,
    entry: tuple[int, int],
) -> list[int]:
    """The step times of one person's first most complete conversion (empty when never entered).
    ``events`` are the person's (epoch-µs, name) in time order; ``entry`` the [start, end) range."""
    names = list(dict.fromkeys(steps))
    code = np.array([names.index(name) + 1 if name in names else 0 for _, name in events], dtype=np.int64)
    ts = np.array([when for when, _ in events], dtype=np.int64)
    progress = walk_funnel(
        np.zeros(len(events), dtype=np.int64),
        ts,
        code,
        codes=_codes(steps),
        window_us=window_us,
        order=order,
        entry=entry,
    )
    if not len(progress.level):
        return []
    return progress.times[0, : progress.level[0]].tolist()


def summarise(progress: list[list[int]], steps: tuple[str, ...]) -> FunnelReport:
    """``summarise_progress`` over per-person step-time lists (an empty list: never entered)."""
    entered = [times for times in progress if times]
    matrix = np.zeros((len(entered), len(steps)), dtype=np.int64)
    for i, times in enumerate(entered):
        matrix[i, : len(times)] = times
    level = np.array([len(times) for times in entered], dtype=np.int64)
    return summarise_progress(Progress(np.arange(len(entered)), level, matrix), steps)
