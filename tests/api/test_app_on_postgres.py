"""The whole service with its config store on PostgreSQL, over real loopback HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest
from alembic.script import ScriptDirectory

from aisle.settings import Settings
from api.app import create_app
from tests.factories import make_store_site
from tests.servers import LiveServer, PostgresServer
from warehouse.config_store import site_cache, sites
from warehouse.config_store.store import MIGRATIONS_DIR

pytestmark = pytest.mark.postgres

PASSWORD = "correct horse battery"


@pytest.fixture
def pg_settings(tmp_path: Path, postgres_url: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data", database_url=postgres_url, jwt_secret="pg-signing-key-" + "z" * 32
    )


@pytest.fixture
def pg_app(pg_settings: Settings):
    return create_app(pg_settings)


@pytest.fixture
def pg_client(pg_app) -> Iterator[httpx.Client]:
    with LiveServer(pg_app) as live, httpx.Client(base_url=f"{live.url}/api/v1", timeout=30) as http:
        yield http


def register_and_login(client: httpx.Client, email: str = "grace@example.com") -> dict:
    response = client.post(
        "/auth/register",
        json={"email": email, "password": PASSWORD, "name": "Grace", "organizationName": "Hopper Goods"},
    )
    assert response.status_code == 201, response.text
    login = client.post("/auth/login", json={"email": email.upper(), "password": PASSWORD})
    assert login.status_code == 200, login.text
    return {"user": response.json(), "tokens": login.json()}


def test_the_app_runs_its_config_store_on_postgresql(pg_app, pg_client, pg_settings):
    assert pg_app.state.store.dialect.name == "postgresql"
    response = pg_client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    assert body["checks"]["configStore"] == {"ok": True, "detail": f"schema {head}"}
    assert body["checks"]["dataDir"]["ok"] is True
    # No SQLite file was created beside it.
    assert not (pg_settings.data_dir / "aisle.db").exists()
    with psycopg.connect(pg_settings.database_url) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]


def test_register_login_and_create_a_site_on_postgresql(pg_client, pg_settings):
    session = register_and_login(pg_client)
    user = session["user"]
    assert user["email"] == "grace@example.com"
    assert user["role"] == "owner"
    headers = {"Authorization": f"Bearer {session['tokens']['accessToken']}"}

    me = pg_client.get("/auth/me", headers=headers)
    assert me.status_code == 200
    assert me.json()["id"] == user["id"]

    created = pg_client.post(
        "/sites",
        json={"name": "Hopper Shop", "domain": "https://Shop.Hopper.example/", "currency": "gbp",
              "timezone": "Europe/London"},
        headers=headers,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    site = created.json()
    assert {
        k: site[k] for k in ("name", "domain", "currency", "timezone", "isVerified", "organizationId")
    } == {
        "name": "Hopper Shop",
        "domain": "shop.hopper.example",
        "currency": "GBP",
        "timezone": "Europe/London",
        "isVerified": False,
        "organizationId": user["organizationId"],
    }
    listed = pg_client.get("/sites", headers=headers)
    assert listed.status_code == 200
    assert [s["id"] for s in listed.json()] == [site["id"]]
    assert pg_client.get(f"/sites/{site['id']}", headers=headers).json()["siteKey"] == site["siteKey"]

    # The rows really live in PostgreSQL, read back by an independent client.
    with psycopg.connect(pg_settings.database_url) as conn:
        rows = conn.execute(
            "SELECT s.name, s.domain, s.site_key, u.email FROM sites s "
            "JOIN users u ON u.organization_id = s.organization_id"
        ).fetchall()
        actions = [r[0] for r in conn.execute("SELECT action FROM activity_logs ORDER BY created_at")]
    assert rows == [("Hopper Shop", "shop.hopper.example", site["siteKey"], "grace@example.com")]
    assert actions == ["user.registered", "site.created"]


def test_refresh_rotation_and_reuse_detection_on_postgresql(pg_client):
    first = register_and_login(pg_client)["tokens"]
    second = pg_client.post("/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert second.status_code == 200, second.text
    second = second.json()
    assert second["refreshToken"] != first["refreshToken"]
    assert (
        pg_client.get("/auth/me", headers={"Authorization": f"Bearer {second['accessToken']}"}).status_code
        == 200
    )

    reuse = pg_client.post("/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert reuse.status_code == 401
    assert reuse.json()["error"]["code"] == "REFRESH_TOKEN_REUSED"
    after = pg_client.post("/auth/refresh", json={"refreshToken": second["refreshToken"]})
    assert after.status_code == 401
    assert after.json()["error"]["code"] == "REFRESH_TOKEN_REVOKED"


def test_duplicate_registration_is_409_on_postgresql(pg_client):
    register_and_login(pg_client, "dup@example.com")
    again = pg_client.post(
        "/auth/register", json={"email": "DUP@example.com", "password": PASSWORD, "name": "Other"}
    )
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "EMAIL_TAKEN"


# --- a PostgreSQL of the test's own, to stop or stall (the shared one serves every other test) --------


@pytest.fixture
def own_database() -> Iterator[PostgresServer]:
    database = PostgresServer()
    yield database
    database.stop()


@pytest.fixture
def own_app(tmp_path: Path, own_database: PostgresServer):
    return create_app(Settings(data_dir=tmp_path / "data", database_url=own_database.create_database("aisle"),
                               jwt_secret="pg-signing-key-" + "z" * 32))  # fmt: skip


@pytest.fixture
def own_client(own_app) -> Iterator[httpx.Client]:
    with LiveServer(own_app) as live, httpx.Client(base_url=f"{live.url}/api/v1", timeout=30) as http:
        yield http


def test_a_config_store_that_stops_answering_is_a_503_to_retry_not_a_500(own_database, own_client):
    """Found by a black-box check: with PostgreSQL down, login, the events batch and analytics
    answered 500 (a Redis outage was already a 503)."""
    http = own_client
    token = register_and_login(http)["tokens"]["accessToken"]
    own_database.pause()
    answers = [
        http.post("/auth/login", json={"email": "grace@example.com", "password": PASSWORD}),
        http.post("/public/sites/sk_unknown/events/batch", json={"events": []},
                  headers={"Origin": "http://shop.example"}),
        http.get("/sites", headers={"Authorization": f"Bearer {token}"}),
    ]  # fmt: skip
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"]["code"] == "CONFIG_STORE_UNAVAILABLE"
        assert answer.headers["retry-after"] == "1"
    own_database.resume()
    logins = [http.post("/auth/login", json={"email": "grace@example.com", "password": PASSWORD})
              for _ in range(3)]  # fmt: skip
    assert logins[-1].status_code == 200, [r.text for r in logins]


def test_a_config_store_that_hangs_holds_one_request_not_the_server(own_database, own_client):
    """Found by a black-box check: with PostgreSQL stalled, one events batch held the server's event
    loop, and `/health` did not answer either."""
    http = own_client
    own_database.stall()
    try:
        with ThreadPoolExecutor(2) as pool:
            batch = pool.submit(http.post, "/public/sites/sk_unknown/events/batch", json={"events": []},
                                headers={"Origin": "http://shop.example"})  # fmt: skip
            time.sleep(0.5)  # the batch waits on the store
            started = time.monotonic()
            health = http.get("/health")
            health_seconds = time.monotonic() - started
            refused = batch.result()
        # the store is known to be away now: the next call fails at once, not after a deadline
        started = time.monotonic()
        again = http.post("/public/sites/sk_other/events/batch", json={"events": []},
                          headers={"Origin": "http://shop.example"})  # fmt: skip
        again_seconds = time.monotonic() - started
    finally:
        own_database.unstall()
    assert (health.status_code, health.json()["checks"]["configStore"]["ok"]) == (503, False)
    assert health_seconds < 4
    assert (refused.status_code, refused.json()["error"]["code"]) == (503, "CONFIG_STORE_UNAVAILABLE")
    assert refused.headers["retry-after"] == "1"
    assert (again.status_code, again.json()["error"]["code"]) == (503, "CONFIG_STORE_UNAVAILABLE")
    assert again_seconds < 2


def test_while_the_config_store_is_away_a_site_seen_minutes_ago_keeps_storing_events(
    own_database, own_app, own_client
):
    with own_app.state.store.begin() as conn:
        site = make_store_site(conn)
        sites.update_fields(conn, site_id=site["id"], is_verified=True)
    http, url = own_client, f"/public/sites/{site['site_key']}/events/batch"
    origin = {"Origin": "https://shop.example.com"}
    event = lambda n: {"name": "page_view", "eventId": f"e-{n}", "visitorId": "v", "sessionId": "s"}  # noqa: E731
    assert http.post(url, json={"events": [event(1)]}, headers=origin).status_code == 200
    own_database.pause()
    try:
        time.sleep(site_cache.TTL_SECONDS + 0.2)  # the cached entry is past its time to live
        kept = http.post(url, json={"events": [event(2)]}, headers=origin)
        unknown = http.post("/public/sites/sk_unknown/events/batch", json={"events": []}, headers=origin)
    finally:
        own_database.resume()
    own_app.state.ingest.flush()
    stored = own_app.state.engine.cursor().execute("SELECT event_id FROM events ORDER BY 1").fetchall()
    assert kept.status_code == 200, kept.text
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (503, "CONFIG_STORE_UNAVAILABLE")
    assert stored == [("e-1",), ("e-2",)]
