"""Organisations and their subscription state."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, update

from warehouse.config_store import site_cache
from warehouse.config_store.rows import get_by_id, new_id
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import organizations

SUBSCRIPTION_STATUSES = ("active", "trialing", "past_due", "canceled", "unpaid")
VALID_SUBSCRIPTION_STATUSES = ("active", "trialing")


def create(conn: Connection, *, name: str, subscription_status: str = "active") -> dict[str, Any]:
    row = {
        "id": new_id(),
        "name": name,
        "subscription_status": subscription_status,
        "subscription_period_end": None,
        "created_at": utcnow(),
    }
    conn.execute(organizations.insert().values(**row))
    return row


def get(conn: Connection, *, organization_id: str) -> dict[str, Any] | None:
    return get_by_id(conn, organizations, organization_id)


def update_subscription(
    conn: Connection, *, organization_id: str, status: str, period_end: datetime | None
) -> None:
    conn.execute(
        update(organizations)
        .where(organizations.c.id == organization_id)
        .values(subscription_status=status, subscription_period_end=period_end)
    )
    site_cache.invalidate()


def subscription_is_valid(org: dict[str, Any], *, now: datetime | None = None) -> bool:
    if org["subscription_status"] not in VALID_SUBSCRIPTION_STATUSES:
        return False
    end = org["subscription_period_end"]
    return end is None or end > (now or utcnow())
