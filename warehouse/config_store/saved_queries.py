"""Saved queries: a site's named ad-hoc SQL (text, input dialect, declared parameters)."""

from __future__ import annotations

import builtins
from typing import Any

from sqlalchemy import Connection
from sqlalchemy import delete as sql_delete
from sqlalchemy.exc import IntegrityError

from warehouse.config_store.rows import get_by_id, list_for_site, new_id, update_editable
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import saved_queries

EDITABLE = frozenset({"name", "description", "query", "dialect", "parameters"})


class NameTaken(Exception):
    """Another saved query of the site already has this name."""


def create(
    conn: Connection,
    *,
    site_id: str,
    name: str,
    query: str,
    dialect: str,
    parameters: builtins.list[dict[str, Any]],
    description: str | None = None,
    created_by: str | None = None,
) -> dict[str, Any]:
    now = utcnow()
    row = {
        "id": new_id(),
        "site_id": site_id,
        "name": name,
        "description": description,
        "query": query,
        "dialect": dialect,
        "parameters": [*parameters],  # not list(): `list` below is this module's verb
        "created_by": created_by,
        "created_at": now,
        "updated_at": now,
    }
    try:
        with conn.begin_nested():
            conn.execute(saved_queries.insert().values(**row))
    except IntegrityError:
        raise NameTaken(name) from None
    return row


def get(conn: Connection, *, query_id: str) -> dict[str, Any] | None:
    return get_by_id(conn, saved_queries, query_id)


def list(conn: Connection, *, site_id: str) -> builtins.list[dict[str, Any]]:
    """A site's saved queries by name."""
    return list_for_site(conn, saved_queries, site_id, order_by=[saved_queries.c.name, saved_queries.c.id])


def update(conn: Connection, *, query_id: str, **values: Any) -> dict[str, Any] | None:
    """Change the given editable fields; answers the stored row (None when it does not exist)."""
    try:
        return update_editable(
            conn, saved_queries, query_id, editable=EDITABLE, values=values, savepoint=True
        )
    except IntegrityError:
        raise NameTaken(values.get("name", "")) from None


def delete(conn: Connection, *, query_id: str) -> bool:
    """True when a saved query was removed."""
    result = conn.execute(sql_delete(saved_queries).where(saved_queries.c.id == query_id))
    return result.rowcount > 0
