"""Throttles over real HTTP, each run twice: hot state in process, and in a real redis-server."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from aisle.settings import Settings
from api.app import create_app
from tests.factories import PASSWORD, Session, enable_mfa, make_user, make_verified_site, totp_code
from tests.servers import LiveServer, free_port
from warehouse.config_store import users

# Throttles over real HTTP, some against a real redis-server.
pytestmark = pytest.mark.slow

ORIGIN = {"Origin": "https://shop.example.com"}
SIGNING_KEY = "test-signing-key-" + "x" * 32


@pytest.fixture(params=["in-process", pytest.param("redis", marks=pytest.mark.redis)])
def redis_url(request) -> str | None:
    if request.param == "in-process":
        return None
    server = request.getfixturevalue("redis_server")
    redis.Redis.from_url(server.url).flushdb()  # counters of earlier tests must not leak in
    return server.url


@pytest.fixture
def limits() -> dict[str, int]:
    """Settings overrides; tests parametrise this to shrink a limit."""
    return {}


@pytest.fixture
def client(live_client: httpx.Client) -> httpx.Client:
    """Over real HTTP: the address the throttles count is the socket's."""
    return live_client


@pytest.fixture
def settings(tmp_path: Path, redis_url: str | None, limits: dict[str, int]) -> Settings:
    return Settings(data_dir=tmp_path / "data", jwt_secret=SIGNING_KEY, redis_url=redis_url, **limits)


def config(client: httpx.Client, site_key: str) -> httpx.Response:
    return client.get(f"/public/sites/{site_key}/tracking-config", headers=ORIGIN)


def login(client: httpx.Client, email: str, password: str) -> httpx.Response:
    return client.post("/auth/login", json={"email": email, "password": password})


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


@pytest.fixture
def other_app_client(
    tmp_path: Path, redis_url: str | None, limits: dict[str, int]
) -> Iterator[tuple[httpx.Client, object]]:
    """A second deployment: its own data dir and database, the same Redis URL (when there is one)."""
    other_settings = Settings(
        data_dir=tmp_path / "other-data", jwt_secret=SIGNING_KEY, redis_url=redis_url, **limits
    )
    other = create_app(other_settings)
    with LiveServer(other) as live, httpx.Client(base_url=f"{live.url}/api/v1", timeout=30) as http:
        yield http, other.state.store


# --- public read throttle -----------------------------------------------------------------------------


def test_public_read_sends_rate_limit_headers_counting_down(client, owner, store):
    site = make_verified_site(owner, store)
    seen = []
    for _ in range(3):
        response = config(client, site["siteKey"])
        assert response.status_code == 200, response.text
        assert "Retry-After" not in response.headers
        seen.append((response.headers["X-RateLimit-Limit"], response.headers["X-RateLimit-Remaining"]))
        assert 1 <= int(response.headers["X-RateLimit-Reset"]) <= 60
    assert seen == [("300", "299"), ("300", "298"), ("300", "297")]


@pytest.mark.parametrize("limits", [{"public_read_limit_per_minute": 3}])
def test_public_read_over_the_limit_is_429_with_retry_after(client, owner, store):
    site = make_verified_site(owner, store)
    remaining = [config(client, site["siteKey"]).headers["X-RateLimit-Remaining"] for _ in range(3)]
    assert remaining == ["2", "1", "0"]

    response = config(client, site["siteKey"])
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "RATE_LIMITED"
    assert error["details"] == {"limit": 3, "windowSeconds": 60}
    assert response.headers["X-RateLimit-Limit"] == "3"
    assert response.headers["X-RateLimit-Remaining"] == "0"
    retry_after = int(response.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    assert int(response.headers["X-RateLimit-Reset"]) == retry_after
    assert config(client, site["siteKey"]).status_code == 429  # stays refused inside the window

    # The counter is per site: another site of the same caller is untouched.
    other = make_verified_site(owner, store, name="Second", domain="second.example.com")
    fresh = client.get(
        f"/public/sites/{other['siteKey']}/tracking-config", headers={"Origin": "https://second.example.com"}
    )
    assert fresh.status_code == 200
    assert fresh.headers["X-RateLimit-Remaining"] == "2"


# --- login throttles -------------------------------------------------------------------------------------


def test_failed_logins_lock_the_account_even_for_the_right_password(client, store, settings):
    assert settings.login_max_failures_per_account == 5
    user = make_user(store)
    bystander = make_user(store)
    for _ in range(5):
        response = login(client, user["email"], "wrong password")
        assert response.status_code == 401
        assert error_code(response) == "INVALID_CREDENTIALS"

    response = login(client, user["email"], PASSWORD)
    assert response.status_code == 429
    assert response.json()["error"] == {
        "code": "LOGIN_THROTTLED",
        "message": "Too many failed logins for this account; try again later",
        "details": None,
    }
    assert 1 <= int(response.headers["Retry-After"]) <= 900
    assert error_code(login(client, user["email"].upper(), PASSWORD)) == "LOGIN_THROTTLED"
    assert login(client, bystander["email"], PASSWORD).status_code == 200


def test_a_successful_login_forgets_earlier_failures(client, store):
    user = make_user(store)
    for _ in range(4):
        assert login(client, user["email"], "wrong password").status_code == 401
    assert login(client, user["email"], PASSWORD).status_code == 200
    for _ in range(4):
        assert login(client, user["email"], "wrong password").status_code == 401
    assert login(client, user["email"], PASSWORD).status_code == 200


@pytest.mark.parametrize("limits", [{"login_max_attempts_per_address": 3}])
def test_login_attempts_per_address_are_limited(client, store):
    first, second = make_user(store), make_user(store)
    assert login(client, first["email"], PASSWORD).status_code == 200
    assert login(client, second["email"], "wrong password").status_code == 401
    assert login(client, "nobody@example.com", PASSWORD).status_code == 401

    response = login(client, second["email"], PASSWORD)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "LOGIN_THROTTLED"
    assert response.json()["error"]["message"] == "Too many login attempts from this address; try again later"
    assert 1 <= int(response.headers["Retry-After"]) <= 900


@pytest.mark.parametrize("limits", [{"registrations_per_address_per_hour": 2}])
def test_registrations_per_address_are_limited(client, store):
    def register(email: str) -> httpx.Response:
        return client.post("/auth/register", json={"email": email, "password": PASSWORD, "name": "Ada"})

    assert register("one@example.com").status_code == 201
    assert register("one@example.com").status_code == 409  # a taken address counts too
    refused = register("three@example.com")
    assert (refused.status_code, error_code(refused)) == (429, "REGISTER_THROTTLED")
    assert 1 <= int(refused.headers["Retry-After"]) <= 3600
    with store.connect() as conn:
        assert users.get_by_email(conn, email="three@example.com") is None


def test_the_default_lets_an_office_register_its_team(client):
    for n in range(20):
        answer = client.post(
            "/auth/register", json={"email": f"u{n}@example.com", "password": PASSWORD, "name": "A"}
        )
        assert answer.status_code == 201, answer.text


@pytest.mark.parametrize("redis_url", [None])  # the headers do not depend on the backend
def test_login_429_carries_the_rate_limit_headers(client, store):
    user = make_user(store)
    for _ in range(5):
        login(client, user["email"], "wrong password")
    response = login(client, user["email"], PASSWORD)
    assert response.status_code == 429
    assert response.headers["X-RateLimit-Limit"] == "5"
    assert response.headers["X-RateLimit-Remaining"] == "0"
    assert response.headers["X-RateLimit-Reset"] == response.headers["Retry-After"]


@pytest.mark.parametrize("redis_url", [None])
def test_every_login_answer_carries_the_address_rate_limit_headers(client, store):
    user = make_user(store)
    failed = login(client, user["email"], "wrong password")
    assert failed.status_code == 401
    assert failed.headers["X-RateLimit-Limit"] == "30"
    assert failed.headers["X-RateLimit-Remaining"] == "29"
    ok = login(client, user["email"], PASSWORD)
    assert ok.status_code == 200
    assert ok.headers["X-RateLimit-Remaining"] == "28"


# --- MFA throttles ---------------------------------------------------------------------------------------

MFA_CODE_INVALID = {"code": "MFA_CODE_INVALID", "message": "The MFA code is wrong", "details": None}
MFA_THROTTLED = {
    "code": "MFA_THROTTLED",
    "message": "Too many wrong MFA codes for this account; try again later",
    "details": {"limit": 5, "windowSeconds": 900},
}


def mfa_challenge(client: httpx.Client, email: str) -> str:
    response = login(client, email, PASSWORD)
    assert response.status_code == 200, response.text
    return response.json()["challengeToken"]


def verify_mfa(client: httpx.Client, challenge: str, code: str) -> httpx.Response:
    return client.post("/auth/login/verify-mfa", json={"challengeToken": challenge, "code": code})


def assert_mfa_throttled(response: httpx.Response) -> None:
    assert response.status_code == 429
    assert response.json()["error"] == MFA_THROTTLED
    assert response.headers["X-RateLimit-Limit"] == "5"
    assert response.headers["X-RateLimit-Remaining"] == "0"
    assert 1 <= int(response.headers["Retry-After"]) <= 900
    assert response.headers["X-RateLimit-Reset"] == response.headers["Retry-After"]


def test_wrong_mfa_codes_at_login_lock_the_account_even_for_the_right_code(client, owner, store):
    secret, backup = enable_mfa(owner)
    challenge = mfa_challenge(client, owner.user["email"])
    for _ in range(5):
        response = verify_mfa(client, challenge, "000000")
        assert response.status_code == 401
        assert error_code(response) == "MFA_CODE_INVALID"

    # Neither the same challenge nor a fresh one buys more guesses: the count is the account's.
    assert_mfa_throttled(verify_mfa(client, challenge, totp_code(secret, offset_steps=1)))
    assert_mfa_throttled(verify_mfa(client, mfa_challenge(client, owner.user["email"]), backup[0]))

    # Another account with MFA is untouched.
    bystander = Session(client, make_user(store))
    bystander_secret, _ = enable_mfa(bystander)
    ok = verify_mfa(
        client, mfa_challenge(client, bystander.user["email"]), totp_code(bystander_secret, offset_steps=1)
    )
    assert ok.status_code == 200


def test_a_right_mfa_code_forgets_earlier_wrong_ones(client, owner):
    _, backup = enable_mfa(owner)
    for right in backup[:2]:
        challenge = mfa_challenge(client, owner.user["email"])
        for _ in range(4):
            assert verify_mfa(client, challenge, "000000").status_code == 401
        assert verify_mfa(client, challenge, right).status_code == 200


def test_logged_in_mfa_routes_count_wrong_codes_against_the_account(client, owner):
    """A stolen access token buys no more guesses than the login does: the routes share one count."""
    secret, backup = enable_mfa(owner)
    right = owner.post("/auth/mfa/verify", json={"code": totp_code(secret, offset_steps=1)})
    assert right.json() == {"valid": True}
    assert (right.headers["X-RateLimit-Limit"], right.headers["X-RateLimit-Remaining"]) == ("5", "5")

    wrong = [
        ("/auth/mfa/verify", 200),
        ("/auth/mfa/disable", 400),
        ("/auth/mfa/backup-codes/regenerate", 400),
        ("/auth/mfa/verify", 200),
        ("/auth/mfa/disable", 400),
    ]
    for remaining, (path, status) in zip(("4", "3", "2", "1", "0"), wrong, strict=True):
        response = owner.post(path, json={"code": "000000"})
        assert response.status_code == status, path
        assert response.json() == ({"valid": False} if status == 200 else {"error": MFA_CODE_INVALID})
        assert response.headers["X-RateLimit-Limit"] == "5"
        assert response.headers["X-RateLimit-Remaining"] == remaining
        assert 1 <= int(response.headers["X-RateLimit-Reset"]) <= 900

    for path, code in [
        ("/auth/mfa/verify", totp_code(secret, offset_steps=1)),
        ("/auth/mfa/disable", backup[0]),
        ("/auth/mfa/backup-codes/regenerate", totp_code(secret, offset_steps=1)),
    ]:
        assert_mfa_throttled(owner.post(path, json={"code": code}))
    # The login's MFA step is refused too, and MFA is still on with every backup code.
    assert_mfa_throttled(verify_mfa(client, mfa_challenge(client, owner.user["email"]), backup[1]))
    assert owner.get("/auth/mfa/status").json() == {"enabled": True, "backupCodesRemaining": 10}


def test_mfa_enable_counts_wrong_codes_against_the_account(owner):
    secret = owner.post("/auth/mfa/setup").json()["secret"]
    for _ in range(5):
        response = owner.post("/auth/mfa/enable", json={"code": "000000"})
        assert response.status_code == 400
        assert error_code(response) == "MFA_CODE_INVALID"
    assert_mfa_throttled(owner.post("/auth/mfa/enable", json={"code": totp_code(secret)}))
    assert owner.get("/auth/mfa/status").json() == {"enabled": False, "backupCodesRemaining": 0}


# --- two deployments ---------------------------------------------------------------------------------------


def test_two_app_instances_share_the_login_counter_only_through_redis(
    client, store, other_app_client, redis_url
):
    other_client, other_store = other_app_client
    email = "shared@example.com"
    make_user(store, email=email)
    make_user(other_store, email=email)  # the same account in each deployment's own database

    for _ in range(3):
        assert login(client, email, "wrong password").status_code == 401
    for _ in range(2):
        assert login(other_client, email, "wrong password").status_code == 401

    response = login(other_client, email, PASSWORD)
    if redis_url:
        assert response.status_code == 429  # 3 + 2 failures counted together
        assert error_code(response) == "LOGIN_THROTTLED"
        assert error_code(login(client, email, PASSWORD)) == "LOGIN_THROTTLED"
    else:
        assert response.status_code == 200  # each process counted alone: 3 and 2, both under 5
        assert login(client, email, PASSWORD).status_code == 200


@pytest.mark.parametrize("limits", [{"public_read_limit_per_minute": 2}])
def test_two_app_instances_on_redis_share_public_read_counters(
    client, owner, store, other_app_client, redis_url
):
    """The counter is keyed by site id and address, so the same site served by two instances."""
    from warehouse.config_store import sites

    other_client, other_store = other_app_client
    site = make_verified_site(owner, store)
    # Mirror the site row into the second deployment's database: same id, same key.
    with store.connect() as conn:
        row = sites.get(conn, site_id=site["id"])
    with other_store.begin() as conn:
        from warehouse.config_store import organizations, tables

        org = organizations.create(conn, name="Mirror")
        conn.execute(tables.sites.insert().values(**{**row, "organization_id": org["id"]}))

    assert config(client, site["siteKey"]).headers["X-RateLimit-Remaining"] == "1"
    second = config(other_client, site["siteKey"])
    assert second.status_code == 200
    assert second.headers["X-RateLimit-Remaining"] == ("0" if redis_url else "1")
    third = config(other_client, site["siteKey"])
    assert third.status_code == (429 if redis_url else 200)


# --- health ------------------------------------------------------------------------------------------------


def test_health_reports_redis_only_when_configured(client, redis_url):
    response = client.get("/health")
    assert response.status_code == 200
    checks = response.json()["checks"]
    if redis_url:
        assert checks["redis"] == {"ok": True}
    else:
        assert "redis" not in checks


def test_health_is_503_when_redis_is_unreachable(tmp_path):
    closed = f"redis://127.0.0.1:{free_port()}/0"
    app = create_app(Settings(data_dir=tmp_path / "data", jwt_secret=SIGNING_KEY, redis_url=closed))
    with LiveServer(app) as live:
        response = httpx.get(f"{live.url}/api/v1/health", timeout=30)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["redis"]["ok"] is False
    assert "ConnectionError" in body["checks"]["redis"]["error"]
    assert body["checks"]["configStore"]["ok"] is True


def test_health_answers_within_its_deadline_when_redis_accepts_but_never_answers(tmp_path):
    """A stalled Redis (SIGSTOP, a full network buffer) accepts connections and says nothing: a
    black-box check's probe waited 12 s for the 503."""
    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts connections; nobody answers
    try:
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        app = create_app(Settings(data_dir=tmp_path / "data", jwt_secret=SIGNING_KEY, redis_url=url))
        with LiveServer(app) as live:
            started = time.monotonic()
            response = httpx.get(f"{live.url}/api/v1/health", timeout=30)
            waited = time.monotonic() - started
    finally:
        silent.close()
    assert response.status_code == 503
    assert response.json()["checks"]["redis"] == {"ok": False, "error": "no answer within 2 s"}
    assert response.json()["checks"]["configStore"]["ok"] is True
    assert waited < 4
