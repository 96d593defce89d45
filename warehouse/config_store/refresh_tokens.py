"""Refresh tokens: stored as hashes, grouped in families so reuse of a rotated token can revoke them all."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from warehouse.config_store.rows import new_id, to_dict
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import refresh_tokens


def create(
    conn: Connection, *, user_id: str, family_id: str, token_hash: str, expires_at: datetime
) -> dict[str, Any]:
    row = {
        "id": new_id(),
        "user_id": user_id,
        "family_id": family_id,
        "token_hash": token_hash,
        "expires_at": expires_at,
        "rotated_at": None,
        "revoked_at": None,
        "created_at": utcnow(),
    }
    conn.execute(refresh_tokens.insert().values(**row))
    return row


def get_by_hash(conn: Connection, *, token_hash: str) -> dict[str, Any] | None:
    return to_dict(
        conn.execute(select(refresh_tokens).where(refresh_tokens.c.token_hash == token_hash)).first()
    )


def mark_rotated(conn: Connection, *, token_id: str) -> bool:
    """True when this call rotated the token; False when a concurrent call already had."""
    result = conn.execute(
        update(refresh_tokens)
        .where(refresh_tokens.c.id == token_id, refresh_tokens.c.rotated_at.is_(None))
        .values(rotated_at=utcnow())
    )
    return result.rowcount == 1


def family_active(conn: Connection, *, family_id: str) -> bool:
    """True while the session (rotation family) has a token nobody revoked."""
    row = conn.execute(
        select(refresh_tokens.c.id)
        .where(refresh_tokens.c.family_id == family_id, refresh_tokens.c.revoked_at.is_(None))
        .limit(1)
    ).first()
    return row is not None


def revoke_family(conn: Connection, *, family_id: str) -> None:
    conn.execute(
        update(refresh_tokens)
        .where(refresh_tokens.c.family_id == family_id, refresh_tokens.c.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )


def revoke_all_for_user(conn: Connection, *, user_id: str) -> None:
    conn.execute(
        update(refresh_tokens)
        .where(refresh_tokens.c.user_id == user_id, refresh_tokens.c.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
