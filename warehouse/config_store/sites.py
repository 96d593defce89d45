"""Sites: the tenant-owned storefronts."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any, TypedDict, cast

from sqlalchemy import Connection, delete, select, update

from warehouse.config_store import site_cache
from warehouse.config_store.rows import get_by_id, new_id, to_dict
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import sites


class Site(TypedDict):
    """A row of ``sites``, as every repository function here returns it."""

    id: str
    organization_id: str
    name: str
    domain: str
    site_key: str
    currency: str
    timezone: str
    is_verified: bool
    verified_at: datetime | None
    verification_token: str
    tracking_config: dict[str, Any]
    created_at: datetime
    updated_at: datetime


def new_site_key() -> str:
    return "sk_" + secrets.token_hex(12)


def create(
    conn: Connection,
    *,
    organization_id: str,
    name: str,
    domain: str,
    currency: str,
    timezone: str,
    tracking_config: dict[str, Any],
    is_verified: bool = False,
    site_id: str | None = None,
) -> Site:
    """A new site; ``site_id`` chosen by the caller (the demo's sites: the same on every run) or new."""
    now = utcnow()
    row: Site = {
        "id": site_id or new_id(),
        "organization_id": organization_id,
        "name": name,
        "domain": domain,
        "site_key": new_site_key(),
        "currency": currency,
        "timezone": timezone,
        "is_verified": is_verified,
        "verified_at": now if is_verified else None,
        "verification_token": secrets.token_hex(16),
        "tracking_config": tracking_config,
        "created_at": now,
        "updated_at": now,
    }
    conn.execute(sites.insert().values(**row))
    site_cache.invalidate()
    return row


def timezones(conn: Connection) -> dict[str, str]:
    """Every site's time zone, by site id."""
    return {row.id: row.timezone for row in conn.execute(select(sites.c.id, sites.c.timezone))}


def _site(row: dict[str, Any] | None) -> Site | None:
    return cast(Site, row)


def get(conn: Connection, *, site_id: str) -> Site | None:
    return _site(get_by_id(conn, sites, site_id))


def get_by_key(conn: Connection, *, site_key: str) -> Site | None:
    return _site(to_dict(conn.execute(select(sites).where(sites.c.site_key == site_key)).first()))


def list_all(conn: Connection) -> list[Site]:
    """Every site of every organisation, oldest first (jobs that visit each site)."""
    return [cast(Site, to_dict(r)) for r in conn.execute(select(sites).order_by(sites.c.created_at))]


def list_for_organization(conn: Connection, *, organization_id: str) -> list[Site]:
    rows = conn.execute(
        select(sites).where(sites.c.organization_id == organization_id).order_by(sites.c.created_at)
    )
    return [cast(Site, to_dict(r)) for r in rows]


def update_fields(conn: Connection, *, site_id: str, **values: Any) -> Site | None:
    if values:
        conn.execute(update(sites).where(sites.c.id == site_id).values(updated_at=utcnow(), **values))
        site_cache.invalidate()
    return get(conn, site_id=site_id)


def delete_one(conn: Connection, *, site_id: str) -> None:
    conn.execute(delete(sites).where(sites.c.id == site_id))
    site_cache.invalidate()
