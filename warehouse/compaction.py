"""Compaction: merge a partition's small flush files into large files, swapped in atomically.

The merged files go to a new version directory; under the writer's lock, files flushed meanwhile
are hard-linked into it and the partition symlink is renamed onto it. Old versions stay on disk for
a grace period so queries that already listed their files can finish.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import structlog

from warehouse.lake import Lake, LakeTable, fsync_path

log = structlog.get_logger("aisle.compaction")

TARGET_FILE_BYTES = 128 * 1024 * 1024
ROW_GROUP_ROWS = 1_000_000
SMALL_FILE_BYTES = 64 * 1024 * 1024
GRACE_SECONDS = 15 * 60


@dataclass
class CompactionResult:
    partitions: int = 0
    files_in: int = 0
    files_out: int = 0
    bytes_in: int = 0
    rows: int = 0
    seconds: float = 0.0


def _small_files(partition: Path) -> list[Path]:
    return sorted(p for p in partition.glob("*.parquet") if p.stat().st_size < SMALL_FILE_BYTES)


def _row_groups(dataset: ds.Dataset, rows_per_group: int) -> Iterator[pa.Table]:
    """The dataset's rows in tables of ``rows_per_group`` rows (the last one shorter). Batches come
    one small file at a time; written as they come, each would stay a tiny row group."""
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    for batch in dataset.to_batches(batch_size=rows_per_group):
        pending.append(batch)
        pending_rows += batch.num_rows
        if pending_rows >= rows_per_group:
            group = pa.Table.from_batches(pending, schema=dataset.schema)
            yield group.slice(0, rows_per_group)
            rest = group.slice(rows_per_group)
            pending, pending_rows = rest.to_batches(), rest.num_rows
    if pending_rows:
        yield pa.Table.from_batches(pending, schema=dataset.schema)


def _clustered(group: pa.Table, column: str) -> Iterator[pa.Table]:
    """The group's rows in one run per value of ``column``, each run keeping its rows' order.

    Written as separate row groups, every run's statistics name a single value, so a query filtering
    on that column (analytics filter on the event name almost always) skips the other runs' row
    groups instead of decoding them: carts and purchases are a sixth of a storefront's events."""
    values = group.column(column)
    if values.null_count:
        values = pc.fill_null(values, "")
    codes = pc.dictionary_encode(values).combine_chunks().indices.to_numpy()
    order = pa.array(np.argsort(codes, kind="stable"))
    # Columns no event of the group fills (often most of them) are the same in any order.
    reordered = pa.Table.from_arrays(
        [c if c.null_count == len(c) else c.take(order) for c in group.columns], schema=group.schema
    )
    start = 0
    for rows in np.bincount(codes):
        yield reordered.slice(start, int(rows))
        start += int(rows)


def _merge(files: list[Path], version: Path, *, table: LakeTable, target_bytes: int) -> tuple[int, int]:
    """Stream ``files`` into files of about ``target_bytes`` in ``version``; returns (files, rows)."""
    # The table's own schema: no schema inference that would open every small file an extra time.
    dataset = ds.dataset([str(f) for f in files], format="parquet", schema=table.schema)
    writer = None
    outputs = rows = 0
    for group in _row_groups(dataset, ROW_GROUP_ROWS):
        if writer is None:
            path = version / f"compact-{uuid.uuid4().hex}.parquet"
            writer = pq.ParquetWriter(path, table.schema, **table.parquet_options())
            outputs += 1
        runs = _clustered(group, table.cluster_by) if table.cluster_by else (group,)
        for run in runs:
            writer.write_table(run, row_group_size=ROW_GROUP_ROWS)
        rows += group.num_rows
        if path.stat().st_size >= target_bytes:
            writer.close()
            writer = None
    if writer is not None:
        writer.close()
    for output in version.glob("*.parquet"):
        fsync_path(output)
    return outputs, rows


def compact_partition(
    lake: Lake,
    table: LakeTable,
    partition: Path,
    *,
    writer_lock: AbstractContextManager,
    target_bytes: int = TARGET_FILE_BYTES,
) -> tuple[int, int, int, int] | None:
    """Compact one partition; None when it has fewer than two small files."""
    small = _small_files(partition)
    if len(small) < 2:
        return None
    bytes_in = sum(p.stat().st_size for p in small)
    version = lake.new_version(table, partition)
    outputs, rows = _merge(small, version, table=table, target_bytes=target_bytes)
    with writer_lock:
        merged = {p.name for p in small}
        for current in partition.glob("*.parquet"):
            # Big files that were not merged, and files flushed while we merged, carry over as they are.
            if current.name not in merged:
                os.link(current, version / current.name)
        fsync_path(version)
        old_version = partition.resolve()
        lake.point(partition, version)
    _retire(old_version)
    return len(small), outputs, bytes_in, rows


def _retire(version: Path) -> None:
    marker = version / ".retired"
    marker.write_text(str(time.time()))


def purge_retired(lake: Lake, table: LakeTable, *, grace_seconds: float = GRACE_SECONDS) -> int:
    """Delete versions no partition points at, once their grace period is over."""
    live = lake.live_versions(table)
    removed = 0
    root = lake.versions_dir(table)
    if not root.exists():
        return 0
    for version in root.glob("*/*/*"):
        if version.resolve() in live:
            continue
        marker = version / ".retired"
        retired_at = float(marker.read_text()) if marker.exists() else version.stat().st_mtime
        if time.time() - retired_at >= grace_seconds:
            shutil.rmtree(version, ignore_errors=True)
            removed += 1
    return removed


def compact_table(
    lake: Lake,
    table: LakeTable,
    *,
    writer_lock: AbstractContextManager | None = None,
    target_bytes: int = TARGET_FILE_BYTES,
    workers: int | None = None,
) -> CompactionResult:
    """Compact every partition of ``table``, several at a time (Parquet decoding and encoding run
    outside the GIL, so partitions merge in parallel on separate cores)."""
    started = time.perf_counter()
    result = CompactionResult()
    lock = writer_lock or threading.Lock()

    def compact(partition: Path):
        return compact_partition(lake, table, partition, writer_lock=lock, target_bytes=target_bytes)

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        for done in pool.map(compact, lake.partitions(table)):
            if done:
                files_in, files_out, bytes_in, rows = done
                result.partitions += 1
                result.files_in += files_in
                result.files_out += files_out
                result.bytes_in += bytes_in
                result.rows += rows
    result.seconds = time.perf_counter() - started
    if result.partitions:
        log.info("compacted", table=table.name, **result.__dict__)
    return result
