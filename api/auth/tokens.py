"""Signed tokens: short-lived JWT access tokens, MFA challenges, e-mail verification; opaque refresh tokens."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from api.errors import BadRequest, Unauthorized

ALGORITHM = "HS256"
ISSUER = "aisle"


def issue(key: str, *, kind: str, subject: str, ttl_seconds: int, **claims: Any) -> str:
    now = datetime.now(UTC)
    payload = {
        "iss": ISSUER,
        "sub": subject,
        "typ": kind,
        "iat": now,
        "exp": now + timedelta(seconds=ttl_seconds),
        "jti": str(uuid.uuid4()),
        **claims,
    }
    return jwt.encode(payload, key, algorithm=ALGORITHM)


def read(key: str, token: str, *, kind: str, error: type = Unauthorized) -> dict[str, Any]:
    """Decode and check signature, expiry and type; ``error`` is raised with a stable code otherwise."""
    try:
        claims = jwt.decode(token, key, algorithms=[ALGORITHM], issuer=ISSUER, options={"require": ["exp"]})
    except jwt.ExpiredSignatureError as exc:
        raise error("Token has expired", code="TOKEN_EXPIRED") from exc
    except jwt.PyJWTError as exc:
        raise error("Token is invalid", code="TOKEN_INVALID") from exc
    if claims.get("typ") != kind:
        raise error("Token is of the wrong type", code="TOKEN_INVALID")
    return claims


def new_refresh_token() -> str:
    return "rt_" + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """SHA-256 is enough for high-entropy random secrets (refresh tokens, API keys)."""
    return hashlib.sha256(secret.encode()).hexdigest()


__all__ = ["issue", "read", "new_refresh_token", "digest", "BadRequest"]
