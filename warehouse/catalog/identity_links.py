"""Identity links: a visitor (device) identified as a user of the shop."""

from __future__ import annotations

from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from warehouse.catalog.store import utcnow
from warehouse.catalog.tables import identity_links


def link(conn: Connection, *, site_id: str, visitor_id: str, user_id: str) -> bool:
    """Store the link; True when the visitor's history now joins this user's: the link is new and the
    visitor was linked to no other user before (analytics count a visitor as its first user; a
    later one, a shared device, is kept but merges nothing)."""
    earlier = users_of_visitor(conn, site_id=site_id, visitor_id=visitor_id)
    try:
        with conn.begin_nested():
            conn.execute(
                identity_links.insert().values(
                    site_id=site_id, visitor_id=visitor_id, user_id=user_id, created_at=utcnow()
                )
            )
    except IntegrityError:
        return False
    return not earlier


def users_of_visitor(conn: Connection, *, site_id: str, visitor_id: str) -> list[str]:
    rows = conn.execute(
        select(identity_links.c.user_id)
        .where(identity_links.c.site_id == site_id, identity_links.c.visitor_id == visitor_id)
        .order_by(identity_links.c.created_at)
    )
    return [r.user_id for r in rows]
