"""Auth routes: the spec's Auth row."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Response

from api.auth import mfa, service
from api.auth.schemas import (
    BackupCodes,
    CsrfToken,
    LoginBody,
    MfaChallenge,
    MfaCodeBody,
    MfaSetup,
    MfaStatus,
    MfaVerified,
    RefreshBody,
    RegisterBody,
    ResendVerificationBody,
    RevokeBody,
    Tokens,
    UserOut,
    VerificationStatus,
    VerifyEmailBody,
    VerifyMfaLoginBody,
    user_out,
    verification_status_of,
)
from api.deps import (
    ClientAddress,
    ConfigStoreDep,
    CurrentUser,
    HotStateDep,
    MfaGuesses,
    OutboxDep,
    SettingsDep,
)
from api.errors import error_response
from api.schemas import Ok
from api.throttle import Limit, headers_on_errors, throttle

router = APIRouter(prefix="/auth", tags=["auth"])

CSRF_COOKIE = "aisle_csrf"


def _tokens(pair: service.TokenPair) -> Tokens:
    return Tokens(
        access_token=pair.access_token, refresh_token=pair.refresh_token, expires_in=pair.expires_in
    )


# Routes that count attempts answer 429 (LOGIN_THROTTLED, MFA_THROTTLED, RATE_LIMITED) with Retry-After.
THROTTLED: dict[int | str, dict[str, Any]] = {
    429: error_response("Too many attempts: retry after `Retry-After` seconds.")
}
MFA_ALREADY_ENABLED: dict[int | str, dict[str, Any]] = {
    409: error_response("MFA is already enabled; disable it first (MFA_ALREADY_ENABLED).")
}


@router.post(
    "/register",
    status_code=201,
    response_model=UserOut,
    responses={409: error_response("An account with this e-mail already exists (EMAIL_TAKEN)."), **THROTTLED},
)
def register(
    body: RegisterBody,
    store: ConfigStoreDep,
    settings: SettingsDep,
    outbox: OutboxDep,
    hot: HotStateDep,
    address: ClientAddress,
    response: Response,
) -> UserOut:
    """Create an account and its organisation (the caller becomes its owner); sends a verification e-mail.
    Attempts are counted per client address (`AISLE_REGISTRATIONS_PER_ADDRESS_PER_HOUR`): past the
    limit, 429 `REGISTER_THROTTLED` with Retry-After, so one address cannot mint accounts (and
    verification e-mails) without end."""
    limit = Limit("register-address", settings.registrations_per_address_per_hour, 3600)
    throttle(hot, response, limit=limit, subject=address, code="REGISTER_THROTTLED")
    user = service.register(
        store,
        settings,
        outbox,
        email=body.email,
        password=body.password,
        name=body.name,
        organization_name=body.organization_name,
    )
    return user_out(user)


@router.post("/login", response_model=Tokens | MfaChallenge, responses=THROTTLED)
def login(
    body: LoginBody,
    store: ConfigStoreDep,
    settings: SettingsDep,
    hot: HotStateDep,
    address: ClientAddress,
    response: Response,
) -> Tokens | MfaChallenge:
    """Tokens, or `{mfaRequired: true, challengeToken}` to exchange at `/auth/login/verify-mfa`.
    Failed logins are throttled per account and attempts per client address (429 with Retry-After);
    every answer carries the address limit's `X-RateLimit-*` headers."""
    headers = service.check_login_throttle(hot, settings, email=body.email, address=address)
    with headers_on_errors(headers):
        result = service.login(store, settings, hot, email=body.email, password=body.password)
    response.headers.update(headers)
    if isinstance(result, str):
        return MfaChallenge(challenge_token=result, expires_in=settings.mfa_challenge_ttl_seconds)
    return _tokens(result)


@router.post("/login/verify-mfa", response_model=Tokens, responses=THROTTLED)
def verify_mfa_login(
    body: VerifyMfaLoginBody,
    store: ConfigStoreDep,
    settings: SettingsDep,
    hot: HotStateDep,
    address: ClientAddress,
    response: Response,
) -> Tokens:
    """Exchange an MFA challenge and a TOTP or backup code for tokens. Attempts are throttled per
    client address, wrong codes per account (after the password step's number of failures within its
    window, 429 `MFA_THROTTLED` with Retry-After, even for a right code); every answer carries the
    address limit's `X-RateLimit-*` headers."""
    limit = Limit("mfa-address", settings.login_max_attempts_per_address, settings.login_window_seconds)
    headers = throttle(hot, response, limit=limit, subject=address, code="LOGIN_THROTTLED")
    with headers_on_errors(headers):
        return _tokens(
            service.verify_mfa_login(
                store, settings, hot, challenge_token=body.challenge_token, code=body.code
            )
        )


@router.post("/refresh", response_model=Tokens)
def refresh(body: RefreshBody, store: ConfigStoreDep, settings: SettingsDep) -> Tokens:
    """Rotate: the given refresh token is spent and a new pair returned. Presenting a spent token
    again revokes the whole session family (401 `REFRESH_TOKEN_REUSED`)."""
    return _tokens(service.refresh(store, settings, refresh_token=body.refresh_token))


@router.post("/logout", response_model=Ok)
def logout(body: RefreshBody, store: ConfigStoreDep) -> Ok:
    """End the session of this refresh token."""
    service.logout(store, refresh_token=body.refresh_token)
    return Ok()


@router.post("/revoke", response_model=Ok)
def revoke(body: RevokeBody, store: ConfigStoreDep, principal: CurrentUser) -> Ok:
    """Revoke a refresh token's session, or with `everywhere: true` every session of the account."""
    service.revoke(
        store, refresh_token=body.refresh_token, user_id=principal.user_id, everywhere=body.everywhere
    )
    return Ok()


@router.get("/me", response_model=UserOut)
def me(store: ConfigStoreDep, principal: CurrentUser) -> UserOut:
    """The caller's account."""
    return user_out(service.get_user(store, user_id=principal.user_id))


@router.post("/mfa/setup", response_model=MfaSetup, responses=MFA_ALREADY_ENABLED)
def mfa_setup(store: ConfigStoreDep, principal: CurrentUser) -> MfaSetup:
    """Start MFA: a new TOTP secret and its otpauth URI (for a QR code). Not active until enabled."""
    return mfa.setup(store, user_id=principal.user_id)


# Routes that check a code count wrong ones against the account, as the login's MFA step does:
# after the password step's number of failures within its window, 429 `MFA_THROTTLED` (a right code
# too); every answer carries that limit's `X-RateLimit-*` headers.


@router.post("/mfa/verify", response_model=MfaVerified, responses=THROTTLED)
def mfa_verify(
    body: MfaCodeBody, store: ConfigStoreDep, principal: CurrentUser, guesses: MfaGuesses, response: Response
) -> MfaVerified:
    """Check a TOTP code against the secret from setup without changing anything else.
    `valid: false` counts as a wrong code for the account's MFA throttle."""
    with guesses.sending_headers(response):
        return MfaVerified(valid=mfa.verify(store, guesses, user_id=principal.user_id, code=body.code))


@router.post("/mfa/enable", response_model=BackupCodes, responses={**THROTTLED, **MFA_ALREADY_ENABLED})
def mfa_enable(
    body: MfaCodeBody, store: ConfigStoreDep, principal: CurrentUser, guesses: MfaGuesses, response: Response
) -> BackupCodes:
    """Turn MFA on with a current TOTP code; answers ten single-use backup codes, shown once."""
    with guesses.sending_headers(response):
        return BackupCodes(backup_codes=mfa.enable(store, guesses, user_id=principal.user_id, code=body.code))


@router.post("/mfa/disable", response_model=Ok, responses=THROTTLED)
def mfa_disable(
    body: MfaCodeBody, store: ConfigStoreDep, principal: CurrentUser, guesses: MfaGuesses, response: Response
) -> Ok:
    """Turn MFA off; needs a current TOTP code or an unused backup code."""
    with guesses.sending_headers(response):
        mfa.disable(store, guesses, user_id=principal.user_id, code=body.code)
    return Ok()


@router.post("/mfa/backup-codes/regenerate", response_model=BackupCodes, responses=THROTTLED)
def mfa_regenerate(
    body: MfaCodeBody, store: ConfigStoreDep, principal: CurrentUser, guesses: MfaGuesses, response: Response
) -> BackupCodes:
    """Replace all backup codes (the old ones stop working); needs a current TOTP code."""
    with guesses.sending_headers(response):
        codes = mfa.regenerate_backup_codes(store, guesses, user_id=principal.user_id, code=body.code)
    return BackupCodes(backup_codes=codes)


@router.get("/mfa/status", response_model=MfaStatus)
def mfa_status(store: ConfigStoreDep, principal: CurrentUser) -> MfaStatus:
    """Whether MFA is on, and how many unused backup codes remain."""
    return mfa.status(store, user_id=principal.user_id)


@router.get("/csrf", response_model=CsrfToken)
def csrf(response: Response) -> CsrfToken:
    """A double-submit CSRF token: also set as the `aisle_csrf` cookie; browser forms echo it in
    `X-CSRF-Token`. Bearer-token API calls do not need it."""
    token = secrets.token_urlsafe(32)
    response.set_cookie(CSRF_COOKIE, token, httponly=False, samesite="strict", secure=False, max_age=3600)
    return CsrfToken(csrf_token=token)


@router.post("/verify-email", response_model=VerificationStatus)
def verify_email(body: VerifyEmailBody, store: ConfigStoreDep, settings: SettingsDep) -> VerificationStatus:
    """Confirm an e-mail address with the signed, expiring token from the verification e-mail.
    Invalid or expired tokens answer 400."""
    return verification_status_of(service.verify_email(store, settings, token=body.token))


@router.post("/resend-verification", response_model=Ok, status_code=202, responses=THROTTLED)
def resend_verification(
    body: ResendVerificationBody,
    store: ConfigStoreDep,
    settings: SettingsDep,
    outbox: OutboxDep,
    hot: HotStateDep,
    response: Response,
) -> Ok:
    """Send the verification e-mail again. Answers 202 whether or not the address has an account."""
    throttle(hot, response, limit=Limit("resend-verification", 5, 3600), subject=body.email.lower())
    service.resend_verification(store, settings, outbox, email=body.email)
    return Ok()


@router.get("/verification-status", response_model=VerificationStatus)
def verification_status(store: ConfigStoreDep, principal: CurrentUser) -> VerificationStatus:
    """Whether the caller's e-mail address is confirmed."""
    return verification_status_of(service.get_user(store, user_id=principal.user_id))
