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
from tests.servers import LiveServer, PostgresServer, RedisServer
from warehouse.engine import Engine

# Argon2 at its default cost is slow on purpose; tests keep the algorithm and lower nothing else.
os.environ.setdefault("AISLE_LOG_JSON", "true")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # No batch worker process per app: the events route's in-process path, the one every worker
    # falls back to. tests/api/test_ingest_routes.py runs the route through a worker.
    return Settings(
        data_dir=tmp_path / "data", jwt_secret="test-signing-key-" + "x" * 32, event_batch_workers=0
    )


@pytest.fixture
def app(settings: Settings):
    return create_app(settings)


@pytest.fixture
def store(app):
    return app.state.store


@pytest.fixture
def server(app) -> Iterator[LiveServer]:
    with LiveServer(app) as live:
        yield live


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        yield http


@pytest.fixture
def owner(client: httpx.Client, store) -> Session:
    return Session(client, make_user(store))


@pytest.fixture
def outsider(client: httpx.Client, store) -> Session:
    """A user of a second organisation."""
    return Session(client, make_user(store))


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
