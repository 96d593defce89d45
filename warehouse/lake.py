"""The lake: typed Arrow schemas and Hive-partitioned Parquet files written atomically.

Layout: ``<data>/lake/<table>/site_id=<uuid>/date=YYYY-MM-DD/<name>.parquet``. A file appears under
its final name only once complete (written under a dot-name, fsync'ed, renamed), so readers never
see half a file.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

UTC_MICROS = pa.timestamp("us", tz="UTC")
MONEY = pa.decimal128(24, 6)
PARTITION_COLUMNS = ("site_id", "date")

_CONSENT = [(f"consent_{c}", pa.bool_()) for c in ("necessary", "analytics", "marketing", "preferences")]
# When it happened and whose it was: the same columns, in the same order, on events and orders.
_WHEN_AND_WHO = [
    ("ts", UTC_MICROS),
    ("received_at", UTC_MICROS),
    ("visitor_id", pa.string()),
    ("session_id", pa.string()),
    ("journey_id", pa.string()),
    ("user_id", pa.string()),
]
_CLIENT = [("channel", pa.string()), ("client_platform", pa.string()), ("client_version", pa.string())]

EVENTS_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("name", pa.string()),
        *_WHEN_AND_WHO,
        ("entity_type", pa.string()),
        ("entity_id", pa.string()),
        ("url", pa.string()),
        ("referrer", pa.string()),
        ("metadata", pa.string()),  # JSON text
        ("product_item_code", pa.string()),
        ("category_path", pa.string()),
        ("currency", pa.string()),
        ("value", MONEY),
        *_CONSENT,
        *_CLIENT,
    ]
)

ORDER_ITEM = pa.struct(
    [
        ("product_item_code", pa.string()),
        ("product_id", pa.string()),
        ("quantity", pa.int64()),
        ("price", MONEY),
        ("name", pa.string()),
        ("category_path", pa.string()),
    ]
)

ORDERS_SCHEMA = pa.schema(
    [
        ("order_id", pa.string()),
        *_WHEN_AND_WHO,
        ("currency", pa.string()),
        ("total", MONEY),
        ("subtotal", MONEY),
        ("tax", MONEY),
        ("shipping", MONEY),
        ("discount", MONEY),
        ("is_refund", pa.bool_()),
        ("refund_of", pa.string()),
        ("items", pa.list_(ORDER_ITEM)),
        ("item_count", pa.int64()),
        *_CONSENT,
        *_CLIENT,
    ]
)

METRICS_SCHEMA = pa.schema(
    [
        ("metric_id", pa.string()),
        ("name", pa.string()),
        ("value", pa.float64()),
        ("unit", pa.string()),
        ("ts", UTC_MICROS),
        ("received_at", UTC_MICROS),
        ("visitor_id", pa.string()),
        ("session_id", pa.string()),
        ("url", pa.string()),
        ("tags", pa.string()),  # JSON text
        *_CLIENT,
    ]
)

# A visitor's consent decision as sent to the public consent route; a category it does not state is null.
CONSENTS_SCHEMA = pa.schema(
    [
        ("consent_id", pa.string()),
        ("ts", UTC_MICROS),
        ("received_at", UTC_MICROS),
        ("visitor_id", pa.string()),
        ("session_id", pa.string()),
        ("user_id", pa.string()),
        ("source", pa.string()),
        *_CONSENT,
        *_CLIENT,
    ]
)


@dataclass(frozen=True)
class LakeTable:
    name: str
    schema: pa.Schema
    key: str  # the column that identifies a row for exactly-once storage
    # Compaction orders merged rows by the first of these columns, so row groups hold few of its
    # values and filters on it skip groups, and within each value groups the rows of each value of
    # the second together (for joins and per-visitor walks).
    sort_by: tuple[str, ...] = ()

    def parquet_options(self) -> dict:
        """How this table's files are written, flushed or compacted: zstd, dictionaries for every
        column but the row key, whose values are all distinct, and the event time, nearly so in real
        traffic: it is stored as deltas, small within a visitor's rows once compaction puts them
        together (on demo traffic a quarter smaller than a dictionary, read twice as fast by DuckDB)."""
        return {
            "compression": "zstd",
            "use_dictionary": [n for n in self.schema.names if n not in (self.key, "ts")],
            "column_encoding": {"ts": "DELTA_BINARY_PACKED"},
            # A compacted day holds ~10^5 visitors: their dictionary outgrows the default 1 MiB,
            # and past it pyarrow falls back to plain strings (2.5x the decoded bytes).
            "dictionary_pagesize_limit": 8 << 20,
        }

    def wire_schema(self) -> pa.Schema:
        """The schema of the durable log's JSON lines: times as epoch micros, money as strings,
        plus the partition columns."""

        def wire(t: pa.DataType) -> pa.DataType:
            if t == UTC_MICROS:
                return pa.int64()
            if pa.types.is_decimal(t):
                return pa.string()
            if pa.types.is_list(t):
                return pa.list_(wire(t.value_type))
            if pa.types.is_struct(t):
                return pa.struct([(f.name, wire(f.type)) for f in t])
            return t

        fields = [(f.name, wire(f.type)) for f in self.schema]
        return pa.schema(fields + [(c, pa.string()) for c in PARTITION_COLUMNS])

    def conform(self, data: pa.Table, *, keep_string_views: bool = False) -> pa.Table:
        """``data`` in this table's schema: its columns cast to their types (wire rows from the log,
        a merged run from polars), typed nulls for the columns it lacks; other columns left out.

        ``keep_string_views`` leaves a flat string-view column as it is (polars hands its strings over
        as views; a copy to Arrow's strings takes ~20 % of a merge of demo traffic): Parquet stores
        every string type alike, so such a table is written without its Arrow schema and reads back
        in this one. Parquet's writer takes views only outside lists and structs."""

        def column(field: pa.Field) -> pa.ChunkedArray | pa.Array:
            if field.name not in data.column_names:
                return pa.nulls(len(data), field.type)
            values = data[field.name]
            if keep_string_views and pa.types.is_string_view(values.type):
                return values
            return values.cast(field.type)

        columns = [column(f) for f in self.schema]
        if keep_string_views:
            return pa.Table.from_arrays(columns, names=self.schema.names)
        return pa.Table.from_arrays(columns, schema=self.schema)


EVENTS = LakeTable("events", EVENTS_SCHEMA, key="event_id", sort_by=("name", "visitor_id"))
ORDERS = LakeTable("orders", ORDERS_SCHEMA, key="order_id")
METRICS = LakeTable("client_metrics", METRICS_SCHEMA, key="metric_id")
CONSENTS = LakeTable("consents", CONSENTS_SCHEMA, key="consent_id")
TABLES = {t.name: t for t in (EVENTS, ORDERS, METRICS, CONSENTS)}


GENERATION_MARK = "_generation"


class Lake:
    """Partitions are symlinks (``date=D`` -> ``_versions/<table>/<uuid>``) so that compaction can
    swap a partition's whole file set in one atomic rename; readers see the old set or the new one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._changes = 0

    @property
    def generation(self) -> tuple[int, str]:
        """Changes when the visible file set changes, in this process or another (the events flusher
        process), so the engine knows when to re-list: this process's count of changes, and the mark
        that every process writing to the lake replaces after each change."""
        try:
            mark = (self.root / GENERATION_MARK).read_text()
        except FileNotFoundError:
            mark = ""
        return self._changes, mark

    def announce_change(self) -> None:
        """Tell every process's readers that the visible file set changed."""
        self._changes += 1
        self.root.mkdir(parents=True, exist_ok=True)
        temp = self.root / f".{GENERATION_MARK}-{uuid.uuid4().hex}"
        temp.write_text(uuid.uuid4().hex)
        os.replace(temp, self.root / GENERATION_MARK)

    def table_dir(self, table: LakeTable) -> Path:
        return self.root / table.name

    def versions_dir(self, table: LakeTable) -> Path:
        return self.root / "_versions" / table.name

    def partition_dir(self, table: LakeTable, *, site_id: str, date: str) -> Path:
        return self.table_dir(table) / f"site_id={site_id}" / f"date={date}"

    def glob(self, table: LakeTable) -> str:
        return str(self.table_dir(table) / "*" / "*" / "*.parquet")

    def files(self, table: LakeTable, *, site_id: str | None = None) -> list[Path]:
        base = self.table_dir(table)
        pattern = f"site_id={site_id}/*/*.parquet" if site_id else "*/*/*.parquet"
        return sorted(base.glob(pattern))

    @staticmethod
    def site_of(path: Path) -> str:
        """The site id of one of the lake's files (``<table>/site_id=<uuid>/date=…/<file>``)."""
        return path.parent.parent.name.removeprefix("site_id=")

    def files_written_since(self, table: LakeTable, since: float) -> list[Path]:
        """The table's files written at or after ``since`` (epoch seconds): only these can hold rows
        received since then."""
        return [path for path in self.files(table) if path.stat().st_mtime >= since]

    def recent_keys(self, table: LakeTable, since: float) -> Iterator[tuple[str, list[str], float]]:
        """(site id, row keys, when written) of each of the table's files written since ``since``."""
        for path in self.files_written_since(table, since):
            keys = pq.read_table(path, columns=[table.key])[table.key].to_pylist()
            yield self.site_of(path), keys, path.stat().st_mtime

    def partitions(self, table: LakeTable, *, site_id: str | None = None) -> list[Path]:
        pattern = f"site_id={site_id}/date=*" if site_id else "*/date=*"
        return sorted(p for p in self.table_dir(table).glob(pattern) if p.is_dir())

    def new_version(self, table: LakeTable, partition: Path) -> Path:
        # The version keeps the partition's key=value names, so its files still carry the Hive keys.
        version = self.versions_dir(table) / partition.parent.name / partition.name / uuid.uuid4().hex
        version.mkdir(parents=True)
        return version

    def live_files(self, table: LakeTable, *, site_id: str | None = None) -> list[Path]:
        """The current files with their real paths (inside version directories). Queries bound to
        this list keep reading the same files even if compaction swaps a partition meanwhile.

        Each partition is resolved to its version before that version's files are listed: listing
        through the link and resolving afterwards could pair a swapped-in version with the names of
        the files it replaced."""
        return sorted(
            file
            for partition in self.partitions(table, site_id=site_id)
            for file in partition.resolve().glob("*.parquet")
        )

    def point(self, partition: Path, version: Path, *, announce: bool = True, sync: bool = True) -> None:
        """Make ``partition`` show ``version``'s files, atomically (rename of a symlink);
        ``sync=False`` leaves syncing the link's directory to the caller."""
        partition.parent.mkdir(parents=True, exist_ok=True)
        # Made outside the table tree, so no glob ever sees the partition twice.
        staging = self.root / "_tmp"
        staging.mkdir(parents=True, exist_ok=True)
        temp = staging / uuid.uuid4().hex
        temp.symlink_to(os.path.relpath(version, partition.parent))
        os.replace(temp, partition)
        if sync:
            fsync_path(partition.parent)
        if announce:
            self.announce_change()

    def ensure_partition(self, table: LakeTable, *, site_id: str, date: str, sync: bool = True) -> Path:
        """The partition's link, made (to a new empty version) when missing; ``sync=False`` leaves
        syncing the site's directory, which holds the links, to the caller."""
        partition = self.partition_dir(table, site_id=site_id, date=date)
        if not partition.exists():
            # Empty, it changes nothing readers see: its first file is announced.
            self.point(partition, self.new_version(table, partition), announce=False, sync=sync)
        return partition

    def drop_site(self, site_id: str) -> int:
        """Take every partition of ``site_id`` out of every table (their versions are retired and
        purged after the grace period, as compaction's are); the number of partitions taken out."""
        dropped = 0
        for table in TABLES.values():
            site_dir = self.table_dir(table) / f"site_id={site_id}"
            if not site_dir.is_dir():
                continue
            for partition in self.partitions(table, site_id=site_id):
                version = partition.resolve()
                partition.unlink()
                retire(version)
                dropped += 1
            site_dir.rmdir()
            fsync_path(site_dir.parent)
        if dropped:
            self.announce_change()
        return dropped

    def live_versions(self, table: LakeTable) -> set[Path]:
        return {p.resolve() for p in self.partitions(table)}

    def write_file(
        self,
        table: LakeTable,
        data: pa.Table,
        *,
        site_id: str,
        date: str,
        name: str | None = None,
        announce: bool = True,
        sync_site: bool = True,
    ) -> Path:
        """Write one complete Parquet file into a partition, atomically; ``announce=False`` leaves
        telling readers (``announce_change``) to the caller, once for many files; ``sync_site=False``
        leaves syncing a new partition's link (in the site's directory) to the caller, once for many
        partitions."""
        directory = self.ensure_partition(table, site_id=site_id, date=date, sync=sync_site)
        final = directory / f"{name or uuid.uuid4().hex}.parquet"
        temp = directory / f".{final.name}.tmp"
        pq.write_table(data, temp, row_group_size=1_000_000, **table.parquet_options())
        fsync_path(temp)
        os.replace(temp, final)
        fsync_path(directory.resolve())
        if announce:
            self.announce_change()
        return final

    def write_partitioned(self, table: LakeTable, wire: pa.Table, *, name: str) -> list[Path]:
        """Split rows read from the durable log by (site, date) and write one file per partition,
        the newest dates first: a backfill over hundreds of dates (a few ms each) does not hold back
        the live events flushed with it, which readers see as soon as their partition is written."""
        sites, dates = pc.unique(wire["site_id"]), pc.unique(wire["date"])
        if len(sites) == 1 and len(dates) == 1:
            # The usual flush: one site's events of today, written without a sorted copy.
            return [
                self.write_file(
                    table, table.conform(wire), site_id=sites[0].as_py(), date=dates[0].as_py(), name=name
                )
            ]
        ordered = wire.sort_by([("date", "descending"), ("site_id", "ascending")])
        keys = pc.binary_join_element_wise(ordered["site_id"], ordered["date"], "/")
        runs = pc.run_end_encode(keys.combine_chunks())
        typed = table.conform(ordered)  # once: per partition, the casts cost a backfill ~0.5 ms a date
        written, start = [], 0
        for end, key in zip(runs.run_ends.to_pylist(), runs.values.to_pylist(), strict=True):
            site_id, date = key.split("/")
            rows = typed.slice(start, end - start)
            written.append(
                self.write_file(
                    table, rows, site_id=site_id, date=date, name=name, announce=False, sync_site=False
                )
            )
            if start == 0:
                self.announce_change()
            start = end
        # The new partitions' links, once per site: durable before the caller moves the log's
        # checkpoint past these rows (a crash before leaves the rows to a replay, checked by key).
        for site_dir in {path.parent.parent for path in written}:
            fsync_path(site_dir)
        self.announce_change()
        return written


def retire(version: Path) -> None:
    """Mark a version no partition shows any more; ``purge_retired`` deletes it after its grace period
    (queries that listed its files before may still be reading them)."""
    (version / ".retired").write_text(str(time.time()))


def fsync_path(path: Path) -> None:
    """fsync a file, or a directory so that a rename inside it is durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
