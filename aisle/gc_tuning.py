"""The garbage collector set for serving, in the server and in its batch workers."""

from __future__ import annotations

import gc

GC_YOUNG_THRESHOLD = 50_000


def tune_for_serving() -> None:
    """Call once start-up is done. What is alive then (modules, models, routes) lives as long as the
    process. Frozen, the collector stops re-walking it on every full collection, each of which would
    stall the requests under way. A request allocates hundreds of containers that die with it; at the
    default threshold (700) the youngest generation is collected every few requests, re-walking every
    batch in flight. The costs measured are in docs/decisions.md."""
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
