"""Site public API keys (mobile runtime keys): shown once, stored as a hash, revocable for good."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, update

from warehouse.config_store.rows import get_by_id, new_id, to_dict
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import site_api_keys


def create(
    conn: Connection, *, site_id: str, name: str, scopes: list[str], prefix: str, key_hash: str
) -> dict[str, Any]:
    row = {
        "id": new_id(),
        "site_id": site_id,
        "name": name,
        "scopes": scopes,
        "prefix": prefix,
        "key_hash": key_hash,
        "last_used_at": None,
        "revoked_at": None,
        "created_at": utcnow(),
    }
    conn.execute(site_api_keys.insert().values(**row))
    return row


def get(conn: Connection, *, key_id: str) -> dict[str, Any] | None:
    return get_by_id(conn, site_api_keys, key_id)


def get_by_prefix(conn: Connection, *, prefix: str) -> dict[str, Any] | None:
    return to_dict(conn.execute(select(site_api_keys).where(site_api_keys.c.prefix == prefix)).first())


def list_for_site(conn: Connection, *, site_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(site_api_keys).where(site_api_keys.c.site_id == site_id).order_by(site_api_keys.c.created_at)
    )
    return [to_dict(r) for r in rows]


def update_fields(conn: Connection, *, key_id: str, **values: Any) -> None:
    conn.execute(update(site_api_keys).where(site_api_keys.c.id == key_id).values(**values))


def revoke(conn: Connection, *, key_id: str) -> None:
    conn.execute(
        update(site_api_keys)
        .where(site_api_keys.c.id == key_id, site_api_keys.c.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
