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

import polars as pl
import pyarrow.parquet as pq
import structlog

from warehouse.lake import Lake, LakeTable, fsync_path, retire

log = structlog.get_logger("aisle.compaction")

TARGET_FILE_BYTES = 128 * 1024 * 1024
# Big row groups: few, large reads per scan; sorted by name, a name filter still skips most of them.
ROW_GROUP_ROWS = 1_000_000
SMALL_FILE_BYTES = 64 * 1024 * 1024
GRACE_SECONDS = 15 * 60
# A run is read whole into memory and held about three times over while it sorts and writes. Storefront
# events take ~10 bytes in memory per byte of flush file (URLs, metadata JSON): a run is cut by that
# estimate too, so a busy day's partition merges in several files of ~1.4 M such events (~1.5 GiB at
# the peak) rather than one of 256 MB of input (~8 GiB), inside the server process of an embedded install.
RUN_MEMORY_BYTES = 512 * 1024 * 1024


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


def _batches(files: list[Path], limit: int) -> Iterator[list[Path]]:
    """``files`` in runs of at most ``limit`` bytes (at least one file each): one merged file per run,
    so a partition of any size merges in bounded memory."""
    run: list[Path] = []
    size = 0
    for path in files:
        grows = path.stat().st_size
        if run and size + grows > limit:
            yield run
            run, size = [], 0
        run.append(path)
        size += grows
    if run:
        yield run


def _run_limit(files: list[Path], schema: pl.Schema, target_bytes: int) -> int:
    """Bytes of small files a run may take: twice the target file (files shrink about by half once
    merged), or fewer when their rows would decode past ``RUN_MEMORY_BYTES``, as measured on the
    largest of them."""
    sample = max(files, key=lambda p: p.stat().st_size)
    decoded = pl.scan_parquet(sample, schema=schema, missing_columns="insert").collect().estimated_size()
    return min(2 * target_bytes, int(RUN_MEMORY_BYTES * sample.stat().st_size // max(decoded, 1)))


def _filled_columns(files: list[Path]) -> set[str]:
    """The columns some row of ``files`` fills, from the files' statistics (no data is read)."""
    filled: set[str] = set()
    for path in files:
        metadata = pq.read_metadata(path)
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            for c in range(group.num_columns):
                column = group.column(c)
                stats = column.statistics
                if stats is None or not stats.has_null_count or stats.null_count < group.num_rows:
                    filled.add(column.path_in_schema.split(".")[0])
    return filled


def _cluster_key(frame: pl.DataFrame, sort_by: tuple[str, ...]) -> pl.Series:
    """One 64-bit key per row: the rank of the first column's value in its high bits, a hash of the
    second's in the rest. Sorted on it, rows come in the first column's order and, within each of its
    values, each value of the second sits together (grouped by hash, not in order), which is what
    row-group pruning and joins need; one integer sorts ~6x faster than two string columns."""
    first = frame[sort_by[0]].cast(pl.String)
    values = first.unique().drop_nulls().sort()
    # Ranks start at 1: a missing value sorts first, apart from every value.
    bits = (len(values) + 1).bit_length()
    rank = (first.cast(pl.Enum(values)).to_physical().cast(pl.UInt64) + 1).fill_null(0)
    key = rank * pl.Series([1 << (64 - bits)], dtype=pl.UInt64)
    if len(sort_by) > 1:
        key = key + frame[sort_by[1]].hash() // pl.Series([1 << bits], dtype=pl.UInt64)
    return key


def _merge(files: list[Path], version: Path, *, table: LakeTable, target_bytes: int) -> tuple[int, int]:
    """Merge ``files`` into sorted files in ``version``; returns (files, rows).

    polars reads the small files on all cores (a small file with less than half the CPU pyarrow's
    datasets take) and sorts the run in memory on one integer key. A column an older file lacks
    reads as nulls of its type."""
    empty = pl.from_arrow(table.schema.empty_table())
    assert isinstance(empty, pl.DataFrame)  # a table converts to a frame, only an array to a series
    schema = empty.schema
    outputs = rows = 0
    for run in _batches(files, _run_limit(files, schema, target_bytes)):
        path = version / f"compact-{uuid.uuid4().hex}.parquet"
        # Sorting carries every column along, and most columns of most events are empty: those
        # join again as typed nulls after the sort.
        # The sort keys are always kept: sorting needs them whatever the statistics say.
        filled = _filled_columns(run) | set(table.sort_by)
        frame = (
            pl.scan_parquet(run, schema=schema, missing_columns="insert")
            .select([name for name in schema if name in filled])
            .collect()
            .rechunk()
        )
        if table.sort_by:
            frame = frame.sort(_cluster_key(frame, table.sort_by), maintain_order=True)
        # pyarrow writes the run with half the CPU polars' writer takes, most of it saved on the
        # empty columns (typed nulls cost polars ~20 ms a column per million rows).
        merged = table.conform(frame.to_arrow(compat_level=pl.CompatLevel.newest()), keep_string_views=True)
        pq.write_table(
            merged, path, row_group_size=ROW_GROUP_ROWS, store_schema=False, **table.parquet_options()
        )
        rows += merged.num_rows
        outputs += 1
        del frame, merged  # before the next run is read
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
    retire(old_version)
    return len(small), outputs, bytes_in, rows


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
