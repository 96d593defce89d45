"""Small helpers shared by the repositories: ids, row shaping, timestamps."""

from __future__ import annotations

import uuid
from collections.abc import Sequence, Set
from datetime import datetime
from typing import Any, overload

from sqlalchemy import Connection, Row, Table, select
from sqlalchemy import update as sql_update
from sqlalchemy.sql.elements import ColumnElement

from warehouse.config_store.store import as_utc, utcnow


def new_id() -> str:
    return str(uuid.uuid4())


@overload
def to_dict(row: Row[Any]) -> dict[str, Any]: ...
@overload
def to_dict(row: Row[Any] | None) -> dict[str, Any] | None: ...
def to_dict(row: Row[Any] | None) -> dict[str, Any] | None:
    """A row as a dict with its datetimes in UTC; None stays None (a `.first()` that found nothing)."""
    if row is None:
        return None
    out = dict(row._mapping)
    for key, value in out.items():
        if isinstance(value, datetime):
            out[key] = as_utc(value)
    return out


def get_by_id(conn: Connection, table: Table, row_id: str) -> dict[str, Any] | None:
    return to_dict(conn.execute(select(table).where(table.c.id == row_id)).first())


def list_for_site(
    conn: Connection, table: Table, site_id: str, *, order_by: Sequence[ColumnElement[Any]]
) -> list[dict[str, Any]]:
    """A site's rows in the given order."""
    rows = conn.execute(select(table).where(table.c.site_id == site_id).order_by(*order_by))
    return [to_dict(r) for r in rows]


def update_editable(
    conn: Connection,
    table: Table,
    row_id: str,
    *,
    editable: Set[str],
    values: dict[str, Any],
    savepoint: bool = False,
) -> dict[str, Any] | None:
    """Change the given editable fields and the update time; answers the stored row (None when it does not
    exist). A field that is not editable is a ValueError before anything runs. With `savepoint`, an UPDATE
    the database refuses (IntegrityError, raised to the caller) leaves the transaction usable."""
    unknown = set(values) - editable
    if unknown:
        raise ValueError(f"Not editable: {', '.join(sorted(unknown))}")
    if values:
        statement = sql_update(table).where(table.c.id == row_id).values(updated_at=utcnow(), **values)
        if savepoint:
            with conn.begin_nested():
                conn.execute(statement)
        else:
            conn.execute(statement)
    return get_by_id(conn, table, row_id)
