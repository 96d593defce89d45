"""Small helpers shared by the repositories: ids, row shaping, timestamps."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, select

from warehouse.catalog.store import as_utc


def new_id() -> str:
    return str(uuid.uuid4())


def to_dict(row: Any) -> dict[str, Any] | None:
    if row is None:
        return None
    out = dict(row._mapping)
    for key, value in out.items():
        if isinstance(value, datetime):
            out[key] = as_utc(value)
    return out


def get_by_id(conn: Connection, table: Table, row_id: str) -> dict[str, Any] | None:
    return to_dict(conn.execute(select(table).where(table.c.id == row_id)).first())
