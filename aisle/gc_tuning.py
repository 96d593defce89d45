"""The garbage collector set for serving, in the server and in its batch workers."""

from __future__ import annotations

import gc

GC_YOUNG_THRESHOLD = 50_000


def tune_for_serving() -> None:
    """Call once start-up is done. What is alive then (modules, models, routes: ~200k objects in the
    server) lives as long as the process. Frozen, the collector stops re-walking it on every full
    collection, which under load stalled requests for ~130 ms each time. A request allocates hundreds
    of containers that die with it; at the default threshold (700) the youngest generation was
    collected every few requests, re-walking every batch in flight (a quarter of the CPU time of the
    events route; bench/RESULTS.md, 2026-11-23)."""
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
