"""The SQL library: named queries in ``queries/sql/*.sql`` with DuckDB ``$named`` parameters."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

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
