"""Activity log of configuration changes, per organisation and site."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from warehouse.config_store.rows import new_id, to_dict
from warehouse.config_store.sites import Site
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import activity_logs


def record(
    conn: Connection,
    *,
    organization_id: str,
    action: str,
    site_id: str | None = None,
    user_id: str | None = None,
    details: dict[str, Any] | None = None,
    message: str | None = None,
) -> None:
    conn.execute(
        activity_logs.insert().values(
            id=new_id(),
            organization_id=organization_id,
            site_id=site_id,
            user_id=user_id,
            action=action,
            details=details,
            message=message,
            created_at=utcnow(),
        )
    )


def record_on_site(
    conn: Connection,
    site: Site,
    action: str,
    *,
    user_id: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """``record`` a change to one site, in its organisation's log."""
    org, site_id = site["organization_id"], site["id"]
    record(conn, organization_id=org, site_id=site_id, user_id=user_id, action=action, details=details)


def list_recent(
    conn: Connection, *, organization_id: str, site_id: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    query = select(activity_logs).where(activity_logs.c.organization_id == organization_id)
    if site_id:
        query = query.where(activity_logs.c.site_id == site_id)
    rows = conn.execute(query.order_by(activity_logs.c.created_at.desc()).limit(limit))
    return [to_dict(r) for r in rows]
