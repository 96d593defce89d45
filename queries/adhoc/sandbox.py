"""The sealed DuckDB an ad-hoc query runs in, and what it may use.

Every run opens a fresh in-memory DuckDB. Before anything of the caller's runs, it is allowed to read
exactly the site's current Parquet files (``allowed_paths``), external access is switched off, the site
views are defined over those files, and the configuration is locked (memory limit, threads, no
extensions, no spilling to disk). A watchdog interrupts the query at its time limit.
"""

from __future__ import annotations

import re
import threading
import uuid
from dataclasses import dataclass
from functools import cache

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from queries.adhoc.policy import VIEWS
from queries.library import SQL_DIR
from warehouse.lake import CONSENTS, EVENTS, ORDERS, Lake, LakeTable

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def size_bytes(size: str) -> int:
    """A DuckDB size string (``1GB``, ``512 MiB``) in bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", size)
    if not match or match[2].lower() not in _SIZE_UNITS:
        raise ValueError(f"not a size such as 1GB or 512MiB: {size!r}")
    return int(float(match[1]) * _SIZE_UNITS[match[2].lower()])


@dataclass(frozen=True)
class Limits:
    """What one query may use: DuckDB's memory limit (a DuckDB size string) and threads, the largest
    answer, and the worker's whole resident memory."""

    memory_limit: str
    threads: int
    max_result_bytes: int
    max_process_bytes: int


class Sandbox:
    """How much one query may use (memory as a DuckDB size string, threads) and how many run at once in
    this process. One per process: the limit on concurrent queries lives here."""

    def __init__(
        self,
        *,
        memory_limit: str = "1GB",
        threads: int = 2,
        max_concurrent: int = 4,
        max_result_bytes: int = 512 * 1024 * 1024,
        max_process_bytes: int | None = None,
    ) -> None:
        self.memory_limit = memory_limit
        self.threads = threads
        # DuckDB's memory limit covers what it manages (joins, aggregates, sorts), not every string a
        # scalar function builds; the answer itself is capped here, and the worker process as a whole
        # by its resident memory: DuckDB's share, the answer twice (the table and its IPC copy) and
        # the interpreter with its libraries.
        self.max_result_bytes = max_result_bytes
        self.max_process_bytes = max_process_bytes or size_bytes(memory_limit) + 2 * max_result_bytes + 2**29
        self._slots = threading.BoundedSemaphore(max_concurrent)

    @property
    def limits(self) -> Limits:
        return Limits(self.memory_limit, self.threads, self.max_result_bytes, self.max_process_bytes)

    def slot(self, timeout_seconds: float) -> bool:
        return self._slots.acquire(timeout=timeout_seconds)

    def release(self) -> None:
        self._slots.release()


DEFAULT_SANDBOX = Sandbox()

VIEWS_SQL = (SQL_DIR / "adhoc_views.sql").read_text()
# The lake tables the views read (as `_lake_<table>`, one site's files only).
SITE_TABLES = (EVENTS, ORDERS, CONSENTS)


def _literal(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="duckdb")


def _site_files(lake: Lake, table: LakeTable, site_id: str) -> list[str]:
    # Real paths, as the engine's views use: compaction may swap the partition symlink meanwhile.
    return [str(p) for p in lake.live_files(table, site_id=site_id)]


def _define_source(conn: duckdb.DuckDBPyConnection, table: LakeTable, files: list[str], site_id: str) -> None:
    """``_lake_<table>``: the site's rows of one lake table with the typed columns of the lake schema
    (a column missing from older files reads as NULL), plus the UTC ``date`` of its partition."""
    empty = pa.schema([*table.schema, pa.field("date", pa.date32())]).empty_table()
    conn.register("_arrow_empty", empty)
    conn.execute(f"CREATE TEMP TABLE _lake_{table.name}_empty AS SELECT * FROM _arrow_empty")
    conn.unregister("_arrow_empty")
    source = f"SELECT * FROM _lake_{table.name}_empty"
    if files:
        listing = ", ".join(_literal(f) for f in files)
        source += (
            f" UNION ALL BY NAME SELECT * EXCLUDE (site_id) FROM read_parquet([{listing}], "
            "hive_partitioning = true, union_by_name = true, hive_types = {'site_id': VARCHAR, 'date': DATE}) "
            f"WHERE site_id = {_literal(site_id)}"
        )
    conn.execute(f"CREATE TEMP VIEW _lake_{table.name} AS {source}")


@cache
def _view_statements() -> dict[str, tuple[str, frozenset[str]]]:
    """Each view of adhoc_views.sql in file order (which is dependency order): its CREATE statement
    and the views and lake sources it reads."""
    sources = {f"_lake_{t.name}" for t in SITE_TABLES}
    statements: dict[str, tuple[str, frozenset[str]]] = {}
    for text in re.split(r";\s*\n", VIEWS_SQL):
        create = sqlglot.parse_one(text, read="duckdb") if text.strip() else None
        if not isinstance(create, exp.Create):
            continue
        known = sources | set(statements)
        reads = frozenset(t.name for t in create.expression.find_all(exp.Table) if t.name in known)
        statements[create.this.name] = (text, reads)
    return statements


def _needed(views: frozenset[str]) -> list[str]:
    """The views to create for a query reading ``views``, with what they read, in dependency order."""
    statements = _view_statements()
    needed = set(views)
    for name in reversed(statements):
        if name in needed:
            needed |= statements[name][1]
    return [
        name for name in [*sorted(n for n in needed if n.startswith("_lake_")), *statements] if name in needed
    ]


def open_sandbox(
    lake: Lake, *, site_id: str, sandbox: Sandbox | Limits, views: frozenset[str] = frozenset(VIEWS)
) -> duckdb.DuckDBPyConnection:
    """A fresh DuckDB that can read only ``site_id``'s lake files, through the site views (those in
    ``views`` and what they read), with external access off and its configuration locked."""
    site = str(uuid.UUID(site_id))  # canonical: the partition directories are named with it
    conn = duckdb.connect(
        ":memory:",
        config={
            "threads": sandbox.threads,
            "memory_limit": sandbox.memory_limit,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "temp_directory": "",  # nothing spills to disk: a query over the limit fails instead
        },
    )
    try:
        conn.execute("SET TimeZone = 'UTC'")
        needed = _needed(views)
        tables = [t for t in SITE_TABLES if f"_lake_{t.name}" in needed]
        files = {table: _site_files(lake, table, site) for table in tables}
        conn.execute("SET allowed_paths = $paths", {"paths": [f for fs in files.values() for f in fs]})
        conn.execute("SET enable_external_access = false")
        for table, table_files in files.items():
            _define_source(conn, table, table_files, site)
        statements = _view_statements()
        for name in needed:
            if name in statements:
                conn.execute(statements[name][0])
        conn.execute("SET lock_configuration = true")
    except BaseException:
        conn.close()
        raise
    return conn


_INTERRUPT_EVERY_SECONDS = 0.05


class Watchdog:
    """Interrupts the connection's query once the deadline passes, again every 50 ms until it stops
    (an interrupt that lands between two statements would otherwise be lost)."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, timeout_ms: int) -> None:
        self.conn = conn
        self.timeout_seconds = timeout_ms / 1000
        self.fired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="aisle-sql-watchdog", daemon=True)

    def _watch(self) -> None:
        if self._done.wait(self.timeout_seconds):
            return
        self.fired = True
        while not self._done.is_set():
            self.conn.interrupt()
            self._done.wait(_INTERRUPT_EVERY_SECONDS)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self._thread.join()
