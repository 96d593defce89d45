"""The flusher: turns the durable log into Parquet partitions and advances the checkpoint.

Exactly once: rows whose key (event id, order id) was stored within the dedupe window are dropped,
so a replay after a crash between writing Parquet and saving the checkpoint stores nothing twice.
"""

from __future__ import annotations

import io
import threading
import time
import uuid

import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq
import structlog

from ingest.dedupe import RecentKeys, key_hash
from ingest.log import DurableLog
from warehouse.lake import Lake, LakeTable

log = structlog.get_logger("aisle.flusher")


class Flusher:
    def __init__(
        self,
        *,
        table: LakeTable,
        durable_log: DurableLog,
        lake: Lake,
        stored: RecentKeys,
        interval_seconds: float = 1.0,
        max_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.table = table
        self.log = durable_log
        self.lake = lake
        self.stored = stored
        self.interval_seconds = interval_seconds
        self.max_bytes = max_bytes
        self._wire_schema = table.wire_schema()
        self.lock = threading.Lock()  # held while writing to the lake; compaction swaps under it too
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.rows_written = 0

    def remember_stored(self) -> None:
        """Load the keys of rows written to the lake within the dedupe window (on start)."""
        horizon = time.time() - self.stored.window_seconds
        for path in self.lake.files(self.table):
            if path.stat().st_mtime < horizon:
                continue
            site_id = path.parent.parent.name.removeprefix("site_id=")
            keys = pq.read_table(path, columns=[self.table.key])[self.table.key].to_pylist()
            self.stored.add_all(key_hash(site_id, k) for k in keys)

    def flush(self) -> int:
        """Move everything durable in the log to the lake now; returns the rows written."""
        written = 0
        with self.lock:
            while True:
                start = self.log.checkpoint()
                data, end = self.log.read(start, max_bytes=self.max_bytes)
                if not data:
                    if end != start:
                        self.log.save_checkpoint(end)
                    return written
                written += self._write(data)
                self.log.save_checkpoint(end)

    def _write(self, data: bytes) -> int:
        wire = pajson.read_json(
            io.BytesIO(data),
            read_options=pajson.ReadOptions(block_size=max(1 << 20, min(len(data) + 1, 1 << 28))),
            parse_options=pajson.ParseOptions(
                explicit_schema=self._wire_schema, unexpected_field_behavior="ignore"
            ),
        )
        hashes = [
            key_hash(s, k)
            for s, k in zip(wire["site_id"].to_pylist(), wire[self.table.key].to_pylist(), strict=True)
        ]
        fresh = self.stored.filter_new(hashes)
        if not all(fresh):
            wire = wire.filter(pa.array(fresh))
            hashes = [h for h, keep in zip(hashes, fresh, strict=True) if keep]
        if wire.num_rows:
            self.lake.write_partitioned(self.table, wire, name=f"flush-{uuid.uuid4().hex}")
            self.stored.add_all(hashes)
            self.rows_written += wire.num_rows
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
            except Exception:  # keep flushing later; the log still holds every row
                log.exception("flush_failed", table=self.table.name)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=60)
        self.flush()
