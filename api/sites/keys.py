"""Site public API keys for the mobile runtime: `aisle_pk_<prefix>_<secret>`, only the hash is kept."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import Engine

from api.auth.tokens import digest
from api.errors import Conflict, NotFound
from warehouse.config_store import api_keys
from warehouse.config_store.store import utcnow

KEY_PREFIX = "aisle_pk_"


def _new_secret() -> tuple[str, str]:
    prefix = secrets.token_hex(6)
    return prefix, f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(24)}"


def create(store: Engine, *, site_id: str, name: str, scopes: list[str]) -> tuple[dict[str, Any], str]:
    prefix, key = _new_secret()
    with store.begin() as conn:
        record = api_keys.create(
            conn, site_id=site_id, name=name, scopes=scopes, prefix=prefix, key_hash=digest(key)
        )
    return record, key


def _owned(conn, *, site_id: str, key_id: str) -> dict[str, Any]:
    record = api_keys.get(conn, key_id=key_id)
    if record is None or record["site_id"] != site_id:
        raise NotFound("No such API key on this site", code="API_KEY_NOT_FOUND")
    return record


def rotate(store: Engine, *, site_id: str, key_id: str) -> tuple[dict[str, Any], str]:
    """A new secret for the same key; the old secret stops working at once."""
    prefix, key = _new_secret()
    with store.begin() as conn:
        record = _owned(conn, site_id=site_id, key_id=key_id)
        if record["revoked_at"] is not None:
            raise Conflict("A revoked key cannot be rotated; create a new one", code="API_KEY_REVOKED")
        api_keys.update_fields(conn, key_id=key_id, prefix=prefix, key_hash=digest(key))
        return _owned(conn, site_id=site_id, key_id=key_id), key


def revoke(store: Engine, *, site_id: str, key_id: str) -> dict[str, Any]:
    with store.begin() as conn:
        _owned(conn, site_id=site_id, key_id=key_id)
        api_keys.revoke(conn, key_id=key_id)
        return _owned(conn, site_id=site_id, key_id=key_id)


def authenticate(store: Engine, *, site_id: str, presented: str) -> dict[str, Any] | None:
    """The active key record of this site matching ``presented``, or None."""
    if not presented.startswith(KEY_PREFIX):
        return None
    prefix = presented[len(KEY_PREFIX) :].split("_", 1)[0]
    with store.begin() as conn:
        record = api_keys.get_by_prefix(conn, prefix=prefix)
        if (
            record is None
            or record["site_id"] != site_id
            or record["revoked_at"] is not None
            or not secrets.compare_digest(record["key_hash"], digest(presented))
        ):
            return None
        api_keys.update_fields(conn, key_id=record["id"], last_used_at=utcnow())
    return record
