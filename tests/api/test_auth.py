"""The spec's Auth row: register, login (with and without MFA), refresh rotation, logout, revoke,
MFA management, CSRF and e-mail verification."""

from __future__ import annotations

import email
import email.policy
import re

import pytest

from tests.factories import PASSWORD, bearer, enable_mfa, login, make_user, totp_code


def register(client, **fields):
    body = {"email": "ada@example.com", "password": PASSWORD, "name": "Ada", **fields}
    return client.post("/auth/register", json=body)


def outbox_messages(settings):
    return [
        email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
        for p in sorted(settings.outbox_dir.glob("*.eml"))
    ]


def verification_token(message) -> str:
    return re.search(r"verification-token: (\S+)", message.get_content()).group(1)


# --- register -------------------------------------------------------------------------------------


def test_register_creates_owner_of_a_new_organisation(client):
    response = register(client, organizationName="Ada's Shops")
    assert response.status_code == 201
    user = response.json()
    assert user["email"] == "ada@example.com"
    assert user["role"] == "owner"
    assert user["emailVerified"] is False
    assert user["mfaEnabled"] is False
    assert "password" not in str(user).lower()


def test_register_twice_with_the_same_email_is_409(client):
    assert register(client).status_code == 201
    response = register(client, email="ADA@example.com")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "EMAIL_TAKEN"


@pytest.mark.parametrize(
    "fields",
    [{"email": "not-an-email"}, {"password": "short"}, {"name": ""}, {"unexpected": 1}],
)
def test_register_rejects_bad_bodies_with_400(client, fields):
    response = register(client, **fields)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_FAILED"


def test_register_with_malformed_json_is_400(client):
    response = client.post(
        "/auth/register", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "MALFORMED_JSON"


# --- login, refresh, logout, revoke ---------------------------------------------------------------


def test_login_answers_tokens_that_open_private_routes(client, store):
    user = make_user(store)
    tokens = login(client, user["email"])
    assert set(tokens) == {"accessToken", "refreshToken", "expiresIn", "tokenType"}
    assert tokens["expiresIn"] == 900
    me = client.get("/auth/me", headers=bearer(tokens["accessToken"]))
    assert me.status_code == 200
    assert me.json()["id"] == user["id"]


def test_login_with_wrong_password_or_unknown_account_is_401(client, store):
    user = make_user(store)
    for body in (
        {"email": user["email"], "password": "wrong password"},
        {"email": "no@example.com", "password": "x"},
    ):
        response = client.post("/auth/login", json=body)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "INVALID_CREDENTIALS"


def test_private_routes_refuse_missing_forged_and_wrong_type_tokens(client, store, settings):
    from api.auth import tokens

    user = make_user(store)
    assert client.get("/auth/me").json()["error"]["code"] == "AUTH_REQUIRED"
    forged = tokens.issue(
        "another-signing-key-" + "y" * 32, kind="access", subject=user["id"], ttl_seconds=60
    )
    assert client.get("/auth/me", headers=bearer(forged)).status_code == 401
    challenge = tokens.issue(settings.signing_key, kind="mfa_challenge", subject=user["id"], ttl_seconds=60)
    assert client.get("/auth/me", headers=bearer(challenge)).status_code == 401
    expired = tokens.issue(settings.signing_key, kind="access", subject=user["id"], ttl_seconds=-1)
    response = client.get("/auth/me", headers=bearer(expired))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "TOKEN_EXPIRED"
    for token in (forged, challenge, expired, "x.y.z", "x" * 9000):
        refused = client.get("/auth/me", headers=bearer(token))
        assert (refused.status_code, refused.headers.get("www-authenticate")) == (401, "Bearer")


def test_refresh_rotates_and_reuse_of_a_rotated_token_revokes_the_family(client, store):
    user = make_user(store)
    first = login(client, user["email"])
    second = client.post("/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert second.status_code == 200
    second = second.json()
    assert second["refreshToken"] != first["refreshToken"]

    reuse = client.post("/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert reuse.status_code == 401
    assert reuse.json()["error"]["code"] == "REFRESH_TOKEN_REUSED"

    # The thief's replay ended the whole session: the newest token is dead too.
    after = client.post("/auth/refresh", json={"refreshToken": second["refreshToken"]})
    assert after.status_code == 401
    assert after.json()["error"]["code"] == "REFRESH_TOKEN_REVOKED"


def test_refresh_of_an_unknown_or_expired_token_is_401(client, store, settings):
    from datetime import timedelta

    from api.auth.tokens import digest
    from warehouse.config_store import refresh_tokens
    from warehouse.config_store.store import utcnow

    assert client.post("/auth/refresh", json={"refreshToken": "rt_unknown"}).status_code == 401
    user = make_user(store)
    with store.begin() as conn:
        refresh_tokens.create(
            conn, user_id=user["id"], family_id="f1", token_hash=digest("rt_old"),
            expires_at=utcnow() - timedelta(seconds=1),
        )  # fmt: skip
    response = client.post("/auth/refresh", json={"refreshToken": "rt_old"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "REFRESH_TOKEN_EXPIRED"


def test_logout_ends_the_session_but_not_other_sessions(client, store):
    user = make_user(store)
    laptop = login(client, user["email"])
    phone = login(client, user["email"])
    assert client.post("/auth/logout", json={"refreshToken": laptop["refreshToken"]}).json() == {
        "success": True
    }
    assert client.post("/auth/refresh", json={"refreshToken": laptop["refreshToken"]}).status_code == 401
    assert client.post("/auth/refresh", json={"refreshToken": phone["refreshToken"]}).status_code == 200
    assert client.post("/auth/logout", json={"refreshToken": "rt_unknown"}).status_code == 401
    # The session's access token ends with it, not when its lifetime runs out.
    ended = client.get("/auth/me", headers=bearer(laptop["accessToken"]))
    assert (ended.status_code, ended.json()["error"]["code"]) == (401, "SESSION_REVOKED")
    assert ended.headers["www-authenticate"] == "Bearer"
    assert client.get("/auth/me", headers=bearer(phone["accessToken"])).status_code == 200


def test_an_access_token_outlives_refresh_rotation_but_not_a_detected_reuse(client, store):
    user = make_user(store)
    first = login(client, user["email"])
    second = client.post("/auth/refresh", json={"refreshToken": first["refreshToken"]}).json()
    for tokens in (first, second):
        assert client.get("/auth/me", headers=bearer(tokens["accessToken"])).status_code == 200
    client.post("/auth/refresh", json={"refreshToken": first["refreshToken"]})  # a replay: the family ends
    for tokens in (first, second):
        ended = client.get("/auth/me", headers=bearer(tokens["accessToken"]))
        assert ended.json()["error"]["code"] == "SESSION_REVOKED"


def test_an_access_token_without_a_session_is_refused(client, store, settings):
    from api.auth import tokens

    user = make_user(store)
    sessionless = tokens.issue(settings.signing_key, kind="access", subject=user["id"], ttl_seconds=60)
    assert client.get("/auth/me", headers=bearer(sessionless)).json()["error"]["code"] == "SESSION_REVOKED"


def test_revoke_everywhere_ends_every_session(client, store):
    user = make_user(store)
    laptop = login(client, user["email"])
    phone = login(client, user["email"])
    response = client.post(
        "/auth/revoke",
        json={"refreshToken": laptop["refreshToken"], "everywhere": True},
        headers=bearer(laptop["accessToken"]),
    )
    assert response.status_code == 200
    for tokens in (laptop, phone):
        assert client.post("/auth/refresh", json={"refreshToken": tokens["refreshToken"]}).status_code == 401
        ended = client.get("/auth/me", headers=bearer(tokens["accessToken"]))
        assert ended.json()["error"]["code"] == "SESSION_REVOKED"


def test_revoke_needs_a_token_and_the_callers_own_refresh_token(client, store):
    alice, bob = make_user(store), make_user(store)
    alice_tokens, bob_tokens = login(client, alice["email"]), login(client, bob["email"])
    assert client.post("/auth/revoke", json={"refreshToken": alice_tokens["refreshToken"]}).status_code == 401
    response = client.post(
        "/auth/revoke",
        json={"refreshToken": alice_tokens["refreshToken"]},
        headers=bearer(bob_tokens["accessToken"]),
    )
    assert response.status_code == 401
    assert (
        client.post("/auth/refresh", json={"refreshToken": alice_tokens["refreshToken"]}).status_code == 200
    )


# --- MFA ------------------------------------------------------------------------------------------


def test_mfa_setup_returns_secret_and_otpauth_uri(owner):
    setup = owner.post("/auth/mfa/setup").json()
    assert re.fullmatch(r"[A-Z2-7]{32}", setup["secret"])
    assert setup["otpauthUri"].startswith("otpauth://totp/Aisle:")
    assert f"secret={setup['secret']}" in setup["otpauthUri"]
    assert owner.get("/auth/mfa/status").json() == {"enabled": False, "backupCodesRemaining": 0}


def test_mfa_verify_checks_a_code_without_enabling(owner):
    assert owner.post("/auth/mfa/verify", json={"code": "123456"}).json()["error"]["code"] == "MFA_NOT_SET_UP"
    secret = owner.post("/auth/mfa/setup").json()["secret"]
    assert owner.post("/auth/mfa/verify", json={"code": totp_code(secret)}).json() == {"valid": True}
    assert owner.post("/auth/mfa/verify", json={"code": "000000"}).json() == {"valid": False}
    assert owner.get("/auth/mfa/status").json()["enabled"] is False


def test_mfa_codes_in_other_digits_are_wrong_codes_and_full_width_ones_are_read_as_ascii(client, owner):
    secret = owner.post("/auth/mfa/setup").json()["secret"]
    for code in ("١٢٣٤٥٦", "12345٦", "۱۲۳۴۵۶"):  # compare_digest refused these with a 500
        assert owner.post("/auth/mfa/verify", json={"code": code}).json() == {"valid": False}, code
    full_width = totp_code(secret).translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})
    assert owner.post("/auth/mfa/verify", json={"code": full_width}).json() == {"valid": True}
    secret, _ = enable_mfa(owner)
    for path in ("/auth/mfa/disable", "/auth/mfa/backup-codes/regenerate"):
        answer = owner.post(path, json={"code": "١٢٣٤٥٦"})
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, "MFA_CODE_INVALID"), path
    challenge = client.post("/auth/login", json={"email": owner.user["email"], "password": PASSWORD}).json()
    answer = client.post(
        "/auth/login/verify-mfa", json={"challengeToken": challenge["challengeToken"], "code": "١٢٣٤٥٦"}
    )
    assert (answer.status_code, answer.json()["error"]["code"]) == (401, "MFA_CODE_INVALID")


def test_mfa_verify_before_enable_leaves_the_code_for_enable(owner):
    secret = owner.post("/auth/mfa/setup").json()["secret"]
    code = totp_code(secret)
    assert owner.post("/auth/mfa/verify", json={"code": code}).json() == {"valid": True}
    assert owner.post("/auth/mfa/verify", json={"code": code}).json() == {"valid": True}
    enabled = owner.post("/auth/mfa/enable", json={"code": code})
    assert enabled.status_code == 200, enabled.text
    assert len(enabled.json()["backupCodes"]) == 10


def test_mfa_verify_once_enabled_spends_the_code_like_a_login(client, owner):
    secret, _ = enable_mfa(owner)
    code = totp_code(secret, offset_steps=1)
    assert owner.post("/auth/mfa/verify", json={"code": code}).json() == {"valid": True}
    assert owner.post("/auth/mfa/verify", json={"code": code}).json() == {"valid": False}
    challenge = client.post("/auth/login", json={"email": owner.user["email"], "password": PASSWORD})
    replay = client.post(
        "/auth/login/verify-mfa", json={"challengeToken": challenge.json()["challengeToken"], "code": code}
    )
    assert replay.status_code == 401
    assert replay.json()["error"]["code"] == "MFA_CODE_INVALID"


def test_mfa_enable_needs_a_correct_code_and_returns_ten_backup_codes(owner):
    secret = owner.post("/auth/mfa/setup").json()["secret"]
    wrong = owner.post("/auth/mfa/enable", json={"code": "000000"})
    assert wrong.status_code == 400
    assert wrong.json()["error"]["code"] == "MFA_CODE_INVALID"
    enabled = owner.post("/auth/mfa/enable", json={"code": totp_code(secret)}).json()
    assert len(enabled["backupCodes"]) == 10
    assert len(set(enabled["backupCodes"])) == 10
    assert owner.get("/auth/mfa/status").json() == {"enabled": True, "backupCodesRemaining": 10}
    assert owner.post("/auth/mfa/setup").status_code == 409


def test_login_with_mfa_answers_a_challenge_exchanged_by_verify_mfa(client, owner):
    secret, _ = enable_mfa(owner)
    challenge = client.post("/auth/login", json={"email": owner.user["email"], "password": PASSWORD})
    assert challenge.status_code == 200
    body = challenge.json()
    assert body["mfaRequired"] is True
    assert "accessToken" not in body
    # The challenge token does not open private routes.
    assert client.get("/auth/me", headers=bearer(body["challengeToken"])).status_code == 401

    wrong = client.post(
        "/auth/login/verify-mfa", json={"challengeToken": body["challengeToken"], "code": "000000"}
    )
    assert wrong.status_code == 401
    assert wrong.json()["error"]["code"] == "MFA_CODE_INVALID"

    ok = client.post(
        "/auth/login/verify-mfa",
        json={"challengeToken": body["challengeToken"], "code": totp_code(secret, offset_steps=1)},
    )
    assert ok.status_code == 200
    assert client.get("/auth/me", headers=bearer(ok.json()["accessToken"])).status_code == 200


def test_a_totp_code_works_only_once(client, owner):
    secret, _ = enable_mfa(owner)
    code = totp_code(secret, offset_steps=1)
    for expected in (200, 401):
        challenge = client.post(
            "/auth/login", json={"email": owner.user["email"], "password": PASSWORD}
        ).json()
        response = client.post(
            "/auth/login/verify-mfa", json={"challengeToken": challenge["challengeToken"], "code": code}
        )
        assert response.status_code == expected


def test_backup_codes_log_in_once_each(client, owner):
    _, backup = enable_mfa(owner)
    for expected in (200, 401):
        challenge = client.post(
            "/auth/login", json={"email": owner.user["email"], "password": PASSWORD}
        ).json()
        response = client.post(
            "/auth/login/verify-mfa", json={"challengeToken": challenge["challengeToken"], "code": backup[0]}
        )
        assert response.status_code == expected
    assert owner.get("/auth/mfa/status").json()["backupCodesRemaining"] == 9


CHALLENGE_USED = {
    "code": "MFA_CHALLENGE_USED",
    "message": "This MFA challenge was already exchanged for tokens; log in again for a new one",
    "details": None,
}


def verify_mfa(client, challenge: str, code: str):
    return client.post("/auth/login/verify-mfa", json={"challengeToken": challenge, "code": code})


def test_an_mfa_challenge_gives_tokens_once(client, owner):
    secret, backup = enable_mfa(owner)
    challenge = client.post("/auth/login", json={"email": owner.user["email"], "password": PASSWORD})
    challenge = challenge.json()["challengeToken"]
    assert verify_mfa(client, challenge, totp_code(secret, offset_steps=1)).status_code == 200

    for code in (backup[0], totp_code(secret, offset_steps=1), "000000"):
        again = verify_mfa(client, challenge, code)
        assert again.status_code == 401
        assert again.json()["error"] == CHALLENGE_USED
    # Refusing the challenge spent no backup code, and a new challenge takes it.
    assert owner.get("/auth/mfa/status").json()["backupCodesRemaining"] == 10
    fresh = client.post("/auth/login", json={"email": owner.user["email"], "password": PASSWORD})
    assert verify_mfa(client, fresh.json()["challengeToken"], backup[0]).status_code == 200


def test_concurrent_exchanges_of_one_mfa_challenge_give_one_session(client, owner):
    from concurrent.futures import ThreadPoolExecutor

    secret, backup = enable_mfa(owner)
    challenge = client.post("/auth/login", json={"email": owner.user["email"], "password": PASSWORD})
    challenge = challenge.json()["challengeToken"]
    # Five right codes (no more: a sixth guess would meet the account's MFA throttle).
    codes = [totp_code(secret, offset_steps=1), *backup[:4]]
    with ThreadPoolExecutor(len(codes)) as pool:
        answers = list(pool.map(lambda code: verify_mfa(client, challenge, code), codes))
    assert sorted(a.status_code for a in answers) == [200, 401, 401, 401, 401]
    assert all(a.json()["error"] == CHALLENGE_USED for a in answers if a.status_code == 401)
    # Only the winner's code was spent: one backup code is gone unless the TOTP code won.
    totp_won = answers[0].status_code == 200
    assert owner.get("/auth/mfa/status").json()["backupCodesRemaining"] == (10 if totp_won else 9)


def test_backup_codes_regenerate_replaces_the_old_ones(client, owner):
    secret, old = enable_mfa(owner)
    assert owner.post("/auth/mfa/backup-codes/regenerate", json={"code": "000000"}).status_code == 400
    new = owner.post("/auth/mfa/backup-codes/regenerate", json={"code": totp_code(secret, offset_steps=1)})
    assert new.status_code == 200
    new_codes = new.json()["backupCodes"]
    assert len(new_codes) == 10 and not set(new_codes) & set(old)
    challenge = client.post("/auth/login", json={"email": owner.user["email"], "password": PASSWORD}).json()
    stale = client.post(
        "/auth/login/verify-mfa", json={"challengeToken": challenge["challengeToken"], "code": old[0]}
    )
    assert stale.status_code == 401


def test_mfa_disable_needs_a_code_and_login_is_plain_again(client, owner):
    assert (
        owner.post("/auth/mfa/disable", json={"code": "123456"}).json()["error"]["code"] == "MFA_NOT_ENABLED"
    )
    _, backup = enable_mfa(owner)
    assert owner.post("/auth/mfa/disable", json={"code": "000000"}).status_code == 400
    assert owner.post("/auth/mfa/disable", json={"code": backup[3]}).status_code == 200
    assert owner.get("/auth/mfa/status").json() == {"enabled": False, "backupCodesRemaining": 0}
    assert "accessToken" in login(client, owner.user["email"])


def test_verify_mfa_refuses_a_forged_or_expired_challenge(client, owner, settings):
    from api.auth import tokens

    enable_mfa(owner)
    expired = tokens.issue(
        settings.signing_key, kind="mfa_challenge", subject=owner.user["id"], ttl_seconds=-1
    )
    response = client.post("/auth/login/verify-mfa", json={"challengeToken": expired, "code": "123456"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "TOKEN_EXPIRED"
    response = client.post("/auth/login/verify-mfa", json={"challengeToken": "abc", "code": "123456"})
    assert response.json()["error"]["code"] == "TOKEN_INVALID"


def test_mfa_routes_need_a_login(client):
    for path in ("/auth/mfa/setup", "/auth/mfa/verify", "/auth/mfa/enable", "/auth/mfa/disable",
                 "/auth/mfa/backup-codes/regenerate"):  # fmt: skip
        assert client.post(path, json={"code": "123456"}).status_code == 401
    assert client.get("/auth/mfa/status").status_code == 401


# --- CSRF and e-mail verification -----------------------------------------------------------------


def test_csrf_returns_a_token_and_sets_the_matching_cookie(client):
    response = client.get("/auth/csrf")
    assert response.status_code == 200
    token = response.json()["csrfToken"]
    assert len(token) >= 32
    assert response.cookies["aisle_csrf"] == token
    assert client.get("/auth/csrf").json()["csrfToken"] != token


def test_register_sends_a_verification_email_to_the_outbox(client, settings):
    register(client)
    [message] = outbox_messages(settings)
    assert message["To"] == "ada@example.com"
    assert message["Subject"] == "Confirm your e-mail address for Aisle"
    assert verification_token(message)


def test_verify_email_with_the_token_marks_the_address_verified(client, settings):
    register(client)
    token = verification_token(outbox_messages(settings)[0])
    session_tokens = login(client, "ada@example.com")
    status = client.get("/auth/verification-status", headers=bearer(session_tokens["accessToken"]))
    assert status.json() == {"email": "ada@example.com", "emailVerified": False}
    response = client.post("/auth/verify-email", json={"token": token})
    assert response.status_code == 200
    assert response.json() == {"email": "ada@example.com", "emailVerified": True}
    status = client.get("/auth/verification-status", headers=bearer(session_tokens["accessToken"]))
    assert status.json()["emailVerified"] is True


def test_verify_email_refuses_expired_tampered_and_foreign_tokens(client, settings, store):
    from api.auth import tokens

    register(client)
    user_id = client.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    assert user_id.status_code == 200
    token = verification_token(outbox_messages(settings)[0])
    for bad in (token[:-2] + ("AA" if not token.endswith("AA") else "BB"), "garbage"):
        response = client.post("/auth/verify-email", json={"token": bad})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "TOKEN_INVALID"
    from warehouse.config_store import users

    with store.connect() as conn:
        user = users.get_by_email(conn, email="ada@example.com")
    expired = tokens.issue(
        settings.signing_key, kind="email_verify", subject=user["id"], ttl_seconds=-1, email=user["email"]
    )
    response = client.post("/auth/verify-email", json={"token": expired})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "TOKEN_EXPIRED"
    foreign = tokens.issue(
        "other-signing-key-" + "z" * 32,
        kind="email_verify",
        subject=user["id"],
        ttl_seconds=60,
        email=user["email"],
    )
    assert client.post("/auth/verify-email", json={"token": foreign}).status_code == 400


def test_resend_verification_sends_again_only_to_unverified_accounts(client, settings, store):
    register(client)
    assert client.post("/auth/resend-verification", json={"email": "ada@example.com"}).status_code == 202
    assert len(outbox_messages(settings)) == 2
    # Unknown and already verified addresses answer the same, so accounts cannot be discovered.
    verified = make_user(store)
    assert client.post("/auth/resend-verification", json={"email": "nobody@example.com"}).status_code == 202
    assert client.post("/auth/resend-verification", json={"email": verified["email"]}).status_code == 202
    assert len(outbox_messages(settings)) == 2
    assert client.post("/auth/resend-verification", json={"email": "bad"}).status_code == 400


def test_verification_status_needs_a_login(client):
    assert client.get("/auth/verification-status").status_code == 401
