"""Job: compact the lake's small flush files and purge retired partition versions."""

from __future__ import annotations

from ingest.service import Ingest
from warehouse.compaction import CompactionResult, compact_table, purge_retired
from warehouse.lake import TABLES

JOB_ID = "compact-lake"


def compact_lake(ingest: Ingest) -> dict[str, CompactionResult]:
    results = {}
    for name, table in TABLES.items():
        results[name] = compact_table(ingest.lake, table, writer_lock=ingest.flushers[name].lock)
        purge_retired(ingest.lake, table)
    return results
