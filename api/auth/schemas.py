"""Bodies of the auth routes."""

from __future__ import annotations

from typing import Annotated, Any

from email_validator import SPECIAL_USE_DOMAIN_NAMES
from pydantic import EmailStr, Field, WithJsonSchema

from api.schemas import CamelModel, StrictCamelModel


def _any_case(name: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in name)


# pydantic's EmailStr refuses addresses at special-use domains (RFC 6761: `.test`, `.local`, ...), which
# `format: email` allows: the pattern leaves them out, from the list the validator itself reads.
_SPECIAL_USE = "|".join(_any_case(name) for name in sorted(SPECIAL_USE_DOMAIN_NAMES))
Email = Annotated[
    EmailStr,
    WithJsonSchema(
        {
            "type": "string",
            "format": "email",
            "pattern": f"^(?!.*[@.]({_SPECIAL_USE})\\.?$)",
            "description": "An e-mail address; none at a special-use domain ("
            + ", ".join(f".{name}" for name in sorted(SPECIAL_USE_DOMAIN_NAMES))
            + ").",
        }
    ),
]


class RegisterBody(StrictCamelModel):
    email: Email
    password: str = Field(min_length=8, max_length=256)
    name: str = Field(min_length=1, max_length=200)
    organization_name: str | None = Field(default=None, min_length=1, max_length=200)


class LoginBody(StrictCamelModel):
    email: Email
    password: str = Field(min_length=1, max_length=256)


class VerifyMfaLoginBody(StrictCamelModel):
    challenge_token: str = Field(min_length=1)
    code: str = Field(min_length=6, max_length=32)


class RefreshBody(StrictCamelModel):
    refresh_token: str = Field(min_length=1, max_length=200)


class RevokeBody(RefreshBody):
    everywhere: bool = Field(
        default=False, description="Revoke every session of the account, not just this one."
    )


class MfaCodeBody(StrictCamelModel):
    code: str = Field(
        min_length=6, max_length=32, description="A TOTP code (disable also takes a backup code)."
    )


class VerifyEmailBody(StrictCamelModel):
    token: str = Field(min_length=1)


class ResendVerificationBody(StrictCamelModel):
    email: Email


class Tokens(CamelModel):
    access_token: str
    refresh_token: str
    expires_in: int = Field(description="Seconds until the access token expires.")
    token_type: str = "Bearer"


class MfaChallenge(CamelModel):
    mfa_required: bool = True
    challenge_token: str
    expires_in: int


class UserOut(CamelModel):
    id: str
    email: str
    name: str
    organization_id: str
    role: str
    is_platform_admin: bool
    email_verified: bool
    mfa_enabled: bool


class MfaSetup(CamelModel):
    secret: str
    otpauth_uri: str


class MfaVerified(CamelModel):
    valid: bool


class BackupCodes(CamelModel):
    enabled: bool = True
    backup_codes: list[str] = Field(description="Shown once; each works once.")


class MfaStatus(CamelModel):
    enabled: bool
    backup_codes_remaining: int


class VerificationStatus(CamelModel):
    email: str
    email_verified: bool


class CsrfToken(CamelModel):
    csrf_token: str


def user_out(user: dict[str, Any]) -> UserOut:
    return UserOut(
        id=user["id"],
        email=user["email"],
        name=user["name"],
        organization_id=user["organization_id"],
        role=user["role"],
        is_platform_admin=bool(user["is_platform_admin"]),
        email_verified=user["email_verified_at"] is not None,
        mfa_enabled=bool(user["mfa_enabled"]),
    )


def verification_status_of(user: dict[str, Any]) -> VerificationStatus:
    return VerificationStatus(email=user["email"], email_verified=user["email_verified_at"] is not None)
