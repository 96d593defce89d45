"""The processes of an install on a Redis log: two `aisle serve` and the `aisle flush` beside them
killed with `kill -9` in the middle of a load (a new `aisle flush` stores every acknowledged event
exactly once), one `aisle flush` per data directory, and `aisle import` beside them."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import duckdb
import httpx
import pytest
import redis

from tests.ingest.test_kill9 import AISLE, Load, assert_stored_exactly_once, start_server, stored_event_ids
from tests.kill9_support import prepare_site
from tests.servers import free_port

pytestmark = pytest.mark.redis


def start_flusher(data_dir: Path, redis_url: str, database_url: str | None = None) -> subprocess.Popen:
    """`aisle flush`; what it writes to stderr is in ``flusher_errors(data_dir)``."""
    env = {**os.environ, "AISLE_DATA_DIR": str(data_dir), "AISLE_REDIS_URL": redis_url,
           "AISLE_DURABLE_LOG": "redis", **({"AISLE_DATABASE_URL": database_url} if database_url else {})}  # fmt: skip
    with open(data_dir.parent / "flush.stderr", "ab") as errors:
        return subprocess.Popen([AISLE, "flush"], env=env, stdout=subprocess.DEVNULL, stderr=errors)


def flusher_errors(data_dir: Path) -> str:
    return (data_dir.parent / "flush.stderr").read_text()


def test_accepted_events_reach_the_lake_within_two_seconds(tmp_path, redis_log_url):
    data_dir = tmp_path / "data"
    site_key = prepare_site(data_dir)
    port = free_port()
    processes = [start_server(data_dir, port, redis_url=redis_log_url, durable_log="redis"),
                 start_flusher(data_dir, redis_log_url)]  # fmt: skip
    try:
        wait_until_locked(data_dir / "ingest.lock")  # the flusher is up
        events = [
            {"name": "page_view", "eventId": f"e-{n}", "visitorId": "v-1", "sessionId": "s-1"}
            for n in range(50)
        ]
        response = httpx.post(f"http://127.0.0.1:{port}/api/v1/public/sites/{site_key}/events/batch",
                              json={"events": events}, headers={"Origin": "https://shop.example.com"})  # fmt: skip
        assert response.status_code == 200
        accepted = time.monotonic()
        while len(stored_event_ids(data_dir)) < 50 and time.monotonic() - accepted < 2:
            time.sleep(0.05)
        assert sorted(stored_event_ids(data_dir)) == sorted(e["eventId"] for e in events)
        assert time.monotonic() - accepted < 2
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)


def test_acknowledged_events_survive_kill_9_of_every_process_exactly_once(
    tmp_path, redis_log_url, postgres_url
):
    """As a scaled-out install runs: the config store on PostgreSQL, hot state and log on Redis."""
    data_dir = tmp_path / "data"
    site_key = prepare_site(data_dir, database_url=postgres_url)
    ports = [free_port(), free_port()]
    shared = {"redis_url": redis_log_url, "durable_log": "redis", "database_url": postgres_url}
    processes = [start_server(data_dir, port, **shared) for port in ports]
    processes.append(start_flusher(data_dir, redis_log_url, database_url=postgres_url))
    load = Load(site_key, ports)
    try:
        load.start()
        load.wait_for(8000)
        for process in processes:
            process.send_signal(signal.SIGKILL)
        for process in processes:
            process.wait(timeout=10)
        load.stop()
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()

    assert len(load.acknowledged) >= 8000
    before_restart = stored_event_ids(data_dir)
    # The next flusher reads what its predecessor left unacknowledged, then the rest of the streams,
    # once a server of the install has seen its data directory (none runs after the kill: it waits).
    flusher = start_flusher(data_dir, redis_log_url, database_url=postgres_url)
    time.sleep(2)
    assert stored_event_ids(data_dir) == before_restart
    server = start_server(data_dir, ports[0], **shared)
    try:
        wait_until_locked(data_dir / "ingest.lock")  # proved, and flushing
        flusher.send_signal(signal.SIGTERM)  # it flushes on start, and once more when it stops
        assert flusher.wait(timeout=60) == 0, flusher_errors(data_dir)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        if flusher.poll() is None:
            flusher.kill()
    assert_stored_exactly_once(data_dir, load.acknowledged)


def wait_until_locked(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            with open(path) as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return
                fcntl.flock(handle, fcntl.LOCK_UN)
        time.sleep(0.05)
    raise AssertionError(f"nobody locked {path}")


def test_aisle_flush_refuses_a_file_log_and_a_second_flusher(tmp_path, redis_log_url):
    data_dir = tmp_path / "data"
    prepare_site(data_dir)
    env = {**os.environ, "AISLE_DATA_DIR": str(data_dir)}
    refused = subprocess.run([AISLE, "flush"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "AISLE_DURABLE_LOG=redis" in refused.stderr
    no_redis = subprocess.run([AISLE, "flush"], env={**env, "AISLE_DURABLE_LOG": "redis"}, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    assert (no_redis.returncode, no_redis.stderr) == (
        2,
        "error: settings: AISLE_DURABLE_LOG=redis needs AISLE_REDIS_URL\n",
    )
    server = start_server(data_dir, free_port(), redis_url=redis_log_url, durable_log="redis")
    first = start_flusher(data_dir, redis_log_url)
    try:
        wait_until_locked(data_dir / "ingest.lock")  # proved by the server, and flushing
        second = start_flusher(data_dir, redis_log_url)
        assert second.wait(timeout=60) == 2
        assert "another Aisle process writes to" in flusher_errors(data_dir)
    finally:
        first.send_signal(signal.SIGTERM)
        server.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 0
        server.wait(timeout=60)


def test_aisle_import_on_a_redis_log_leaves_its_rows_to_the_proved_aisle_flush(tmp_path, redis_log_url):
    """The import only appends: a data directory an import names may be a copy, and only an `aisle
    flush` the servers proved writes the lake (it used to flush its rows into its own directory)."""
    data_dir = tmp_path / "data"
    prepare_site(data_dir)
    with sqlite3.connect(data_dir / "aisle.db") as db:
        [(site_id,)] = db.execute("SELECT id FROM sites").fetchall()
    rows = tmp_path / "orders.jsonl"
    order = {"orderId": "o-1", "visitorId": "v-1", "sessionId": "s-1", "total": "5.00", "timestamp": "2026-11-20T10:00:00Z",
             "items": [{"productItemCode": "P1", "quantity": 1, "price": "5.00"}]}  # fmt: skip
    rows.write_text(json.dumps(order) + "\n" + json.dumps({**order, "orderId": "o-2"}) + "\n")
    env = {**os.environ, "AISLE_DATA_DIR": str(data_dir), "AISLE_REDIS_URL": redis_log_url,
           "AISLE_DURABLE_LOG": "redis"}  # fmt: skip
    command = [AISLE, "import", "--site", str(site_id), str(rows)]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert (json.loads(first.stdout)["stored"], json.loads(first.stdout)["duplicates"]) == (2, 0)
    assert "`aisle flush` moves them to the lake" in first.stderr
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(again.stdout)["duplicates"] == 2  # the order ids are known in Redis
    log = redis.Redis.from_url(redis_log_url)
    assert log.xlen("aisle:log:orders") > 0
    assert not list((data_dir / "lake").glob("orders/*/*/*.parquet"))

    server = start_server(data_dir, free_port(), redis_url=redis_log_url, durable_log="redis")
    flusher = start_flusher(data_dir, redis_log_url)
    try:
        glob = str(data_dir / "lake" / "orders" / "*" / "*" / "*.parquet")
        deadline = time.monotonic() + 30
        while log.xlen("aisle:log:orders") and time.monotonic() < deadline:
            time.sleep(0.1)
        stored = sorted(r[0] for r in duckdb.sql(f"SELECT order_id FROM read_parquet('{glob}')").fetchall())
        assert stored == ["o-1", "o-2"]
    finally:
        for process in (flusher, server):
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
