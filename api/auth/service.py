"""Accounts and sessions: register, login (with MFA), refresh rotation, logout/revoke, e-mail verification."""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from aisle.settings import Settings
from api.auth import mfa, tokens
from api.auth.passwords import hash_password, verify_password
from api.errors import BadRequest, Conflict, TooManyRequests, Unauthorized
from api.throttle import Limit, rate_limit_headers
from jobs.mail import Outbox
from warehouse.config_store import activity, organizations, refresh_tokens, users
from warehouse.config_store.store import ConfigStore, utcnow
from warehouse.hotstate import HotState


@dataclass(frozen=True)
class TokenPair:
    access_token: str
    refresh_token: str
    expires_in: int


def register(
    store: ConfigStore,
    settings: Settings,
    outbox: Outbox,
    *,
    email: str,
    password: str,
    name: str,
    organization_name: str | None,
) -> dict[str, Any]:
    with store.begin() as conn:
        if users.get_by_email(conn, email=email):
            raise Conflict("An account with this e-mail already exists", code="EMAIL_TAKEN")
        org = organizations.create(conn, name=organization_name or f"{name}'s organisation")
        user = users.create(
            conn,
            organization_id=org["id"],
            email=email,
            name=name,
            password_hash=hash_password(password),
            role="owner",
        )
        activity.record(conn, organization_id=org["id"], user_id=user["id"], action="user.registered")
    send_verification_email(settings, outbox, user=user)
    return user


def create_user(
    store: ConfigStore,
    *,
    email: str,
    password: str,
    name: str | None = None,
    organization_id: str | None = None,
    role: str = "owner",
    is_platform_admin: bool = False,
    email_verified: bool = True,
) -> dict[str, Any]:
    """Operator path (CLI, demo): no e-mail round trip; joins ``organization_id`` or gets its own."""
    with store.begin() as conn:
        if users.get_by_email(conn, email=email):
            raise Conflict("An account with this e-mail already exists", code="EMAIL_TAKEN")
        if organization_id is None:
            organization_id = organizations.create(conn, name=f"{name or email}'s organisation")["id"]
        elif organizations.get(conn, organization_id=organization_id) is None:
            raise BadRequest("No such organisation", code="ORGANIZATION_NOT_FOUND")
        user = users.create(
            conn,
            organization_id=organization_id,
            email=email,
            name=name or email.split("@")[0],
            password_hash=hash_password(password),
            role=role,
            is_platform_admin=is_platform_admin,
        )
        if email_verified:
            users.update_fields(conn, user_id=user["id"], email_verified_at=utcnow())
    return user


def _login_limits(settings: Settings) -> tuple[Limit, Limit]:
    window = settings.login_window_seconds
    return (
        Limit("login-account", settings.login_max_failures_per_account, window),
        Limit("login-address", settings.login_max_attempts_per_address, window),
    )


def check_login_throttle(hot: HotState, settings: Settings, *, email: str, address: str) -> dict[str, str]:
    """Count this attempt against its address and refuse it (429) while the account has too many
    recent failures or the address too many attempts. Returns the address limit's rate-limit headers."""
    account_limit, address_limit = _login_limits(settings)
    failures = hot.peek(f"rl:{account_limit.name}:{email.lower()}")
    if failures.count >= account_limit.limit:
        raise TooManyRequests(
            "Too many failed logins for this account; try again later",
            code="LOGIN_THROTTLED",
            headers={**rate_limit_headers(account_limit, failures), "Retry-After": str(failures.reset_in)},
        )
    attempts = hot.hit(f"rl:{address_limit.name}:{address}", window_seconds=address_limit.window_seconds)
    headers = rate_limit_headers(address_limit, attempts)
    if attempts.count > address_limit.limit:
        raise TooManyRequests(
            "Too many login attempts from this address; try again later",
            code="LOGIN_THROTTLED",
            headers={**headers, "Retry-After": str(attempts.reset_in)},
        )
    return headers


def login(
    store: ConfigStore, settings: Settings, hot: HotState, *, email: str, password: str
) -> TokenPair | str:
    """Tokens, or an MFA challenge token when the account has MFA on. Failures count against the
    account (see ``check_login_throttle``)."""
    email = email.lower()
    with store.connect() as conn:
        user = users.get_by_email(conn, email=email)
    # The password is checked, against a dummy hash, for an unknown e-mail too: as slow either way.
    if not verify_password(user["password_hash"] if user else None, password) or user is None:
        account_limit, _ = _login_limits(settings)
        hot.hit(f"rl:{account_limit.name}:{email}", window_seconds=account_limit.window_seconds)
        raise Unauthorized("E-mail or password is wrong", code="INVALID_CREDENTIALS")
    hot.clear(f"rl:login-account:{email}")
    if user["mfa_enabled"]:
        return tokens.issue(
            settings.signing_key,
            kind="mfa_challenge",
            subject=user["id"],
            ttl_seconds=settings.mfa_challenge_ttl_seconds,
        )
    return issue_session(store, settings, user=user)


def verify_mfa_login(
    store: ConfigStore, settings: Settings, hot: HotState, *, challenge_token: str, code: str
) -> TokenPair:
    """Tokens for a challenge and a right TOTP or backup code. Wrong codes count against the account
    (``mfa.guess_throttle``), not the challenge, so fresh challenges do not buy fresh guesses. A
    challenge gives tokens once: its id is marked used in the hot state until the token expires."""
    claims = tokens.read(settings.signing_key, challenge_token, kind="mfa_challenge")
    used_key = f"mfa-challenge-used:{claims['jti']}"
    if hot.get_value(used_key) is not None:
        raise _challenge_used()
    guesses = mfa.guess_throttle(hot, settings, user_id=claims["sub"])
    with store.begin() as conn:
        user = users.get(conn, user_id=claims["sub"])
        if not user or not user["mfa_enabled"]:
            raise Unauthorized("MFA challenge is no longer valid", code="TOKEN_INVALID")
        guesses.count_guess()
        if not mfa.check_code_or_backup(conn, user=user, code=code):
            raise Unauthorized("The MFA code is wrong", code="MFA_CODE_INVALID")
        # Claimed before the spent code commits: a concurrent exchange of the same challenge that
        # loses the claim rolls back, and its code (a backup code, say) stays unused.
        remaining = max(1, math.ceil(claims["exp"] - time.time()))
        if not hot.set_value_if_absent(used_key, b"1", ttl_seconds=remaining):
            raise _challenge_used()
    guesses.forget()
    return issue_session(store, settings, user=user)


def _challenge_used() -> Unauthorized:
    return Unauthorized(
        "This MFA challenge was already exchanged for tokens; log in again for a new one",
        code="MFA_CHALLENGE_USED",
    )


def issue_session(
    store: ConfigStore, settings: Settings, *, user: dict[str, Any], family_id: str | None = None
) -> TokenPair:
    refresh = tokens.new_refresh_token()
    family_id = family_id or str(uuid.uuid4())
    with store.begin() as conn:
        refresh_tokens.create(
            conn,
            user_id=user["id"],
            family_id=family_id,
            token_hash=tokens.digest(refresh),
            expires_at=utcnow() + timedelta(seconds=settings.refresh_token_ttl_seconds),
        )
    access = tokens.issue(
        settings.signing_key,
        kind="access",
        subject=user["id"],
        ttl_seconds=settings.access_token_ttl_seconds,
        org=user["organization_id"],
        # The session the token belongs to: logout and revocation end its access tokens too.
        sid=family_id,
    )
    return TokenPair(access, refresh, settings.access_token_ttl_seconds)


def _refresh_record(conn, refresh_token: str) -> dict[str, Any]:
    record = refresh_tokens.get_by_hash(conn, token_hash=tokens.digest(refresh_token))
    if record is None:
        raise Unauthorized("Refresh token is invalid", code="REFRESH_TOKEN_INVALID")
    return record


def refresh(store: ConfigStore, settings: Settings, *, refresh_token: str) -> TokenPair:
    with store.begin() as conn:
        record = _refresh_record(conn, refresh_token)
        if record["revoked_at"] is not None:
            raise Unauthorized("Refresh token was revoked", code="REFRESH_TOKEN_REVOKED")
        if record["rotated_at"] is not None or not refresh_tokens.mark_rotated(conn, token_id=record["id"]):
            # Someone replayed a token that was already exchanged: assume theft, end the whole session.
            refresh_tokens.revoke_family(conn, family_id=record["family_id"])
            reuse_detected = True
        else:
            reuse_detected = False
        if not reuse_detected and record["expires_at"] <= utcnow():
            raise Unauthorized("Refresh token has expired", code="REFRESH_TOKEN_EXPIRED")
        user = users.get(conn, user_id=record["user_id"])
    if reuse_detected:
        raise Unauthorized(
            "Refresh token was already used; the session has been revoked", code="REFRESH_TOKEN_REUSED"
        )
    if user is None:
        raise Unauthorized("Refresh token is invalid", code="REFRESH_TOKEN_INVALID")
    return issue_session(store, settings, user=user, family_id=record["family_id"])


def logout(store: ConfigStore, *, refresh_token: str) -> None:
    """Ends the session the token belongs to (its whole rotation family)."""
    with store.begin() as conn:
        record = _refresh_record(conn, refresh_token)
        refresh_tokens.revoke_family(conn, family_id=record["family_id"])


def revoke(store: ConfigStore, *, refresh_token: str, user_id: str | None, everywhere: bool) -> None:
    with store.begin() as conn:
        record = _refresh_record(conn, refresh_token)
        if user_id is not None and record["user_id"] != user_id:
            raise Unauthorized("Refresh token is invalid", code="REFRESH_TOKEN_INVALID")
        if everywhere:
            refresh_tokens.revoke_all_for_user(conn, user_id=record["user_id"])
        else:
            refresh_tokens.revoke_family(conn, family_id=record["family_id"])


def get_user(store: ConfigStore, *, user_id: str) -> dict[str, Any]:
    """The account of a signed-in caller (one deleted since its token was checked: 401)."""
    with store.connect() as conn:
        return mfa.account(conn, user_id=user_id)


def resend_verification(store: ConfigStore, settings: Settings, outbox: Outbox, *, email: str) -> None:
    """The verification e-mail again, when ``email`` has an account not yet verified; nothing
    otherwise, and the caller cannot tell which (addresses with accounts are not to be probed)."""
    with store.connect() as conn:
        user = users.get_by_email(conn, email=email)
    if user is not None and user["email_verified_at"] is None:
        send_verification_email(settings, outbox, user=user)


def send_verification_email(settings: Settings, outbox: Outbox, *, user: dict[str, Any]) -> None:
    token = tokens.issue(
        settings.signing_key,
        kind="email_verify",
        subject=user["id"],
        ttl_seconds=settings.email_verification_ttl_seconds,
        email=user["email"],
    )
    hours = settings.email_verification_ttl_seconds // 3600
    outbox.send(
        to=user["email"],
        subject="Confirm your e-mail address for Aisle",
        body=(
            f"Hello {user['name']},\n\nconfirm your e-mail address by sending this token to "
            f"POST {settings.public_url}/api/v1/auth/verify-email:\n\n"
            f"verification-token: {token}\n\nThe token expires in {hours} hours.\n"
        ),
    )


def verify_email(store: ConfigStore, settings: Settings, *, token: str) -> dict[str, Any]:
    claims = tokens.read(settings.signing_key, token, kind="email_verify", error=BadRequest)
    with store.begin() as conn:
        user = users.get(conn, user_id=claims["sub"])
        if user is None or user["email"] != claims.get("email"):
            raise BadRequest("Verification token is invalid", code="TOKEN_INVALID")
        if user["email_verified_at"] is None:
            users.update_fields(conn, user_id=user["id"], email_verified_at=utcnow())
        return mfa.account(conn, user_id=user["id"])
