"""The flusher: turns the durable log into Parquet partitions and commits what it wrote (a file
log's checkpoint, a Redis log's acknowledgements).

Exactly once: rows whose key (event id, order id) was stored within the dedupe window are dropped,
so a replay after a crash between writing Parquet and committing stores nothing twice. On a file
log, events claim their keys when they are accepted (see ``Ingest``), so their flusher only checks
keys when it replays what the log held before this process started; a Redis log's flusher checks
every row.
"""

from __future__ import annotations

import fcntl
import io
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from itertools import compress
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import redis
import structlog

from ingest.dedupe import KeyT, KeyWindow, RecentKeys
from ingest.log import Chunk
from warehouse.lake import Lake, LakeTable

log = structlog.get_logger("aisle.flusher")

# Event batches are logged as one line each: {"h": <columns every event shares>, "s": {<column>: value}
# for columns with one value in the batch, "c": {<column>: [values]} for the others} (older logs also
# hold lines with every column in "c", or "r": [<row objects>] instead, read the same way).
SHARED_EVENT_COLUMNS = ("site_id", "received_at", "channel", "client_platform", "client_version")
BATCH_LINE_START = b'{"h":'


def _read_lines(data: bytes, schema: pa.Schema) -> pa.Table:
    # One block on one thread: Arrow's threaded reader spends more CPU for the same read, and the
    # other core is the server's.
    return pajson.read_json(
        io.BytesIO(data),
        read_options=pajson.ReadOptions(
            use_threads=False, block_size=max(1 << 20, min(len(data) + 1, 1 << 28))
        ),
        parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def _spread(lists: pa.ListArray, single: pa.Array, parents: pa.Array) -> pa.Array:
    """One column's rows: a line's list where it has one, else its single value repeated (null for a
    line that has neither, as the values of a column the line left out)."""
    if not lists.null_count:
        return pc.list_flatten(lists)
    repeated = single.take(parents)
    if lists.null_count == len(lists):
        return repeated
    return pc.replace_with_mask(repeated, pc.is_valid(lists).take(parents), pc.list_flatten(lists))


def _keys(keys: KeyWindow[KeyT], wire: pa.Table, column: str) -> list[KeyT]:
    """The key of every row of ``wire`` as ``keys`` names them."""
    sites, values = wire["site_id"], wire[column].to_pylist()
    if pc.count_distinct(sites).as_py() == 1:
        return keys.keys_of(sites[0].as_py(), values)
    return [
        key
        for site, value in zip(sites.to_pylist(), values, strict=True)
        for key in keys.keys_of(site, [value])
    ]


class LogSource(Protocol):
    directory: Path

    def chunks(self) -> Iterator[Chunk]: ...


class SharedKeys(KeyWindow[KeyT], Protocol[KeyT]):
    """A window every process's flush checks and marks (``RedisRecentKeys``)."""

    def filter_not_in_lake(self, keys: list[KeyT]) -> list[bool]: ...


class FlushLock:
    """Held while a table's log is written to the lake (compaction swaps partitions under it too): a
    thread lock within the process, and an advisory lock on a file in the log's directory across
    processes (the events flusher process and the server's own flushes)."""

    def __init__(self, path: Path) -> None:
        self._threads = threading.Lock()
        self._handle = open(path, "a")  # noqa: SIM115 - held for the life of the lock

    def __enter__(self) -> FlushLock:
        self._threads.acquire()
        try:
            fcntl.flock(self._handle, fcntl.LOCK_EX)
        except BaseException:
            self._threads.release()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        try:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
        finally:
            self._threads.release()

    def close(self) -> None:
        self._handle.close()


class Flusher:
    def __init__(
        self,
        *,
        table: LakeTable,
        source: LogSource,
        lake: Lake,
        stored: RecentKeys,
        interval_seconds: float = 1.0,
        claimed_at_accept: bool = False,
        shared: SharedKeys[Any] | None = None,
        reload_on_replay: bool = False,
        may_write: Callable[[], bool] | None = None,
    ) -> None:
        """``stored``: the keys this flusher checks rows against (loaded from the lake before the
        first check); ``claimed_at_accept``: only replayed lines need a check, the others' keys were
        claimed in ``stored`` when they were accepted; ``shared``: a Redis log's window, which every
        process's flush checks and marks; ``reload_on_replay``: other processes flush too, so a
        replay checks against the lake as it is now; ``may_write``: asked before a flush and again
        before the log lets go of a chunk's entries; while it says no, flushes leave the log as it is
        (a Redis log's lake writer that lost its lease, or whose directory no server reads)."""
        self.table = table
        self.source = source
        self.lake = lake
        self.stored = stored
        self.shared = shared
        self.interval_seconds = interval_seconds
        self.claimed_at_accept = claimed_at_accept
        self.reload_on_replay = reload_on_replay
        self.may_write = may_write or (lambda: True)
        self._stored_loaded = False
        self._wire_schema = table.wire_schema()
        rows = [f for f in self._wire_schema if f.name not in SHARED_EVENT_COLUMNS]
        shared_columns = [
            self._wire_schema.field(name) for name in SHARED_EVENT_COLUMNS if name in self._wire_schema.names
        ]
        self._batch_schema = pa.schema(
            [
                ("h", pa.struct(shared_columns)),
                ("s", pa.struct(rows)),
                ("c", pa.struct([(f.name, pa.list_(f.type)) for f in rows])),
                ("r", pa.list_(pa.struct(rows))),
            ]
        )
        self.lock = FlushLock(source.directory / "flush.lock")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rows_written = 0

    def remember_stored(self) -> None:
        """Load the keys of rows written to the lake within the dedupe window (on start, or before
        the first check of keys)."""
        self._stored_loaded = True
        for site_id, keys, _ in self.lake.recent_keys(self.table, time.time() - self.stored.window_seconds):
            self.stored.add_all(self.stored.keys_of(site_id, keys))

    def flush(self) -> int:
        """Move everything durable in the log to the lake now; returns the rows written."""
        if not self.may_write():
            return 0
        written = 0
        with self.lock:
            reloaded = False
            for chunk in self.source.chunks():
                if chunk.replay and self.reload_on_replay and not reloaded:
                    # Other processes write the lake too: what this one loaded before is stale.
                    self.stored = RecentKeys(window_seconds=self.stored.window_seconds)
                    self._stored_loaded = False
                    reloaded = True
                if (rows := self._rows(chunk)) is not None:
                    written += self._store(rows, replay=chunk.replay)
                if not self.may_write():
                    # The entries stay in the log (read again, and checked against the lake, by
                    # the next flush allowed); what went to this lake is only extra.
                    break
                chunk.commit()
        return written

    def _rows(self, chunk: Chunk) -> pa.Table | None:
        """The chunk's rows to store (None when it has none: a stream's entries may be deleted ones)."""
        parts = [self.decode(chunk.data)] if chunk.data else []
        parts += [self.decode(line).filter(pa.array(mask)) for line, mask in chunk.masked]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def decode(self, data: bytes) -> pa.Table:
        """Log lines to wire-typed rows: batch lines (shared columns once) and single-row lines."""
        # An events log starts with a batch line, so the search stops at once; read as batch lines,
        # single-row lines are the ones without a header (counting lines instead scanned the whole
        # read twice, a twentieth of the events flusher's CPU).
        has_batches = data.startswith(BATCH_LINE_START) or b"\n" + BATCH_LINE_START in data
        parts = []
        singles = True
        if has_batches:
            lines = _read_lines(data, self._batch_schema)
            singles = lines["h"].null_count > 0
            parts.append(self._flatten_batches(lines))
        if singles:
            single = _read_lines(data, self._wire_schema)
            parts.append(single.filter(pc.is_valid(single[self.table.key])))
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def _flatten_batches(self, lines: pa.Table) -> pa.Table:
        # A filter copies every nested list, so lines are filtered only when they are mixed: in a
        # log written by one version every batch line has the same layout.
        if lines["h"].null_count:
            lines = lines.filter(pc.is_valid(lines["h"]))
        missing = lines["c"].null_count
        if not missing:
            return self._flatten(lines, "c")
        if missing == lines.num_rows:
            return self._flatten(lines, "r")
        columnar = pc.is_valid(lines["c"])
        return pa.concat_tables(
            [
                self._flatten(lines.filter(columnar), "c"),
                self._flatten(lines.filter(pc.invert(columnar)), "r"),
            ]
        )

    def _flatten(self, lines: pa.Table, layout: str) -> pa.Table:
        """Batch lines to rows: ``c`` lines hold a list per column (or one value in ``s``), older
        ``r`` lines a list of rows."""
        body = lines[layout].combine_chunks()
        shared = lines["h"].combine_chunks()
        if layout == "c":
            parents = pc.list_parent_indices(body.field("event_id"))
            single = lines["s"].combine_chunks()
            row_column = lambda name: _spread(body.field(name), single.field(name), parents)  # noqa: E731
        else:
            parents = pc.list_parent_indices(body)
            rows = pc.list_flatten(body)
            row_column = rows.field
        columns = {}
        for field in self._wire_schema:
            if field.name in SHARED_EVENT_COLUMNS:
                columns[field.name] = shared.field(field.name).take(parents)
            else:
                columns[field.name] = row_column(field.name)
        return pa.table(columns, schema=self._wire_schema)

    def _store(self, wire: pa.Table, *, replay: bool) -> int:
        """Write the rows whose key is not stored yet. Checked against ``stored`` (this process's
        window, loaded from the lake first) on replays and for rows not claimed at accept (unless
        ``shared`` checks them); against ``shared`` (what any process's flush wrote) when given."""
        column = self.table.key
        shared = self.shared
        fresh: list[bool] | None = None
        shared_keys: list[Any] | None = None
        local_keys: list[int] | None = None
        if shared is not None:
            shared_keys = _keys(shared, wire, column)
            fresh = shared.filter_not_in_lake(shared_keys)
        if replay or not (self.claimed_at_accept or shared is not None):
            if not self._stored_loaded:
                self.remember_stored()
            local_keys = _keys(self.stored, wire, column)
            local_fresh = self.stored.filter_new(local_keys)
            fresh = (
                local_fresh if fresh is None else [a and b for a, b in zip(fresh, local_fresh, strict=True)]
            )
        if fresh is not None and not all(fresh):
            wire = wire.filter(pa.array(fresh))
            shared_keys = shared_keys and list(compress(shared_keys, fresh))
            local_keys = local_keys and list(compress(local_keys, fresh))
        if not wire.num_rows:
            return 0
        self.lake.write_partitioned(self.table, wire, name=f"flush-{uuid.uuid4().hex}")
        self.rows_written += wire.num_rows
        if shared is not None and shared_keys is not None:
            shared.add_all(shared_keys)
        if local_keys:
            self.stored.add_all(local_keys)
        return wire.num_rows

    # --- background thread ------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"flusher-{self.table.name}", daemon=True)
        self._thread.start()

    def nudge(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval_seconds)
            self._wake.clear()
            try:
                self.flush()
            except (OSError, redis.RedisError) as exc:  # the disk or Redis is away: no traceback each second
                log.warning("flush_failed", table=self.table.name, error=repr(exc))
            except Exception:  # keep flushing later; the log still holds every row
                log.exception("flush_failed", table=self.table.name)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=60)
        self.flush()
