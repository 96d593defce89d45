"""The query engine: one in-process DuckDB database per process with views over the lake.

Views ``events`` and ``orders`` read the Hive-partitioned Parquet files, so a filter on ``site_id``
and ``date`` prunes whole directories. A cursor per request; queries run off the event loop.
"""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pyarrow as pa

from warehouse.lake import TABLES, Lake, LakeTable

PEOPLE_VIEWS_SQL = (Path(__file__).parent / "sql" / "people_views.sql").read_text()


def _empty_relation_sql(table: LakeTable) -> str:
    # An empty typed stand-in until the first file of a table exists (read_parquet needs files).
    return f"SELECT *, NULL::VARCHAR AS site_id, NULL::DATE AS date FROM _empty_{table.name} WHERE false"


class Engine:
    def __init__(self, lake: Lake, *, threads: int = 2, memory_limit: str = "4GB") -> None:
        self.lake = lake
        self._db = duckdb.connect(config={"threads": threads, "memory_limit": memory_limit})
        self._lock = threading.Lock()
        self._generation: tuple[int, str] | None = None
        for table in TABLES.values():
            empty = pa.table({f.name: pa.array([], f.type) for f in table.schema})
            self._db.register("_arrow_empty", empty)
            self._db.execute(f"CREATE TABLE _empty_{table.name} AS SELECT * FROM _arrow_empty")
            self._db.unregister("_arrow_empty")
            self._define_view(table)
        # Views over the views above; they bind at query time, so re-listing files never touches them.
        self._db.execute(PEOPLE_VIEWS_SQL)

    def _define_view(self, table: LakeTable) -> None:
        files = self.lake.live_files(table)
        if files:
            listing = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
            source = (
                f"SELECT * FROM read_parquet([{listing}], hive_partitioning = true, "
                "union_by_name = true, hive_types = {'site_id': VARCHAR, 'date': DATE})"
            )
        else:
            source = _empty_relation_sql(table)
        self._db.execute(f"CREATE OR REPLACE VIEW {table.name} AS {source}")

    def refresh(self) -> None:
        """Re-list the lake's files when they changed (after a flush or a compaction)."""
        with self._lock:
            if self._generation == self.lake.generation:
                return
            self._generation = self.lake.generation
            for table in TABLES.values():
                self._define_view(table)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        self.refresh()
        return self._db.cursor()

    def close(self) -> None:
        self._db.close()
