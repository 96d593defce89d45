"""Users: credentials, role, MFA state."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, update

from warehouse.config_store.rows import get_by_id, new_id, to_dict
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import users


def create(
    conn: Connection,
    *,
    organization_id: str,
    email: str,
    name: str,
    password_hash: str,
    role: str,
    is_platform_admin: bool = False,
) -> dict[str, Any]:
    row = {
        "id": new_id(),
        "organization_id": organization_id,
        "email": email.lower(),
        "name": name,
        "password_hash": password_hash,
        "role": role,
        "is_platform_admin": is_platform_admin,
        "email_verified_at": None,
        "mfa_secret": None,
        "mfa_enabled": False,
        "mfa_last_timestep": None,
        "created_at": utcnow(),
    }
    conn.execute(users.insert().values(**row))
    return row


def get(conn: Connection, *, user_id: str) -> dict[str, Any] | None:
    return get_by_id(conn, users, user_id)


def get_by_email(conn: Connection, *, email: str) -> dict[str, Any] | None:
    return to_dict(conn.execute(select(users).where(users.c.email == email.lower())).first())


def update_fields(conn: Connection, *, user_id: str, **values: Any) -> None:
    conn.execute(update(users).where(users.c.id == user_id).values(**values))
