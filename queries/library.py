"""The SQL library: named queries in ``queries/sql/*.sql`` with DuckDB ``$named`` parameters."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from warehouse.engine import Engine

SQL_DIR = Path(__file__).parent / "sql"


@cache
def sql(name: str) -> str:
    return (SQL_DIR / f"{name}.sql").read_text()


def run(engine: Engine, name: str, params: dict[str, Any]) -> pa.Table:
    """Run one named query with bound parameters (never formatted into the text) on a fresh cursor."""
    cursor = engine.cursor()
    try:
        return cursor.sql(sql(name), params=params).to_arrow_table()
    finally:
        cursor.close()


def rows_on(cursor: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """One named query on a cursor the caller holds (so its temporary tables are in sight), as rows."""
    return cursor.sql(sql(name), params=params).to_arrow_table().to_pylist()


def stream(
    engine: Engine, name: str, params: dict[str, Any], *, batch_rows: int = 65_536
) -> Iterator[pa.RecordBatch]:
    """Run one named query and hand its answer back in record batches, so a large answer never sits
    whole in memory. The cursor closes when the iteration ends or is abandoned."""
    cursor = engine.cursor()
    try:
        yield from cursor.sql(sql(name), params=params).to_arrow_reader(batch_rows)
    finally:
        cursor.close()
