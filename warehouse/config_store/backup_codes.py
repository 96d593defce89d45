"""MFA backup codes, stored hashed; each works once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, select, update

from warehouse.config_store.rows import new_id, to_dict
from warehouse.config_store.store import utcnow
from warehouse.config_store.tables import mfa_backup_codes


def replace_all(conn: Connection, *, user_id: str, code_hashes: list[str]) -> None:
    conn.execute(delete(mfa_backup_codes).where(mfa_backup_codes.c.user_id == user_id))
    now = utcnow()
    for code_hash in code_hashes:
        conn.execute(
            mfa_backup_codes.insert().values(
                id=new_id(), user_id=user_id, code_hash=code_hash, used_at=None, created_at=now
            )
        )


def list_unused(conn: Connection, *, user_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(mfa_backup_codes).where(
            mfa_backup_codes.c.user_id == user_id, mfa_backup_codes.c.used_at.is_(None)
        )
    )
    return [to_dict(r) for r in rows]


def mark_used(conn: Connection, *, code_id: str) -> bool:
    result = conn.execute(
        update(mfa_backup_codes)
        .where(mfa_backup_codes.c.id == code_id, mfa_backup_codes.c.used_at.is_(None))
        .values(used_at=utcnow())
    )
    return result.rowcount == 1


def delete_all(conn: Connection, *, user_id: str) -> None:
    conn.execute(delete(mfa_backup_codes).where(mfa_backup_codes.c.user_id == user_id))
