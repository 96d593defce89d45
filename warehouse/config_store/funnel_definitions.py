"""Funnel definitions: a site's saved funnels (steps, conversion window, step order)."""

from __future__ import annotations

import builtins
from typing import Any

from sqlalchemy import Connection
from sqlalchemy import delete as sql_delete

from warehouse.config_store.rows import get_by_id, list_for_site, new_id, update_editable
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import funnel_definitions

EDITABLE = frozenset({"name", "description", "steps", "window_seconds", "order"})


def create(
    conn: Connection,
    *,
    site_id: str,
    name: str,
    steps: builtins.list[str],
    window_seconds: int,
    order: str,
    description: str | None = None,
    created_by: str | None = None,
) -> dict[str, Any]:
    now = utcnow()
    row = {
        "id": new_id(),
        "site_id": site_id,
        "name": name,
        "description": description,
        "steps": [*steps],  # not list(): `list` below is this module's verb
        "window_seconds": window_seconds,
        "order": order,
        "created_by": created_by,
        "created_at": now,
        "updated_at": now,
    }
    conn.execute(funnel_definitions.insert().values(**row))
    return row


def get(conn: Connection, *, definition_id: str) -> dict[str, Any] | None:
    return get_by_id(conn, funnel_definitions, definition_id)


def list(conn: Connection, *, site_id: str) -> builtins.list[dict[str, Any]]:
    """A site's definitions, oldest first."""
    order_by = [funnel_definitions.c.created_at, funnel_definitions.c.id]
    return list_for_site(conn, funnel_definitions, site_id, order_by=order_by)


def update(conn: Connection, *, definition_id: str, **values: Any) -> dict[str, Any] | None:
    """Change the given editable fields; answers the stored row (None when it does not exist)."""
    return update_editable(conn, funnel_definitions, definition_id, editable=EDITABLE, values=values)


def delete(conn: Connection, *, definition_id: str) -> bool:
    """True when a definition was removed."""
    result = conn.execute(sql_delete(funnel_definitions).where(funnel_definitions.c.id == definition_id))
    return result.rowcount > 0
