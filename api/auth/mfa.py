"""TOTP multi-factor: setup, verify, enable, disable and single-use backup codes."""

from __future__ import annotations

import secrets
import time
import unicodedata
from typing import Any

import pyotp
from sqlalchemy import Connection

from aisle.settings import Settings
from api.auth import tokens
from api.auth.schemas import MfaSetup, MfaStatus
from api.errors import BadRequest, Conflict, Unauthorized
from api.throttle import GuessThrottle, Limit
from warehouse.config_store import backup_codes, users
from warehouse.config_store.store import ConfigStore
from warehouse.hotstate import HotState

ISSUER_NAME = "Aisle"
BACKUP_CODE_COUNT = 10
# Accept the previous and next 30 s step too, for clock drift between phone and server.
VALID_WINDOW = 1


def guess_throttle(hot: HotState, settings: Settings, *, user_id: str) -> GuessThrottle:
    """Wrong MFA codes of one account, counted together whichever route checks them: the password
    step's per-account policy, since a code is the other half of the same login."""
    return GuessThrottle(
        hot,
        limit=Limit("mfa-account", settings.login_max_failures_per_account, settings.login_window_seconds),
        subject=user_id,
        code="MFA_THROTTLED",
        message="Too many wrong MFA codes for this account; try again later",
    )


def _normalise(code: str) -> str:
    # NFKC turns full-width digits (a phone keyboard's) into ASCII ones.
    return unicodedata.normalize("NFKC", code).replace(" ", "").replace("-", "").strip().lower()


def _matching_timestep(secret: str, code: str) -> int | None:
    totp = pyotp.TOTP(secret)
    now = int(time.time())
    for drift in range(-VALID_WINDOW, VALID_WINDOW + 1):
        at = now + drift * totp.interval
        if secrets.compare_digest(totp.at(at), code):
            return at // totp.interval
    return None


def check_totp(conn: Connection, *, user: dict[str, Any], code: str, consume: bool = True) -> bool:
    """A TOTP code is accepted once: a replay of the same (or an older) step is refused. With
    ``consume=False`` the code is checked without spending its step."""
    code = _normalise(code)
    # isdigit alone passes other scripts' digits, which compare_digest cannot compare (a 500).
    if not user["mfa_secret"] or not (code.isascii() and code.isdigit()):
        return False
    step = _matching_timestep(user["mfa_secret"], code)
    if step is None or (user["mfa_last_timestep"] is not None and step <= user["mfa_last_timestep"]):
        return False
    if consume:
        users.update_fields(conn, user_id=user["id"], mfa_last_timestep=step)
    return True


def check_backup_code(conn: Connection, *, user: dict[str, Any], code: str) -> bool:
    wanted = tokens.digest(_normalise(code))
    for stored in backup_codes.list_unused(conn, user_id=user["id"]):
        if secrets.compare_digest(stored["code_hash"], wanted):
            return backup_codes.mark_used(conn, code_id=stored["id"])
    return False


def check_code_or_backup(conn: Connection, *, user: dict[str, Any], code: str) -> bool:
    return check_totp(conn, user=user, code=code) or check_backup_code(conn, user=user, code=code)


def account(conn: Connection, *, user_id: str) -> dict[str, Any]:
    """The account of a signed-in caller (one deleted since its token was checked: 401)."""
    user = users.get(conn, user_id=user_id)
    if user is None:
        raise Unauthorized("The account no longer exists", code="TOKEN_INVALID")
    return user


def _new_backup_codes(conn: Connection, *, user_id: str) -> list[str]:
    codes = [f"{secrets.token_hex(4)}-{secrets.token_hex(4)}" for _ in range(BACKUP_CODE_COUNT)]
    backup_codes.replace_all(conn, user_id=user_id, code_hashes=[tokens.digest(_normalise(c)) for c in codes])
    return codes


def setup(store: ConfigStore, *, user_id: str) -> MfaSetup:
    with store.begin() as conn:
        user = account(conn, user_id=user_id)
        if user["mfa_enabled"]:
            raise Conflict("MFA is already enabled; disable it first", code="MFA_ALREADY_ENABLED")
        secret = pyotp.random_base32()
        users.update_fields(conn, user_id=user_id, mfa_secret=secret, mfa_last_timestep=None)
    uri = pyotp.TOTP(secret).provisioning_uri(name=user["email"], issuer_name=ISSUER_NAME)
    return MfaSetup(secret=secret, otpauth_uri=uri)


# The logged-in routes below take the account's ``guess_throttle``: a stolen access token must not
# buy unlimited guesses at a code either.


def verify(store: ConfigStore, guesses: GuessThrottle, *, user_id: str, code: str) -> bool:
    with store.begin() as conn:
        user = account(conn, user_id=user_id)
        if not user["mfa_secret"]:
            raise BadRequest("Start with POST /auth/mfa/setup", code="MFA_NOT_SET_UP")
        guesses.count_guess()
        # Before MFA is on, verify only tests the secret being set up: spending the step would
        # refuse the same code at enable a moment later. Once on, a code opens as much as a login's,
        # so it is spent as a login's is.
        valid = check_totp(conn, user=user, code=code, consume=bool(user["mfa_enabled"]))
    if valid:
        guesses.forget()
    return valid


def enable(store: ConfigStore, guesses: GuessThrottle, *, user_id: str, code: str) -> list[str]:
    with store.begin() as conn:
        user = account(conn, user_id=user_id)
        if user["mfa_enabled"]:
            raise Conflict("MFA is already enabled", code="MFA_ALREADY_ENABLED")
        if not user["mfa_secret"]:
            raise BadRequest("Start with POST /auth/mfa/setup", code="MFA_NOT_SET_UP")
        guesses.count_guess()
        if not check_totp(conn, user=user, code=code):
            raise BadRequest("The MFA code is wrong", code="MFA_CODE_INVALID")
        users.update_fields(conn, user_id=user_id, mfa_enabled=True)
        codes = _new_backup_codes(conn, user_id=user_id)
    guesses.forget()
    return codes


def disable(store: ConfigStore, guesses: GuessThrottle, *, user_id: str, code: str) -> None:
    with store.begin() as conn:
        user = account(conn, user_id=user_id)
        if not user["mfa_enabled"]:
            raise BadRequest("MFA is not enabled", code="MFA_NOT_ENABLED")
        guesses.count_guess()
        if not check_code_or_backup(conn, user=user, code=code):
            raise BadRequest("The MFA code is wrong", code="MFA_CODE_INVALID")
        users.update_fields(conn, user_id=user_id, mfa_enabled=False, mfa_secret=None, mfa_last_timestep=None)
        backup_codes.delete_all(conn, user_id=user_id)
    guesses.forget()


def regenerate_backup_codes(
    store: ConfigStore, guesses: GuessThrottle, *, user_id: str, code: str
) -> list[str]:
    with store.begin() as conn:
        user = account(conn, user_id=user_id)
        if not user["mfa_enabled"]:
            raise BadRequest("MFA is not enabled", code="MFA_NOT_ENABLED")
        guesses.count_guess()
        if not check_totp(conn, user=user, code=code):
            raise BadRequest("The MFA code is wrong", code="MFA_CODE_INVALID")
        codes = _new_backup_codes(conn, user_id=user_id)
    guesses.forget()
    return codes


def status(store: ConfigStore, *, user_id: str) -> MfaStatus:
    with store.connect() as conn:
        user = account(conn, user_id=user_id)
        remaining = len(backup_codes.list_unused(conn, user_id=user_id)) if user["mfa_enabled"] else 0
    return MfaStatus(enabled=bool(user["mfa_enabled"]), backup_codes_remaining=remaining)
