"""Identity links: a visitor (device) identified as a user of the shop."""

from __future__ import annotations

from sqlalchemy import Connection, false, select, text
from sqlalchemy.exc import IntegrityError

from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import identity_links


def link(conn: Connection, *, site_id: str, visitor_id: str, user_id: str) -> bool:
    """Store the link; True when the visitor's history now joins this user's: the link is new and the
    visitor was linked to no other user before (analytics count a visitor as its first user; a
    later one, a shared device, is kept but merges nothing)."""
    # Servers linking one visitor at once would each read "no user yet" and both answer merged: links
    # of a visitor are made one transaction at a time.
    if conn.dialect.name == "postgresql":
        conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:visitor, 0))"),
            {"visitor": f"identity-link:{site_id}:{visitor_id}"},
        )
    else:  # SQLite: a write that changes nothing takes the database's write lock before the read
        conn.execute(identity_links.update().where(false()).values(user_id=identity_links.c.user_id))
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
