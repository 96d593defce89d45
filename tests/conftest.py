from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from aisle.settings import Settings
from api.app import create_app
from ingest.service import Ingest
from tests.factories import Session, make_user
from tests.servers import LiveServer, PostgresServer, RedisServer, in_process_client
from warehouse.engine import Engine

os.environ.setdefault("AISLE_LOG_JSON", "true")


SIGNING_KEY = "test-signing-key-" + "x" * 32

# Fixtures that start a real server or process: a test using one is marked `slow` (see below).
REAL_SERVER_FIXTURES = frozenset(
    {
        "server",
        "live_client",
        "redis_server",
        "durable_redis_server",
        "redis_log_url",
        "postgres_server",
        "postgres_url",
    }
)


def app_settings(data_dir: Path, **fields) -> Settings:
    # No batch worker process per app: the events route's in-process path, the one every worker
    # falls back to. tests/api/test_ingest_routes.py runs the route through a worker.
    return Settings(data_dir=data_dir, jwt_secret=SIGNING_KEY, event_batch_workers=0, **fields)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`slow` on every test that needs a real server or process, by the fixtures or markers it uses
    (`scripts/test.sh --fast` leaves them out); tests slow for other reasons say so themselves."""
    for item in items:
        needs_servers = REAL_SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if needs_servers or item.get_closest_marker("postgres") or item.get_closest_marker("redis"):
            item.add_marker(pytest.mark.slow)


# --- the app ------------------------------------------------------------------------------------------
# A test gets an app of its own (fresh data dir, config store and lake) and talks to it in process
# (`client`: httpx over ASGI, no socket). A module marked `shared_app` gets one app for all its tests
# instead, which saves the app's boot (migrations, the events flusher process) per test; its tests must
# not depend on a fresh data dir (each brings its own organisation and sites through `owner`/`outsider`,
# which makes that easy) nor change the app's settings or state. A test that uses `server` or
# `live_client` talks to a real uvicorn server on loopback, and so does its `client`, with an app of
# its own in any module.


def _shared(request: pytest.FixtureRequest) -> bool:
    """A test of a `shared_app` module uses the module's app, unless it needs a real server."""
    return request.node.get_closest_marker("shared_app") is not None and not _over_loopback(request)


def _over_loopback(request: pytest.FixtureRequest) -> bool:
    return "server" in request.fixturenames


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory) -> Settings:
    return app_settings(tmp_path_factory.mktemp("app") / "data")


@pytest.fixture(scope="module")
def module_app(module_settings: Settings):
    return create_app(module_settings)


@pytest.fixture(scope="module")
def module_client(module_app) -> Iterator[httpx.Client]:
    with in_process_client(module_app) as http:
        yield http


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if _shared(request):
        return request.getfixturevalue("module_settings")
    return app_settings(tmp_path / "data")


@pytest.fixture
def app(request: pytest.FixtureRequest, settings: Settings):
    if _shared(request):
        return request.getfixturevalue("module_app")
    return create_app(settings)


@pytest.fixture
def store(app):
    return app.state.store


@pytest.fixture
def server(app) -> Iterator[LiveServer]:
    """The app over real HTTP (uvicorn on a loopback port): for what a socket is the point of."""
    with LiveServer(app) as live:
        yield live


@pytest.fixture
def live_client(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        yield http


@pytest.fixture
def client(request: pytest.FixtureRequest, app) -> Iterator[httpx.Client]:
    """The API (base URL `/api/v1`) in process, or over loopback when the test uses the real server."""
    if _over_loopback(request):
        yield request.getfixturevalue("live_client")
    elif _shared(request):
        shared = request.getfixturevalue("module_client")
        shared.cookies.clear()  # what one test was given (the CSRF cookie) is not the next one's
        yield shared
    else:
        with in_process_client(app) as http:
            yield http


@pytest.fixture
def owner(client: httpx.Client, app) -> Session:
    return Session.signed_in(client, app, make_user(app.state.store))


@pytest.fixture
def outsider(client: httpx.Client, app) -> Session:
    """A user of a second organisation."""
    return Session.signed_in(client, app, make_user(app.state.store))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def durable_redis_server() -> Iterator[RedisServer]:
    server = RedisServer(durable=True)
    yield server
    server.stop()


@pytest.fixture
def redis_log_url(durable_redis_server: RedisServer) -> str:
    """A durable Redis, emptied for the test (the Redis log's streams have fixed names)."""
    redis.Redis.from_url(durable_redis_server.url).flushdb()
    return durable_redis_server.url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer, request) -> str:
    readable = "".join(ch if ch.isalnum() else "_" for ch in request.node.name.lower())[:40]
    return postgres_server.create_database(f"t_{readable}_{uuid.uuid4().hex[:16]}")


@pytest.fixture
def lake(tmp_path):
    """An ingest service (flushed by hand) and an engine over the same fresh lake, without HTTP."""
    ingest = Ingest(data_dir=tmp_path / "lake-data", flush_interval_seconds=3600)
    engine = Engine(ingest.lake)
    yield ingest, engine
    engine.close()
    ingest.stop()
