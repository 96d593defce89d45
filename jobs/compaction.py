"""Job: compact the lake's small flush files, purge retired partition versions, and roll up the
visitor activity of months that have ended (the compacted files are what the rollups stand for)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ingest.service import Ingest
from warehouse import visitor_activity
from warehouse.compaction import CompactionResult, compact_table, purge_retired
from warehouse.engine import Engine
from warehouse.lake import TABLES

JOB_ID = "compact-lake"


def compact_lake(
    ingest: Ingest, engine: Engine | None = None, timezones: Callable[[], Mapping[str, str]] | None = None
) -> dict[str, CompactionResult]:
    results = {}
    for name, table in TABLES.items():
        results[name] = compact_table(ingest.lake, table, writer_lock=ingest.flushers[name].lock)
        purge_retired(ingest.lake, table)
    if engine is not None:
        visitor_activity.refresh(engine, timezones() if timezones else {})
    return results
